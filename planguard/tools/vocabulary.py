"""Action vocabularies: how each scaffold's tool calls map onto canonical actions, and what tools the
scaffold exposes.

A vocabulary is an ordered list of :class:`MappingRule` (tool-name pattern → how to read the call)
plus the scaffolds' :class:`ToolSurface`. The built-in rules (:data:`BUILTIN_RULES`) cover SWE-agent 1.x
and 0.x (its tool commands also as shell lines), Claude Code, OpenHands, mini-swe-agent, Codex, OpenCode
and Gemini CLI; any other tool falls through to name heuristics (``read_file`` → read, ``searchCode`` →
search, …). User rules go first and win. Generic names (``read_file``, ``replace``, …) identify no
scaffold (several frameworks use them); distinctive ones do.

**Tool surfaces** (:data:`SURFACES`). Two detectors only make sense where the scaffold offers an
alternative: shell-over-tool needs structured read/search tools, structured-plan-absence needs a plan/TODO
tool. Which scaffold a run uses is known from configuration or learned from the run itself: each rule
names the scaffold its tool identifies (``Read`` → Claude Code, ``execute_bash`` → OpenHands,
``str_replace_editor`` → SWE-agent, the 0.x commands → SWE-agent 0.x), and the detectors take the union
of the surfaces seen so far.

A call read by these rules is a :class:`ToolCall` (what the action classifier and every phase rule set
know of it); the argument readers (``_arg``, ``_str_arg``, ``_raw_text``) are the ones every reader uses.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, TypeGuard

from ..documents import loads_json
from ..events import ToolEvent
from .paths import DEFAULT_ROOTS

if TYPE_CHECKING:  # the rules name action types; the action layer reads calls through these rules
    from ..actions.types import ActionType

__all__ = [
    "BUILTIN_RULES",
    "DEFAULT_VOCABULARY",
    "KINDS",
    "SURFACES",
    "ActionVocabulary",
    "MappingRule",
    "ToolCall",
    "ToolSurface",
    "name_words",
    "patch_files",
]


@dataclass(frozen=True, slots=True)
class ToolSurface:
    """What a scaffold exposes besides a shell."""

    structured_read: bool = False
    structured_search: bool = False
    plan_tool: bool = False

    def __or__(self, other: ToolSurface) -> ToolSurface:
        return ToolSurface(
            self.structured_read or other.structured_read,
            self.structured_search or other.structured_search,
            self.plan_tool or other.plan_tool,
        )


#: Each scaffold's (structured read, structured search, plan tool), and the tools that offer them.
SURFACES: dict[str, ToolSurface] = {
    "claude-code": ToolSurface(True, True, True),  # Read, Grep, Glob, LS, TodoWrite
    "openhands": ToolSurface(True, False, False),  # str_replace_editor view (task_tracker: learned from use)
    "swe-agent": ToolSurface(True, False, False),  # str_replace_editor view
    "swe-agent-0.x": ToolSurface(True, True, False),  # open, find_file, search_dir/search_file
    "mini-swe-agent": ToolSurface(False, False, False),  # bash only
    "codex": ToolSurface(False, False, True),  # shell, apply_patch, update_plan
    "opencode": ToolSurface(True, True, True),  # read, grep, glob, list, todowrite
    "gemini-cli": ToolSurface(True, True, True),  # read_file, glob, search_file_content, write_todos
    "generic": ToolSurface(False, False, False),
}


# --------------------------------------------------------------------------------------- rules

#: How a rule reads a call. ``type`` rules without a ``kind`` use the kind named after the type.
KINDS = (
    "swe_command", "shell", "editor", "read", "write", "edit", "multi_edit", "search", "find", "navigate",
    "fetch", "plan", "spawn", "reason", "finish", "submit", "command", "apply_patch", "code",
)  # fmt: skip

#: The reader kind of each action type (keyed by the type's name: ``ActionType`` is a ``StrEnum``).
_KIND_OF_TYPE = {
    "FILE_READ": "read",
    "FILE_WRITE": "write",
    "SEARCH": "search",
    "COMMAND": "command",
    "PLAN": "plan",
    "NAVIGATE": "navigate",
    "FETCH": "fetch",
    "AGENT_SPAWN": "spawn",
    "REASON": "reason",
}

_PATH_KEYS = (
    "file_path",
    "filePath",
    "path",
    "filename",
    "file",
    "notebook_path",
    "target_file",
    "filepath",
    "absolute_path",  # Gemini CLI's read_file (older releases)
    "uri",
)
_COMMAND_KEYS = ("command", "cmd", "script", "commands")
_QUERY_KEYS = ("pattern", "query", "regex", "q", "search", "term", "search_term")
_TEXT_KEYS = ("thought", "text", "content", "message", "reasoning", "final_thought", "result", "summary")


@dataclass(frozen=True, slots=True)
class MappingRule:
    """Tool-name pattern → how to read the call.

    ``tool`` is an fnmatch glob on the tool name (case-sensitive), a regular expression when it starts
    with ``re:``, or ``words:a|b_c`` for names holding one of those whole words or word runs (any case,
    any of snake_case, camelCase, dotted or dashed: ``words:read`` matches ``read_file``, ``readFile`` and
    ``file.read``, not ``thread`` or ``frobnicate``). ``kind`` picks the reader (see ``KINDS``; default:
    the one named after ``type``).
    ``target`` lists argument keys tried in order for the target (a path, query, URL, …), ``text`` the
    keys holding free text (reasoning, final message), ``scope`` the keys of a search's path.
    ``validation``/``completion`` mark the call as a test run / the agent's declaration that it is done.
    ``scaffold`` names the scaffold the tool identifies (for tool surfaces).
    """

    tool: str
    type: ActionType | None = None
    kind: str | None = None
    target: tuple[str, ...] = ()
    text: tuple[str, ...] = ()
    scope: tuple[str, ...] = ()
    validation: bool = False
    completion: bool = False
    scaffold: str | None = None
    structured: bool = True

    def __post_init__(self) -> None:
        kind = self.kind or (_KIND_OF_TYPE[self.type] if self.type is not None else None)
        if kind is None:
            raise ValueError(f"mapping rule for {self.tool!r}: give 'type' or 'kind'")
        if kind not in KINDS:
            raise ValueError(
                f"mapping rule for {self.tool!r}: kind {kind!r} is not one of {', '.join(KINDS)}"
            )
        object.__setattr__(self, "kind", kind)
        if self.tool.startswith("re:"):
            re.compile(self.tool[3:])

    def matches(self, tool: str) -> bool:
        if self.tool.startswith("re:"):
            return re.fullmatch(self.tool[3:], tool) is not None
        if self.tool.startswith(_WORDS):
            words = name_words(tool)
            return any(f"_{w}_" in words for w in self.tool[len(_WORDS) :].split("|"))
        return fnmatch.fnmatchcase(tool, self.tool)


_WORDS = "words:"
_NAME_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def name_words(tool: str) -> str:
    """The words of a tool name, lower-cased, each between underscores: ``readFile``, ``read_file``,
    ``file.read`` and ``READ-FILE`` give ``_read_file_``/``_file_read_`` (what ``words:`` rules match)."""
    return "_" + "_".join(_NAME_WORD.findall(tool)).lower() + "_"


_SHELL_NAMES = ("run_command", "execute", "execute_command", "run_shell", "run_bash", "shell_exec", "exec")
_CODE_KEYS = ("code", "script", "source", "input", "command")


def _r(tool: str, kind: str, scaffold: str | None = None, **kw: Any) -> MappingRule:
    return MappingRule(tool=tool, kind=kind, scaffold=scaffold, **kw)


_CC = "claude-code"
_OH = "openhands"
_GC = "gemini-cli"

BUILTIN_RULES: tuple[MappingRule, ...] = (
    # --- shells
    _r("bash", "shell", structured=False),
    _r("Bash", "shell", _CC, structured=False),
    _r("execute_bash", "shell", _OH, structured=False),
    _r("shell", "shell", "codex", structured=False),
    _r("local_shell", "shell", "codex", structured=False),
    _r("run_shell_command", "shell", structured=False),
    _r("terminal", "shell", structured=False),
    _r("run", "shell", structured=False),  # OpenHands V0 names CmdRunAction "run"
    # --- SWE-agent 1.x / OpenHands editor
    _r("str_replace_editor", "editor", "swe-agent"),
    _r("str_replace_based_edit_tool", "editor"),
    _r("file_editor", "editor", _OH),
    _r("submit", "submit"),
    # --- SWE-agent tool bundles called as functions (0.x windowed/search tools, 1.x demos)
    *(
        _r(name, "swe_command", "swe-agent-0.x")
        for name in (
            "find_file",
            "search_dir",
            "search_file",
            "open",
            "goto",
            "scroll_up",
            "scroll_down",
            "edit",
            "create",
            "insert",
            "filemap",
        )
    ),
    # --- Claude Code
    _r("Read", "read", _CC, target=("file_path",)),
    _r("NotebookRead", "read", _CC, target=("notebook_path",)),
    _r("Write", "write", _CC, target=("file_path",), text=("content",)),
    _r("Edit", "edit", _CC, target=("file_path",)),
    _r("MultiEdit", "multi_edit", _CC, target=("file_path",)),
    _r("NotebookEdit", "edit", _CC, target=("notebook_path",), text=("new_source",)),
    _r("Grep", "search", _CC, target=("pattern",), scope=("path", "glob", "type")),
    _r("Glob", "find", _CC, target=("pattern",), scope=("path",)),
    _r("LS", "navigate", _CC, target=("path",)),
    _r("Task", "spawn", _CC, target=("subagent_type", "description")),
    _r("Agent", "spawn", _CC, target=("subagent_type", "description")),
    _r("TodoWrite", "plan", _CC),
    _r("TodoRead", "plan", _CC),
    # Claude Code's task list (interactive mode; -p has TodoWrite): one task per call (planguard.tools.todo).
    _r("TaskCreate", "plan", _CC),
    _r("TaskUpdate", "plan", _CC),
    _r("TaskList", "plan", _CC),
    _r("ExitPlanMode", "plan", _CC, text=("plan",)),
    _r("EnterPlanMode", "plan", _CC),
    _r("WebFetch", "fetch", _CC, target=("url",)),
    _r("WebSearch", "fetch", _CC, target=("query",)),
    _r("AskUserQuestion", "reason", _CC, text=("question", "questions")),
    _r("BashOutput", "command", _CC, target=("bash_id",)),
    _r("TaskOutput", "command", _CC, target=("task_id",)),
    _r("TaskStop", "command", _CC),
    _r("Skill", "command", _CC, target=("skill",)),
    _r("KillShell", "command", _CC),
    _r("KillBash", "command", _CC),
    _r("SlashCommand", "command", _CC, target=("command",)),
    # --- OpenHands
    _r("think", "reason", _OH, text=("thought",)),
    _r("finish", "finish", _OH, text=("message", "final_thought", "outputs")),
    _r("execute_ipython_cell", "code", _OH, target=("code",)),
    _r("edit_file", "edit", _OH, target=("path",), text=("content",)),
    _r("browser", "fetch", _OH, target=("url", "code")),
    _r("web_read", "fetch", _OH, target=("url",)),
    _r("task_tracker", "plan", _OH),
    _r("delegate", "spawn", _OH, target=("agent",)),
    # --- OpenHands action classes, as V0 event streams and the V1 SDK name them
    *(
        _r(name, "shell", _OH, structured=False)
        for name in ("CmdRunAction", "ExecuteBashAction", "TerminalAction")
    ),
    *(_r(name, "editor", _OH) for name in ("FileEditorAction", "StrReplaceEditorAction")),
    _r("FileReadAction", "read", _OH, target=("path",)),
    _r("FileEditAction", "edit", _OH, target=("path",), text=("content", "new_str")),
    _r("FileWriteAction", "write", _OH, target=("path",), text=("content",)),
    _r("IPythonRunCellAction", "code", _OH, target=("code",)),
    *(_r(name, "finish", _OH) for name in ("AgentFinishAction", "FinishAction")),
    *(_r(name, "reason", _OH, text=("thought",)) for name in ("AgentThinkAction", "ThinkAction")),
    _r("TaskTrackerAction", "plan", _OH),
    *(_r(name, "fetch", _OH, target=("url",)) for name in ("BrowseURLAction", "BrowseInteractiveAction")),
    # --- Codex
    _r("apply_patch", "apply_patch", "codex", text=("input", "patch")),
    _r("update_plan", "plan", "codex", text=("explanation",)),
    # --- OpenCode (lower-case names, camelCase arguments; ``edit`` is read by argument shape, see
    # ``_read_swe_command``, since SWE-agent 0.x has an ``edit`` of its own)
    _r("read", "read", "opencode"),
    _r("write", "write", "opencode"),
    _r("multiedit", "multi_edit", "opencode"),
    _r("patch", "apply_patch", "opencode", text=("patchText", "patch", "input")),
    _r("grep", "search", "opencode", scope=("path", "include")),
    _r("glob", "find", "opencode", scope=("path", "dir_path")),  # also Gemini CLI's glob
    _r("list", "navigate", "opencode"),
    _r("todowrite", "plan", "opencode"),
    _r("todoread", "plan", "opencode"),
    _r("webfetch", "fetch", "opencode"),
    _r("task", "spawn", "opencode"),
    # --- Gemini CLI (packages/core/src/tools: the names its function declarations use; its
    # read_file, write_file and glob are read by the common-name and OpenCode rules)
    _r("read_many_files", "read", target=("include", "paths")),
    _r("replace", "edit", target=("file_path",)),
    _r("search_file_content", "search", _GC, target=("pattern",), scope=("dir_path", "path", "include")),
    _r("grep_search", "search", _GC, target=("pattern",), scope=("dir_path", "path", "include")),
    _r("list_directory", "navigate", target=("dir_path", "path")),
    _r("google_web_search", "fetch", _GC, target=("query",)),
    _r("web_fetch", "fetch", target=("prompt", "url")),
    _r("write_todos", "plan", _GC),
    # --- common tool names of other frameworks (LangChain toolkits, MCP servers, custom agents)
    _r("exec_command", "shell", "codex", structured=False),
    *(_r(name, "shell", structured=False) for name in _SHELL_NAMES),
    *(_r(name, "read") for name in ("read_file", "view_file", "open_file", "cat_file", "get_file")),
    *(_r(name, "write") for name in ("write_file", "create_file", "write_to_file", "save_file")),
    *(_r(name, "edit") for name in ("replace_in_file", "str_replace", "apply_edit", "modify_file")),
    *(_r(name, "search") for name in ("search", "search_code", "search_files", "code_search")),
    *(_r(name, "find") for name in ("find_files", "file_search", "find_file_by_name")),
    *(_r(name, "navigate") for name in ("list_dir", "list_files", "ls", "tree")),
    *(_r(name, "command", validation=True) for name in ("run_tests", "run_test", "test", "pytest")),
    *(
        _r(name, "code", target=_CODE_KEYS)
        for name in ("python", "run_python", "execute_python", "python_repl")
    ),
    # --- name heuristics for any other framework's tools (last: specific rules win), on whole words of
    # the name: ``read_file``, ``file.read`` and ``readFile`` read; ``frobnicate`` does not ``cat``
    _r("words:think|thinking|thought|reason|reasoning|reflect|reflection", "reason", structured=True),
    _r("words:todo|todos|plan|plans|planning|task_track|task_tracker|tasktracker", "plan"),
    _r("words:spawn|delegate|subagent|sub_agent|handoff", "spawn"),
    _r("words:web|http|https|fetch|browse|browser|url|download|scrape", "fetch", target=("url", "query")),
    _r("words:grep|search|find|glob|lookup|look_up|locate|query", "search"),
    _r("words:write|edit|replace|patch|create_file|insert|append|modify|update_file|save", "write"),
    _r("words:read|view|open|cat|show|get_file|load_file", "read"),
    _r("words:list_dir|listdir|ls|tree|list_files|directory|chdir|navigate", "navigate"),
    _r("words:bash|shell|exec|execute|run_command|terminal|command|cmd", "shell", structured=False),
    _r("words:finish|submit|complete|done|final_answer", "finish"),
)


class ActionVocabulary:
    """Rules (first match wins) + path roots + whether SWE-agent's tool commands are recognised in shells."""

    __slots__ = ("_exact", "_patterns", "name", "roots", "rules", "scaffold", "swe_agent_commands")

    def __init__(
        self,
        rules: Iterable[MappingRule] = BUILTIN_RULES,
        *,
        name: str = "default",
        roots: Sequence[str] = DEFAULT_ROOTS,
        swe_agent_commands: bool = True,
        scaffold: str | None = None,
    ) -> None:
        self.name = name
        self.rules: tuple[MappingRule, ...] = tuple(rules)
        self.roots: tuple[str, ...] = tuple(roots)
        self.swe_agent_commands = swe_agent_commands
        # The scaffold every call of this vocabulary comes from, when known (overrides per-tool hints).
        self.scaffold = scaffold
        # First match wins. Most rules name one tool exactly (no glob character, no ``re:``/``words:``):
        # those are found by name, and only the patterns listed before that rule are tried (the built-in
        # ones all come after). A new tool name costs a lookup, not a glob match against every rule.
        self._exact: dict[str, int] = {}  # tool name -> position of its first rule
        self._patterns: list[tuple[int, MappingRule]] = []
        for k, rule in enumerate(self.rules):
            if rule.tool.startswith(("re:", _WORDS)) or any(ch in rule.tool for ch in "*?["):
                self._patterns.append((k, rule))
            else:
                self._exact.setdefault(rule.tool, k)

    def extend(self, rules: Iterable[MappingRule]) -> ActionVocabulary:
        """A vocabulary with ``rules`` tried before these ones."""
        return ActionVocabulary(
            (*rules, *self.rules),
            name=self.name,
            roots=self.roots,
            swe_agent_commands=self.swe_agent_commands,
            scaffold=self.scaffold,
        )

    def rule_for(self, tool: str) -> MappingRule | None:
        """The first rule that matches ``tool``, or None."""
        at = self._exact.get(tool)
        for k, rule in self._patterns:
            if at is not None and k > at:
                break
            if rule.matches(tool):
                return rule
        return self.rules[at] if at is not None else None

    @property
    def surface(self) -> ToolSurface | None:
        return SURFACES.get(self.scaffold) if self.scaffold else None


