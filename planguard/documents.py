"""JSON and YAML documents from outside the process, read with limits that make hostile input fail fast.

Everything planguard parses that it did not write itself in this process goes through here: config and
plan files, Claude Code hook payloads and journals, report and experiment input, the session store. Three
kinds of input would otherwise hang or crash a reader:

* **YAML aliases.** Nine anchors of nine aliases each (a 390-byte "billion laughs" file) make one
  document that expands to 9**9 strings; anything that walks it (validation, printing) never returns.
  Aliases are refused outright: no planguard file needs them, and a refusal is clearer than a cap.
* **Deep nesting.** 100,000 ``[`` make ``json.loads`` raise ``RecursionError`` (not ``ValueError``, so
  callers that catch parse errors miss it), and anything recursive downstream fails the same way. A
  document nested deeper than :data:`MAX_DEPTH` is refused.
* **Bytes that are not UTF-8.** Decoding errors name the line and byte offset instead of a traceback.

Every refusal is a :class:`DocumentError` (a ``ValueError``) whose message says what was wrong and what
was expected; ``line`` is set when it is known.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable
from typing import Any

import yaml

__all__ = [
    "MAX_DEPTH",
    "DocumentError",
    "check_depth",
    "decode_utf8",
    "did_you_mean",
    "loads_json",
    "loads_yaml",
    "too_deep",
]

#: Containers nested deeper than this are refused. Planguard's own documents stay under 10 levels; tool
#: arguments inside hook payloads and stored records rarely pass 20.
MAX_DEPTH = 200

_YAML_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # no object construction; C when built


class _ConfigLoader(_YAML_LOADER):  # type: ignore[misc]
    """YAML 1.2 booleans: only ``true``/``false`` are booleans; ``yes``, ``no``, ``on``, ``off`` stay the
    text they are. A config's regex ``result: yes`` then means the word, and a boolean option given as
    ``yes`` still reads as true (the config's boolean fields accept those words)."""


def _yaml12_bool(loader: Any, node: yaml.ScalarNode) -> Any:
    value = loader.construct_scalar(node)
    lowered = value.lower()
    return lowered == "true" if lowered in ("true", "false") else value


_ConfigLoader.add_constructor("tag:yaml.org,2002:bool", _yaml12_bool)


class DocumentError(ValueError):
    """A document that cannot be read; ``str()`` is ``problem`` (without the file name)."""

    def __init__(self, problem: str, line: int | None = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.line = line


def did_you_mean(value: object, options: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the option closest to a mistyped ``value``, or ``""``."""
    if not isinstance(value, str):
        return ""
    close = difflib.get_close_matches(value, list(options), n=1)
    return f" (did you mean {close[0]!r}?)" if close and close[0] != value else ""


def decode_utf8(data: bytes) -> str:
    """``data`` as text (a UTF-8 BOM is dropped); invalid UTF-8 is a :class:`DocumentError` naming where."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise DocumentError(
            f"not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start}); expected UTF-8 text", line
        ) from None


def loads_json(data: str | bytes, *, max_depth: int = MAX_DEPTH) -> Any:
    """``json.loads(data)``, refusing invalid UTF-8 and nesting deeper than ``max_depth``."""
    text = decode_utf8(data) if isinstance(data, bytes) else data
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DocumentError(f"not valid JSON: {exc.msg} (column {exc.colno})", exc.lineno) from None
    except RecursionError:
        raise too_deep(max_depth) from None
    # Only a text with more openers than the limit can be nested past it; most texts skip the walk.
    if text.count("[") + text.count("{") > max_depth and _deeper_than(value, max_depth):
        raise too_deep(max_depth)
    return value


def too_deep(max_depth: int = MAX_DEPTH) -> DocumentError:
    """The refusal of a document nested deeper than ``max_depth`` (for readers with their own parser)."""
    return DocumentError(_too_deep(max_depth))


def loads_yaml(text: str, *, max_depth: int = MAX_DEPTH, yaml12_booleans: bool = False) -> Any:
    """One YAML document, safe-loaded; aliases and nesting deeper than ``max_depth`` are refused.
    ``yaml12_booleans``: only ``true``/``false`` are booleans (configs: ``yes`` is a word)."""
    loader = (_ConfigLoader if yaml12_booleans else _YAML_LOADER)(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_nodes(node, max_depth)
        return loader.construct_document(node)
    except DocumentError:
        raise
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        raise DocumentError(
            f"not valid YAML: {problem}", mark.line + 1 if mark is not None else None
        ) from None
    except (ValueError, TypeError, OverflowError) as exc:  # a scalar its constructor rejects (a bad date)
        raise DocumentError(f"not valid YAML: {exc}") from None
    except RecursionError:  # the pure-Python composer recurses per level (libyaml stops at 1000 itself)
        raise DocumentError(_too_deep(max_depth)) from None
    finally:
        loader.dispose()


def check_depth(value: Any, max_depth: int = MAX_DEPTH) -> Any:
    """``value`` (parsed by some other reader, e.g. TOML), refused when nested deeper than ``max_depth``."""
    if _deeper_than(value, max_depth):
        raise DocumentError(_too_deep(max_depth))
    return value


def _check_nodes(root: yaml.Node, max_depth: int) -> None:
    """Refuse a node graph in which a node appears twice (an alias) or that nests past ``max_depth``."""
    seen: set[int] = set()
    todo: list[tuple[yaml.Node, int]] = [(root, 1)]
    while todo:
        node, depth = todo.pop()
        if id(node) in seen:
            raise DocumentError(
                f"YAML aliases are not allowed (the anchor at line {node.start_mark.line + 1} is used "
                "again); write the value out where it is needed",
                node.start_mark.line + 1,
            )
        seen.add(id(node))
        if isinstance(node, yaml.ScalarNode):
            continue
        if depth > max_depth:
            raise DocumentError(_too_deep(max_depth), node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                todo.append((key, depth + 1))
                todo.append((value, depth + 1))
        else:
            todo.extend((child, depth + 1) for child in node.value)


def _deeper_than(value: Any, max_depth: int) -> bool:
    todo: list[tuple[Any, int]] = [(value, 1)]
    while todo:
        item, depth = todo.pop()
        if depth > max_depth:
            return True
        if isinstance(item, dict):
            todo.extend((v, depth + 1) for v in item.values() if isinstance(v, (dict, list)))
        elif isinstance(item, list):
            todo.extend((v, depth + 1) for v in item if isinstance(v, (dict, list)))
    return False


def _too_deep(max_depth: int) -> str:
    return f"nested deeper than {max_depth} levels; expected a flatter document"
