"""The action classifier: a tool call, as the vocabulary reads it (:mod:`planguard.tools.vocabulary`), to its
canonical :class:`~planguard.actions.types.Action`.

One reader per rule kind (``shell``, ``editor``, ``read``, ``write``, ``edit``, ``search``, …) turns the
call's arguments into an action; a shell line goes through the shell classifier
(:mod:`planguard.actions.shell`). :meth:`ActionClassifier.tool_call` is the call in canonical form
(:class:`~planguard.tools.vocabulary.ToolCall`) that the phase rules read.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
from collections.abc import Callable, Mapping

from ..events import THINK_TOOL, ToolEvent
from ..run import RunModel
from ..shell.lexer import unquote
from ..tools.paths import PathNormaliser, is_scratch_path, is_test_path, looks_like_file
from ..tools.vocabulary import (
    _CALL_KIND_OF,
    _CODE_KEYS,
    _OTHER_CALL,
    _PATCH_HEADER,
    _PATH_KEYS,
    _QUERY_KEYS,
    _SCOPE_KEYS,
    _TEXT_KEYS,
    _UNMAPPED_CALL,
    _WRITE_TEXT_KEYS,
    DEFAULT_VOCABULARY,
    ActionVocabulary,
    MappingRule,
    ToolCall,
    _arg,
    _is_map,
    _parsed_arguments,
    _raw_text,
    _search_operands,
    _shell_line,
    _str_arg,
    patch_files,
)
from .shell import (
    EDITOR_SUBCOMMANDS,
    EDITOR_WRITES,
    SWE_TOOL_PREFIXES,
    ShellClassifier,
    ShellVerdict,
    collapse,
    swe_flag_text,
)
from .types import Action, ActionType, WriteKind

__all__ = ["DEFAULT_CLASSIFIER", "ActionClassifier", "classify_action"]


# ------------------------------------------------------------------------------------ classifier

_CALL_KIND_OF_TYPE = {
    ActionType.FILE_READ: "read",
    ActionType.NAVIGATE: "read",
    ActionType.FILE_WRITE: "write",
    ActionType.SEARCH: "search",
}
_Reader = Callable[["ActionClassifier", MappingRule, ToolEvent, RunModel | None], Action]
_NO_RULE = MappingRule(tool="*", kind="command", structured=False)
_THINK_RULE = MappingRule(tool="", kind="reason", text=_TEXT_KEYS, structured=False)


class ActionClassifier:
    """``classifier(event) -> Action`` for one vocabulary; never raises on odd names or arguments.

    Its one memo is its shell classifier's (a verdict per command line, bounded). Actions are
    immutable, so one record may stand for many calls.
    """

    __slots__ = ("norm", "shell", "vocabulary")

    def __init__(self, vocabulary: ActionVocabulary = DEFAULT_VOCABULARY) -> None:
        self.vocabulary = vocabulary
        self.norm = PathNormaliser(vocabulary.roots)
        self.shell = ShellClassifier(self.norm, swe_agent_commands=vocabulary.swe_agent_commands)

    def __call__(self, event: ToolEvent) -> Action:
        try:
            parsed = _parsed_arguments(event)
            return self._classify(parsed, self.rule_for(parsed.tool))
        except Exception:
            return _unread(event)

    @property
    def call_reader(self) -> ActionClassifier:
        """What reads calls for this classifier: itself (rules reading through it take its
        :class:`ToolCall`; :class:`planguard.phases.base.CallReader`)."""
        return self

    def read(self, event: ToolEvent, run: RunModel | None = None) -> tuple[Action, ToolCall]:
        """The call read once, for the pipeline: its action and its canonical form (what the phase rules
        read), from one parse of its arguments and one rule. ``run`` is the session's run model: whether
        a write changes a source file is then judged by what the run made (a file it created as its own
        script is not the repository's source, whatever its name; PHASES_LIVE §4); without it, from the
        call alone. Never raises."""
        try:
            parsed = _parsed_arguments(event)
            rule = self.rule_for(parsed.tool)
        except Exception:
            return _unread(event), _UNMAPPED_CALL
        try:
            action = self._classify(parsed, rule, run)
        except Exception:
            action = _unread(event)
        try:
            # A created file's text, as the action's reader unquoted it (a SWE-agent ``create``'s
            # ``--file_text``): the call carries the same text rather than a second unquoting of it.
            created = action.new_text if action.write is WriteKind.CREATE and action.structured else None
            call = self._tool_call(parsed, rule, created)
        except Exception:
            call = _UNMAPPED_CALL
        return action, call

    def _classify(self, event: ToolEvent, rule: MappingRule, run: RunModel | None = None) -> Action:
        action = _READERS[rule.kind or "command"](self, rule, event, run)
        scaffold = self.vocabulary.scaffold
        if scaffold is not None and action.scaffold != scaffold:
            action = dataclasses.replace(action, scaffold=scaffold)
        return action

    def rule_for(self, tool: str) -> MappingRule:
        """The rule that reads calls of ``tool``: the empty tool is a reasoning step; an unknown one a
        command (:data:`_NO_RULE`)."""
        if not isinstance(tool, str):
            tool = str(tool)
        if tool == THINK_TOOL:
            return _THINK_RULE
        return self.vocabulary.rule_for(tool) or _NO_RULE

    def tool_call(self, event: ToolEvent) -> ToolCall:
        """The call as the phase rules read it (see :class:`ToolCall`), by this vocabulary's rules. Never
        raises."""
        try:
            parsed = _parsed_arguments(event)
            return self._tool_call(parsed, self.rule_for(parsed.tool))
        except Exception:
            return _UNMAPPED_CALL

    def _tool_call(self, event: ToolEvent, rule: MappingRule, text: str | None = None) -> ToolCall:
        if rule is _NO_RULE:
            return _UNMAPPED_CALL
        kind = rule.kind or "command"
        if rule.validation:
            return ToolCall("test", reader=kind)
        if kind == "shell":
            line = _shell_line(rule, event)
            if line is None:
                return ToolCall("other", reader=kind)
            if self.shell.swe_agent_commands and line[:64].lstrip().startswith(SWE_TOOL_PREFIXES):
                call = self._swe_line_call(line, event, text)  # ``str_replace_editor view f``, …
                if call is not None:
                    return call._replace(command=line, reader=kind)
            return ToolCall("shell", line, reader=kind)
        if kind == "editor":
            args = event.arguments
            if _is_map(args):
                sub, raw = args.get("command"), args.get("path")
                if isinstance(sub, str) and isinstance(raw, str):
                    file_text = args.get("file_text") if sub == "create" else None
                    content = file_text if isinstance(file_text, str) else None
                    return self._editor_call(sub, raw)._replace(reader=kind, content=content)
            action_string = _raw_text(event)  # the SWE-agent action string
            call = self._swe_line_call(action_string, event, text) if action_string else None
            if call is None:
                return ToolCall("other", reader=kind)
            return call._replace(command=action_string, reader=kind)
        if kind == "swe_command":
            if rule.tool in _FILE_SHAPED and _names_a_file(event):
                raw_path = _str_arg(event, ("filePath", "file_path", "path")) or ""
                path = self.norm(raw_path)
                created = (path,) if rule.tool == "create" else ()
                return ToolCall("write", paths=(path,), created=created, operands=(raw_path,), reader=kind)
            verdict = self.shell.swe_command(_swe_command_line(event))
            call = self._verdict_call(verdict, event) if verdict is not None else _OTHER_CALL
            return call._replace(reader=kind)
        if kind == "apply_patch":
            text = _str_arg(event, rule.text or ("input", "patch")) or _raw_text(event) or ""
            touched, added = patch_files(text)
            return ToolCall(
                "write",
                paths=tuple(map(self.norm, touched)),
                created=tuple(map(self.norm, added)),
                operands=tuple(touched),
                reader=kind,
            )
        if kind == "code":
            return ToolCall("code", _str_arg(event, rule.target or _CODE_KEYS), reader=kind)
        if kind == "reason":
            return ToolCall("other", reader=kind, thought=True)
        call_kind = _CALL_KIND_OF.get(kind, "other")
        if call_kind in ("read", "write"):
            raw = _str_arg(event, rule.target or _PATH_KEYS)
            paths = (self.norm(raw),) if raw else ()
            creates = kind == "write" or (
                kind == "edit" and rule.tool == "Edit" and not _arg(event, ("old_string",))
            )
            content = None
            if creates:
                keys = _WRITE_TEXT_KEYS if kind == "write" else ("new_string",)
                content = _str_arg(event, rule.text or keys)
            return ToolCall(
                call_kind,
                paths=paths,
                created=paths if creates else (),
                operands=(raw,) if raw else (),
                reader=kind,
                content=content,
            )
        if call_kind == "search":
            return ToolCall("search", operands=_search_operands(rule, event), reader=kind)
        return ToolCall(call_kind, reader=kind)

    def _swe_line_call(self, line: str, event: ToolEvent, created: str | None = None) -> ToolCall | None:
        """A SWE-agent tool command given as a line, or None. The editor's subcommand and path decide its
        call; a ``create`` carries the file's text (``created`` when the action's reader unquoted it
        already); the 0.x commands go through their verdict."""
        if line[:64].lstrip().startswith("str_replace_editor "):
            parts = line[:4096].split(None, 3)  # a prefix: the file texts after the path can be long
            if len(parts) < 3 or parts[1] not in EDITOR_SUBCOMMANDS:
                return None
            call = self._editor_call(parts[1], unquote(parts[2]))
            if parts[1] == "create" and len(parts) > 3:
                if created is None:
                    created = swe_flag_text(line.split(None, 3)[3], "--file_text")
                call = call._replace(content=created)
            return call
        verdict = self.shell.swe_command(line)
        return self._verdict_call(verdict, event) if verdict is not None else None

    def _editor_call(self, sub: str, raw_path: str) -> ToolCall:
        """``str_replace_editor SUB PATH`` as a call: ``view`` reads, the other subcommands write."""
        if sub not in EDITOR_SUBCOMMANDS:
            return _OTHER_CALL
        path = self.norm(raw_path)
        if sub == "view":
            return ToolCall("read", paths=(path,), operands=(raw_path,))
        return ToolCall(
            "write", paths=(path,), created=(path,) if sub == "create" else (), operands=(raw_path,)
        )

    def _verdict_call(self, v: ShellVerdict, event: ToolEvent) -> ToolCall:
        """A SWE-agent tool command's verdict as a call (``edit``/``insert`` act on the open file)."""
        if v.is_completion:
            return ToolCall("submit")
        kind = _CALL_KIND_OF_TYPE.get(v.type)
        if kind is None:
            return _OTHER_CALL
        if kind == "search":
            return ToolCall("search")
        target = v.path or v.target or self._opened(event)
        paths = (target,) if target else ()
        return ToolCall(kind, paths=paths, created=paths if v.write is WriteKind.CREATE else ())

    # ------------------------------------------------------------------------------- helpers

    def _opened(self, event: ToolEvent) -> str | None:
        """The file SWE-agent 0.x's windowed editor has open, as the loader recorded it: its ``edit``,
        ``goto`` and ``scroll_*`` act on that file."""
        meta = event.metadata
        value = meta.get("open_file") if isinstance(meta, Mapping) else None
        return self.norm(value) if isinstance(value, str) and value and value != "n/a" else None

    def from_verdict(
        self, v: ShellVerdict, rule: MappingRule, event: ToolEvent, via_shell: bool, run: RunModel | None
    ) -> Action:
        target = v.target
        path = v.path
        if target is None and v.structured and v.type in (ActionType.FILE_READ, ActionType.FILE_WRITE):
            target = path = self._opened(event)
        source = v.is_source_write
        if v.type is ActionType.FILE_WRITE:
            if run is not None:
                # An ``edit`` of the open file changes it, though the recording may not name it.
                written = target if target is not None else run.open_file
                if written is not None or v.also_written:  # else ``git apply``: as the line says
                    source = _changes_source(v, written, run) or any(
                        _changes_source(w, w.target, run) for w in v.other_writes
                    )
            elif target is not None and v.intent == "edit" and v.structured:
                source = _is_source(target)
        return Action(
            v.type,
            target,
            event.tool,
            path,
            v.intent,
            v.is_validation,
            source,
            v.is_completion,
            v.write,
            v.program if via_shell and not v.structured else None,
            v.structured,
            v.scaffold or rule.scaffold,
            v.old_text,
            v.new_text,
            None,
            v.also_written,
            source=v.source,
        )