DEFAULT_VOCABULARY = ActionVocabulary()

# ------------------------------------------------------------------------------ the call, for phases

#: The call kind of the reader kinds that name it outright (``_tool_call`` reads the others; unlisted: other).
_CALL_KIND_OF = {
    "read": "read",
    "navigate": "read",
    "write": "write",
    "edit": "write",
    "multi_edit": "write",
    "search": "search",
    "find": "search",
    "submit": "submit",
    "finish": "submit",
    "plan": "plan",
}


class ToolCall(NamedTuple):
    """A tool call in canonical form: what both the canonical-action reading and every phase rule set
    (live and the paper's) know of it, from the same mapping rule. Made once per call.

    ``kind`` is what the phase rules see (PHASES_LIVE.md §4): ``shell``, ``read`` (a file read or listing),
    ``write``, ``search``, ``test``, ``code`` (a snippet run), ``submit``, ``plan`` or ``other``.
    ``command`` is the shell line of a call through a shell tool (a Codex argv array joined; also set when
    that line is a SWE-agent tool command read as ``read``/``write``), or the code of a ``code`` call;
    ``paths`` the files a ``read``/``write`` call addresses (normalised like action targets), ``created``
    those of them the call creates as new files, ``content`` the text it creates them with. ``operands``
    are the call's target arguments as given (not normalised): a read's or write's path, a search's
    scope, pattern and glob. ``reader`` is the
    mapping rule's kind (``shell``, ``editor``, ``navigate``, ``find``, …, see ``KINDS``); ``thought``
    marks a reasoning step that calls nothing (``think``, the empty tool). ``mapped`` is False when no
    rule knows the tool (the name heuristics count as knowing it).
    """

    kind: str
    command: str | None = None
    paths: tuple[str, ...] = ()
    created: tuple[str, ...] = ()
    mapped: bool = True
    operands: tuple[str, ...] = ()
    reader: str = ""
    thought: bool = False
    #: The whole text a ``write`` call puts in the file it creates (``Write`` content, an editor's
    #: ``create`` text), when the call carries it: what the run model judges a created file by.
    content: str | None = None


