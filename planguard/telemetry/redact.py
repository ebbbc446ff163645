"""Secret redaction for captured content: API keys, tokens, passwords, private keys, URL credentials.

Runs off the agent's path (on the telemetry/store worker threads), so it may afford a handful of regular
expressions over text that has already been truncated to the capture limit.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["REDACTED", "Redactor", "may_hold_secret", "redact", "redact_value", "render_content", "truncate"]

REDACTED = "[REDACTED]"

_SECRET_KEY = (
    r"[A-Za-z0-9_.-]*(?:passw(?:or)?d|passphrase|secret|token|api[_-]?key|apikey|access[_-]?key|"
    r"private[_-]?key|client[_-]?secret|credentials?|auth(?:orization)?|session[_-]?id|cookie)[A-Za-z0-9_.-]*"
)

# Order matters: whole-block and prefixed tokens first, generic key=value last.
_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # PEM private keys, whole block (also a truncated block with no END line).
    (
        re.compile(r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END[A-Z0-9 ]*PRIVATE KEY-----|\Z)", re.S),
        REDACTED,
    ),
    # Credentials in URLs: scheme://user:password@host
    (re.compile(r"\b([a-z][a-z0-9+.-]*://[^/\s:@]+:)[^@\s/]+@", re.I), r"\1" + REDACTED + "@"),
    # HTTP authorization headers and bearer tokens.
    (re.compile(r"\b(Bearer|Basic|Token)\s+[A-Za-z0-9._~+/=-]{8,}", re.I), r"\1 " + REDACTED),
    # Well-known token shapes.
    (re.compile(r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{16,}"), REDACTED),  # OpenAI / Anthropic
    (re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})"), REDACTED),  # GitHub
    (re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}"), REDACTED),  # GitLab
    (re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"), REDACTED),  # Slack
    (re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), REDACTED),  # AWS access key id
    (re.compile(r"\bAIza[0-9A-Za-z_-]{35}"), REDACTED),  # Google API key
    (re.compile(r"\bhf_[A-Za-z0-9]{30,}"), REDACTED),  # Hugging Face
    (re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"), REDACTED),  # JWT
    # key=value / key: value / "key": "value" where the key names a secret.
    (
        re.compile(r"(?i)(\b" + _SECRET_KEY + r"[\"']?\s*[=:]\s*[\"']?)(?!\[REDACTED\])([^\s\"',;}&]+)"),
        r"\1" + REDACTED,
    ),
    # CLI flags: --password hunter2, --token=abc
    (
        re.compile(r"(?i)(--?" + _SECRET_KEY + r"(?:=|\s+))(?!\[REDACTED\])([^\s\"'-][^\s\"']*)"),
        r"\1" + REDACTED,
    ),
)


# Each built-in pattern needs one of its needles in the folded text (see _fold) to match, and substitutions
# never create a needle (what they insert, ``[REDACTED]``, holds none and cannot join text into one), so a
# pattern whose needles are all absent from the original text is skipped: its ``sub`` would change nothing.
# Most tool output holds none — a dozen regex passes cost ~20 µs on a short string and milliseconds on 4 KB
# of output, these checks ~1 µs and ~0.1 ms. Keep in step with _PATTERNS (tests/test_telemetry_redact.py
# checks every pattern's matches against its needles).
_KEY_NEEDLES = ("passw", "passphrase", "secret", "token", "key", "credential", "auth", "session", "cookie")
_NEEDLES_OF: tuple[tuple[str, ...], ...] = (
    ("-----begin",),  # PEM block
    ("://",),  # URL credentials
    ("bearer", "basic", "token"),  # authorization headers
    ("sk-",),
    ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ("glpat-",),
    ("xox",),
    ("akia", "asia"),
    ("aiza",),
    ("hf_",),
    ("eyj",),
    _KEY_NEEDLES,  # key=value: also gated by _KEY_ASSIGN
    _KEY_NEEDLES,  # CLI flags
)
_NEEDLES = tuple(dict.fromkeys(n for needles in _NEEDLES_OF for n in needles))
_SHORTEST_NEEDLE = min(map(len, _NEEDLES))
_KEY_VALUE = len(_NEEDLES_OF) - 2  # index of the key=value pattern
# The key=value pattern is the costly one (its leading ``[A-Za-z0-9_.-]*`` is retried at every word) and
# its key names are common words in code ("key", "token", "session"). It matches only where such a name is
# followed by ``=`` or ``:``; this search for that, over the folded text, is case-sensitive (so the regex
# engine can skip to the names' first letters) and about 40× cheaper. Every character the pattern can
# match in that stretch folds to exactly one character this class matches (checked over all of Unicode in
# tests/test_telemetry_redact.py), so no match is skipped.
_KEY_ASSIGN = re.compile(
    r"(?:passw|passphrase|secret|token|key|credential|auth|session|cookie)[a-z0-9_.\-]*[\"']?\s*[=:]"
)


def _fold(text: str) -> str:
    """``text`` case-folded the way the IGNORECASE patterns compare letters: every character they take for
    an ASCII letter becomes that letter (dotless ı, and İ, which casefold leaves as i + combining dot)."""
    folded = text.casefold()
    if "\u0131" in folded:
        folded = folded.replace("\u0131", "i")
    if "\u0307" in folded:
        folded = folded.replace("i\u0307", "i")
    return folded


def may_hold_secret(text: str) -> bool:
    """False when no built-in pattern can match ``text`` (a cheap substring pre-check)."""
    return _has_needle(_fold(text))


def _has_needle(folded: str) -> bool:
    for needle in _NEEDLES:  # noqa: SIM110 (a plain loop: any() over a generator costs a third more)
        if needle in folded:
            return True
    return False


#: Short texts whose redaction a ``Redactor`` remembers (argument values, paths, commands, short results:
#: an agent repeats them — the same file viewed again, the same test command — and the needle checks cost
#: ~6k instructions per text), and how many at most (the table is cleared when full).
_MEMO_MAX_CHARS = 256
_MEMO_SIZE = 4096


class Redactor:
    """Applies the built-in patterns plus any extra ``(regex, replacement)`` pairs."""

    __slots__ = ("_extra", "_memo", "patterns")

    def __init__(self, extra: Iterable[tuple[str | re.Pattern[str], str]] = ()) -> None:
        compiled = [(re.compile(p) if isinstance(p, str) else p, r) for p, r in extra]
        self.patterns: tuple[tuple[re.Pattern[str], str], ...] = (*_PATTERNS, *compiled)
        self._extra: tuple[tuple[re.Pattern[str], str], ...] = tuple(compiled)
        # Shared by the worker threads that redact: single dict operations are atomic, and a clear racing a
        # store only forgets answers.
        self._memo: dict[str, str] = {}

    def __call__(self, text: str) -> str:
        memo = self._memo
        known = memo.get(text)
        if known is not None:
            return known
        redacted = self._redact(text)
        if len(text) <= _MEMO_MAX_CHARS and type(text) is str:
            if len(memo) >= _MEMO_SIZE:
                memo.clear()
            memo[text] = redacted
        return redacted

    def _redact(self, text: str) -> str:
        # The built-ins run first, in order, each only when the original text holds one of its needles
        # (see _NEEDLES_OF); the extra patterns always run. Most text holds no needle at all (text shorter
        # than every needle cannot): one flat pass over them settles that at a third of the cost of
        # asking pattern by pattern.
        folded = _fold(text)
        if len(folded) >= _SHORTEST_NEEDLE and _has_needle(folded):
            for i, (pattern, repl) in enumerate(_PATTERNS):
                for needle in _NEEDLES_OF[i]:
                    if needle in folded:
                        if i != _KEY_VALUE or _KEY_ASSIGN.search(folded) is not None:
                            text = pattern.sub(repl, text)
                        break
        for pattern, repl in self._extra:
            text = pattern.sub(repl, text)
        return text


_DEFAULT = Redactor()
_SECRET_KEY_RE = re.compile(r"(?i)" + _SECRET_KEY)


def redact(text: str) -> str:
    """``text`` with every recognised secret replaced by ``[REDACTED]``."""
    return _DEFAULT(text)


def truncate(text: str, limit: int) -> str:
    if limit <= 0 or len(text) <= limit:
        return text
    return text[:limit] + f"…[{len(text) - limit} chars truncated]"


# Argument names come from a small vocabulary (command, path, ...) and the key pattern is the costliest
# regex here (~15k instructions a call): answers are remembered, in a bounded table.
_KEY_VERDICTS: dict[str, bool] = {}
_MAX_KEY_VERDICTS = 4096


def _is_secret_key(key: str) -> bool:
    verdict = _KEY_VERDICTS.get(key)
    if verdict is None:
        verdict = _SECRET_KEY_RE.fullmatch(key) is not None
        if len(key) <= 128:  # (only name-sized keys: the table stays small)
            if len(_KEY_VERDICTS) >= _MAX_KEY_VERDICTS:
                _KEY_VERDICTS.clear()
            _KEY_VERDICTS[key] = verdict
    return verdict


def redact_value(value: Any, redactor: Redactor | None = None, *, _depth: int = 0) -> Any:
    """A copy of a JSON-like value with secrets redacted: strings by pattern, and whole values whose key
    names a secret (``{"password": "hunter2"}`` → ``{"password": "[REDACTED]"}``)."""
    r = redactor or _DEFAULT
    if isinstance(value, str):
        return r(value)
    if _depth > 32:
        return REDACTED  # deeper than any real tool argument; refuse rather than recurse forever
    if type(value) is dict or isinstance(value, Mapping):  # (a dict: no ABC check)
        out: dict[str, Any] = {}
        # Tool arguments are redacted on every call: the lookups of _is_secret_key and Redactor.__call__
        # are inlined for their common answers (a known key name, a remembered text).
        verdicts, memo = _KEY_VERDICTS, r._memo
        for k, v in value.items():
            key = k if type(k) is str else str(k)
            secret = verdicts.get(key)
            if secret is None:
                secret = _is_secret_key(key)
            if secret and isinstance(v, (str, int, float)) and v != "":
                out[key] = REDACTED
            elif isinstance(v, str):  # most values: what the call below would do, without the call
                known = memo.get(v)
                out[key] = known if known is not None else r(v)
            else:
                out[key] = redact_value(v, r, _depth=_depth + 1)
        return out
    if isinstance(value, (list, tuple)):
        return [redact_value(v, r, _depth=_depth + 1) for v in value]
    return value


def render_content(value: Any, limit: int, redactor: Redactor | None = None) -> str:
    """Tool arguments or a result as safe text: JSON for structures, secrets redacted, cut to ``limit``.

    Redaction runs on a window a little past ``limit`` before the cut, so a secret straddling the limit
    is still recognised whole and never leaks as a prefix.
    """
    if value is None:
        return ""
    r = redactor or _DEFAULT
    if isinstance(value, str):
        window = value if limit <= 0 else value[: limit + _SLACK]
        cleaned = r(window)
        if len(value) > len(window):
            cleaned += "…"  # the original went on past the window; make the cut visible
        return truncate(cleaned, limit)
    try:
        text = json.dumps(redact_value(value, r), ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = r(repr(value))
    return truncate(text, limit)


#: Characters past the limit that redaction looks at (longer than any secret pattern's match).
_SLACK = 4096