def _is_source(
    target: str | None, run: RunModel | None = None, *, whole: bool = False, content: str | None = None
) -> bool:
    """A write to ``target`` changes a source file of the repository: as the run model judges it (by what
    the run made, the place and the content), else from the call alone (:func:`~planguard.actions.shell.
    _is_source`'s rule: not a test, reproduction or scratch file)."""
    if not target:
        return False
    if run is not None:
        return run.changes_source(target, whole=whole, content=content)
    return not is_test_path(target) and not is_scratch_path(target)


def _changes_source(v: ShellVerdict, target: str | None, run: RunModel) -> bool:
    """Whether a line's write (``v``, to ``target`` and its further files) changes a source file, as the
    run model judges it."""
    return any(
        run.changes_source(
            p,
            whole=v.write is WriteKind.CREATE,
            content=v.new_text,
            removes=v.write is WriteKind.DELETE,
            redirected=v.redirected,
        )
        for p in (target, *v.also_written)
        if p is not None
    )


def _unread(event: ToolEvent) -> Action:
    """The action of a call no reader could read (fail-open)."""
    return Action(ActionType.COMMAND, collapse(str(event.tool) or "?"), str(event.tool))


# ---------------------------------------------------------------------------------------- readers


def _read_shell(c: ActionClassifier, rule: MappingRule, event: ToolEvent, run: RunModel | None) -> Action:
    args = event.arguments
    if _is_map(args) and args.get("is_input") in (True, "true"):
        return Action(ActionType.COMMAND, "input", event.tool, intent="input", scaffold=rule.scaffold)
    cmd = _shell_line(rule, event)  # the line the phase rules read too
    if cmd is None:
        return Action(ActionType.COMMAND, None, event.tool, scaffold=rule.scaffold)
    if cmd.startswith("str_replace_editor ") and c.shell.swe_agent_commands:
        parts = cmd.split(None, 3)
        if len(parts) >= 3 and parts[1] in EDITOR_SUBCOMMANDS:
            sub, rest = parts[1], parts[3] if len(parts) > 3 else ""
            old = swe_flag_text(rest, "--old_str")
            new = swe_flag_text(rest, "--file_text" if sub == "create" else "--new_str")
            return _editor(c, "swe-agent", event.tool, sub, unquote(parts[2]), old, new, run)
    return c.from_verdict(c.shell.classify(cmd), rule, event, True, run)