_UNMAPPED_CALL = ToolCall("other", mapped=False)
_OTHER_CALL = ToolCall("other")
_SHELLS = frozenset({"bash", "sh", "zsh", "dash"})
_DIFF_FILE = re.compile(r"^\+\+\+ (?:b/)?(\S+)", re.MULTILINE)


def _argv_line(argv: Sequence[str]) -> str:
    """A Codex argv array as one shell line: ``["bash", "-lc", script]`` is the script itself."""
    if len(argv) >= 3 and argv[0].rsplit("/", 1)[-1] in _SHELLS and argv[1] in ("-c", "-lc"):
        return argv[2]
    return shlex.join(argv)


def _shell_line(rule: MappingRule, event: ToolEvent) -> str | None:
    args = event.arguments
    if _is_map(args) and args.get("is_input") in (True, "true"):
        return None  # input typed into a running process, not a command
    value = _arg(event, rule.target or _COMMAND_KEYS)
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)) and value and all(isinstance(x, str) for x in value):
        return _argv_line(value)
    return _raw_text(event)


def _search_operands(rule: MappingRule, event: ToolEvent) -> tuple[str, ...]:
    """A search's scope, pattern and glob as given (``Grep {pattern, path, glob}``), for rules that read
    them as the words of a ``grep``/``find``/``ls``."""
    scope = _str_arg(event, rule.scope or _SCOPE_KEYS)
    query = _str_arg(event, rule.target or _QUERY_KEYS)
    glob = _str_arg(event, ("glob",))
    return tuple(dict.fromkeys(w for w in (scope, query, glob) if w))