def _read_editor(c: ActionClassifier, rule: MappingRule, event: ToolEvent, run: RunModel | None) -> Action:
    args = event.arguments
    if not _is_map(args):
        text = _raw_text(event)
        if text and text.startswith("str_replace_editor"):
            return c.from_verdict(c.shell.classify(text), rule, event, False, run)
        return Action(ActionType.COMMAND, event.tool, event.tool, intent=event.tool, scaffold=rule.scaffold)
    sub = args.get("command")
    raw_path = args.get("path")
    if not isinstance(sub, str) or not isinstance(raw_path, str):
        return Action(ActionType.COMMAND, event.tool, event.tool, intent=event.tool, scaffold=rule.scaffold)
    old = args.get("old_str")
    new = args.get("file_text" if sub == "create" else "new_str")
    return _editor(
        c,
        rule.scaffold,
        event.tool,
        sub,
        raw_path,
        old if isinstance(old, str) else None,
        new if isinstance(new, str) else None,
        run,
    )


def _editor(
    c: ActionClassifier,
    scaffold: str | None,
    tool: str,
    sub: str,
    raw_path: str,
    old: str | None,
    new: str | None,
    run: RunModel | None,
) -> Action:
    """A call of the str_replace_editor family (SWE-agent 1.x, OpenHands), from function-call arguments or
    the action string alike."""
    if sub == "view":
        path = c.norm(raw_path)
        kind = ActionType.FILE_READ if looks_like_file(path) else ActionType.NAVIGATE
        return Action(kind, path, tool, path, "view", structured=True, scaffold=scaffold)
    write = EDITOR_WRITES.get(sub)
    if write is None:
        return Action(ActionType.COMMAND, f"{tool} {sub}"[:80], tool, intent=sub, scaffold=scaffold)
    path = c.norm(raw_path)
    return Action(
        ActionType.FILE_WRITE,
        path,
        tool,
        path,
        sub,
        is_source_write=_is_source(path, run, whole=write is WriteKind.CREATE, content=new),
        write=write,
        structured=True,
        scaffold=scaffold,
        old_text=old,
        new_text=new,
    )


def _file_target(c: ActionClassifier, rule: MappingRule, event: ToolEvent) -> str | None:
    raw = _str_arg(event, rule.target or _PATH_KEYS)
    return c.norm(raw) if raw else None


def _tool_write(
    rule: MappingRule,
    event: ToolEvent,
    target: str | None,
    intent: str,
    kind: WriteKind,
    old: str | None,
    new: str | None,
    run: RunModel | None,
) -> Action:
    """The write of a file tool (``Write``, ``Edit``, ``MultiEdit`` and their kin) to ``target``."""
    return Action(
        ActionType.FILE_WRITE,
        target,
        event.tool,
        target,
        intent,
        is_source_write=_is_source(target, run, whole=kind is WriteKind.CREATE, content=new),
        write=kind,
        structured=rule.structured,
        scaffold=rule.scaffold,
        old_text=old,
        new_text=new,
    )


def _rule_action(
    rule: MappingRule,
    event: ToolEvent,
    type: ActionType,
    target: str | None,
    path: str | None,
    intent: str | None,
    text: str | None = None,
    *,
    completion: bool = False,
) -> Action:
    """An action of the call's tool, of the scaffold its rule names. A declaration that the agent is done
    (``finish``, ``submit``) is a structured call whatever the rule says."""
    return Action(
        type,
        target,
        event.tool,
        path,
        intent,
        is_completion=completion,
        structured=completion or rule.structured,
        scaffold=rule.scaffold,
        text=text,
    )