_SCOPE_KEYS = ("path", "directory", "dir", "root", "cwd")
#: Where a whole-file write tool carries the file's text.
_WRITE_TEXT_KEYS = ("content", "file_text", "text", "new_source", "data")


def patch_files(text: str) -> tuple[list[str], list[str]]:
    """(files touched, files added) of a Codex ``apply_patch`` envelope or a unified diff."""
    touched: list[str] = []
    added: list[str] = []
    for m in _PATCH_HEADER.finditer(text):
        name = m.group(2).strip()
        touched.append(name)
        if m.group(1) == "Add":
            added.append(name)
    if not touched:
        touched = [m.group(1) for m in _DIFF_FILE.finditer(text) if m.group(1) != "/dev/null"]
    return touched, added


_PATCH_HEADER = re.compile(r"^\*\*\* (Update|Add|Delete) File: (.+)$", re.MULTILINE)


# ------------------------------------------------------------------------ argument readers


def _parsed_arguments(event: ToolEvent) -> ToolEvent:
    """``event`` with arguments given as a JSON object's text (a raw function call) parsed, so that a call
    reads the same whichever way its framework hands over the arguments."""
    args = event.arguments
    if isinstance(args, str) and args.lstrip().startswith("{"):
        try:
            value = loads_json(args)  # the model's text: the document reader's depth limit applies
        except ValueError:
            return event  # not JSON after all (or nested past the limit): the raw text is the argument
        if isinstance(value, dict):
            return dataclasses.replace(event, arguments=value)
    return event


def _is_map(value: Any) -> TypeGuard[Mapping[str, Any]]:
    return isinstance(value, Mapping)


def _arg(event: ToolEvent, keys: Sequence[str]) -> Any:
    args = event.arguments
    if _is_map(args):
        for k in keys:
            v = args.get(k)
            if v is not None and v != "":
                return v
    return None


def _str_arg(event: ToolEvent, keys: Sequence[str]) -> str | None:
    v = _arg(event, keys)
    if v is None:
        return None
    if isinstance(v, str):
        return v
    if isinstance(v, (list, tuple)) and all(isinstance(x, str) for x in v):
        return " ".join(v)
    return str(v)


def _raw_text(event: ToolEvent) -> str | None:
    """Arguments given as one raw string (unparseable JSON), or the scaffold's action text."""
    if isinstance(event.arguments, str) and event.arguments:
        return event.arguments
    return event.action or None