def _read_read(c: ActionClassifier, rule: MappingRule, event: ToolEvent, run: RunModel | None) -> Action:
    target = _file_target(c, rule, event)
    return _rule_action(rule, event, ActionType.FILE_READ, target, target, "read")


def _read_write(c: ActionClassifier, rule: MappingRule, event: ToolEvent, run: RunModel | None) -> Action:
    target = _file_target(c, rule, event)
    text = _str_arg(event, rule.text or _WRITE_TEXT_KEYS)
    return _tool_write(rule, event, target, "write", WriteKind.CREATE, None, text, run)


def _read_edit(c: ActionClassifier, rule: MappingRule, event: ToolEvent, run: RunModel | None) -> Action:
    target = _file_target(c, rule, event)
    old = _str_arg(event, ("old_string", "oldString", "old_str", "old_text", "search"))
    new = _str_arg(
        event, rule.text or ("new_string", "newString", "new_str", "new_text", "replace", "content")
    )
    # Claude Code's Edit with an empty old_string creates the file; edit_file rewrites a line range.
    kind = WriteKind.EDIT if old else (WriteKind.CREATE if rule.tool == "Edit" else WriteKind.EDIT)
    return _tool_write(rule, event, target, "edit", kind, old, new, run)


def _read_multi_edit(
    c: ActionClassifier, rule: MappingRule, event: ToolEvent, run: RunModel | None
) -> Action:
    target = _file_target(c, rule, event)
    edits = _arg(event, ("edits",))
    olds: list[str] = []
    news: list[str] = []
    if isinstance(edits, list):
        for e in edits:
            if isinstance(e, Mapping):
                o, n = e.get("old_string", e.get("oldString")), e.get("new_string", e.get("newString"))
                if isinstance(o, str):
                    olds.append(o)
                if isinstance(n, str):
                    news.append(n)
    return _tool_write(
        rule, event, target, "edit", WriteKind.EDIT, "\n".join(olds) or None, "\n".join(news) or None, run
    )


def _unnamed_query(event: ToolEvent) -> str:
    """What a search tool without a query argument looks for: its name and arguments (``find_user`` by an
    e-mail and ``search_flights`` by route are different searches; the same call twice is the same)."""
    args = event.arguments
    if not isinstance(args, Mapping) or not args:
        return event.tool or ""
    return f"{event.tool} " + json.dumps(args, sort_keys=True, ensure_ascii=False, default=str)


def _search_reader(intent: str) -> _Reader:
    """The reader of a structured search tool (``grep``-like content search or ``find``-like name search)."""

    def read(c: ActionClassifier, rule: MappingRule, event: ToolEvent, run: RunModel | None) -> Action:
        query = _str_arg(event, rule.target or _QUERY_KEYS)
        if query is None:
            query = _raw_text(event) or _unnamed_query(event)
        raw_scope = _str_arg(event, rule.scope or _SCOPE_KEYS)
        scope = c.norm(raw_scope) if raw_scope else None
        return _rule_action(
            rule, event, ActionType.SEARCH, f"{collapse(query, 120)} @ {scope or '.'}", scope, intent
        )

    return read


def _read_navigate(c: ActionClassifier, rule: MappingRule, event: ToolEvent, run: RunModel | None) -> Action:
    target = _file_target(c, rule, event) or "."
    return _rule_action(rule, event, ActionType.NAVIGATE, target, target, "ls")


def _named_reader(type: ActionType, keys: tuple[str, ...], limit: int) -> _Reader:
    """The reader of a tool whose target is the one argument that names what it reaches (a fetch's URL,
    a spawned agent's kind), clipped to ``limit`` characters."""

    def read(c: ActionClassifier, rule: MappingRule, event: ToolEvent, run: RunModel | None) -> Action:
        target = _str_arg(event, rule.target or keys)
        return _rule_action(rule, event, type, collapse(target, limit) if target else None, None, event.tool)

    return read


def _read_plan(c: ActionClassifier, rule: MappingRule, event: ToolEvent, run: RunModel | None) -> Action:
    text = _str_arg(event, rule.text) if rule.text else None
    return _rule_action(rule, event, ActionType.PLAN, "plan", None, event.tool, text)


def _read_reason(c: ActionClassifier, rule: MappingRule, event: ToolEvent, run: RunModel | None) -> Action:
    text = _str_arg(event, rule.text or _TEXT_KEYS)
    if text is None and isinstance(event.arguments, str):
        text = event.arguments or None
    return Action(ActionType.REASON, None, event.tool, structured=False, scaffold=rule.scaffold, text=text)


def _read_finish(c: ActionClassifier, rule: MappingRule, event: ToolEvent, run: RunModel | None) -> Action:
    text = _str_arg(event, rule.text or _TEXT_KEYS)
    return _rule_action(rule, event, ActionType.REASON, "finish", None, "finish", text, completion=True)


def _read_submit(c: ActionClassifier, rule: MappingRule, event: ToolEvent, run: RunModel | None) -> Action:
    return _rule_action(rule, event, ActionType.COMMAND, "submit", None, "submit", completion=True)


def _read_code(c: ActionClassifier, rule: MappingRule, event: ToolEvent, run: RunModel | None) -> Action:
    """A tool that runs a code snippet (OpenHands' IPython cell, a ``python`` tool): ``python -c``."""
    code = _str_arg(event, rule.target or _CODE_KEYS)
    if code is None:
        return _read_command(c, rule, event, run)
    return Action(
        ActionType.COMMAND,
        "python -c",
        str(event.tool),
        None,
        "python -c",
        is_validation=rule.validation or "pytest" in code,
        structured=False,
        scaffold=rule.scaffold,
    )


def _read_command(c: ActionClassifier, rule: MappingRule, event: ToolEvent, run: RunModel | None) -> Action:
    tool = str(event.tool)
    return Action(
        ActionType.COMMAND,
        collapse(tool, 80),
        tool,
        None,
        collapse(tool, 80),
        is_validation=rule.validation,
        is_completion=rule.completion,
        structured=rule.structured,
        scaffold=rule.scaffold,
    )


def _read_apply_patch(
    c: ActionClassifier, rule: MappingRule, event: ToolEvent, run: RunModel | None
) -> Action:
    text = _str_arg(event, rule.text or ("input", "patch")) or _raw_text(event) or ""
    m = _PATCH_HEADER.search(text)
    target = c.norm(m.group(2).strip()) if m else None
    return Action(
        ActionType.FILE_WRITE,
        target,
        event.tool,
        target,
        "apply_patch",
        is_source_write=_is_source(target, run) if target else True,
        write=WriteKind.OTHER,
        structured=True,
        scaffold=rule.scaffold,
    )


def _names_a_file(event: ToolEvent) -> bool:
    """Arguments that address a file by path (OpenCode's ``edit {filePath, oldString, newString}``), not
    SWE-agent 0.x's windowed ``edit``/``create``, which act on the open file or take a ``filename``."""
    args = event.arguments
    return _is_map(args) and any(isinstance(args.get(k), str) for k in ("filePath", "file_path", "path"))


def _swe_command_line(event: ToolEvent) -> str:
    """A SWE-agent tool called as a function, as the command line it stands for: the scaffold's action text,
    else the tool name and its argument values, shell-quoted."""
    if isinstance(event.action, str) and event.action.strip():
        return event.action
    args = event.arguments
    values = list(args.values()) if _is_map(args) else ([args] if args else [])
    return " ".join([str(event.tool), *(shlex.quote(str(v)) for v in values)])


def _read_swe_command(
    c: ActionClassifier, rule: MappingRule, event: ToolEvent, run: RunModel | None
) -> Action:
    if rule.tool in _FILE_SHAPED and _names_a_file(event):
        return _read_edit(c, rule, event, run) if rule.tool != "create" else _read_write(c, rule, event, run)
    verdict = c.shell.swe_command(_swe_command_line(event))
    if verdict is None:
        return Action(
            ActionType.COMMAND,
            collapse(str(event.tool), 80),
            event.tool,
            intent=event.tool,
            structured=True,
            scaffold=rule.scaffold,
        )
    return c.from_verdict(verdict, rule, event, False, run)


#: SWE-agent 0.x tool names that other scaffolds (OpenCode) use for path-addressed file tools.
_FILE_SHAPED = frozenset({"edit", "create", "insert"})

_READERS: dict[str, _Reader] = {
    "swe_command": _read_swe_command,
    "shell": _read_shell,
    "editor": _read_editor,
    "read": _read_read,
    "write": _read_write,
    "edit": _read_edit,
    "multi_edit": _read_multi_edit,
    "search": _search_reader("grep"),
    "find": _search_reader("find"),
    "navigate": _read_navigate,
    "fetch": _named_reader(ActionType.FETCH, ("url", "query", "uri"), 200),
    "plan": _read_plan,
    "spawn": _named_reader(ActionType.AGENT_SPAWN, ("subagent_type", "agent", "name", "description"), 80),
    "reason": _read_reason,
    "finish": _read_finish,
    "submit": _read_submit,
    "command": _read_command,
    "apply_patch": _read_apply_patch,
    "code": _read_code,
}

#: The classifier behind :func:`classify_action`: every built-in scaffold at once, default roots.
DEFAULT_CLASSIFIER = ActionClassifier(DEFAULT_VOCABULARY)


def classify_action(event: ToolEvent) -> Action:
    """Canonical action of a tool call under the default (all-scaffold) vocabulary. Never raises."""
    return DEFAULT_CLASSIFIER(event)
