"""Secret redaction for content that may leave the process: API keys, tokens, passwords, private keys,
URL credentials, command-line passwords, secret-named keys (whatever they hold), bytes, JSON inside strings.

The one redaction pass every sink and the webhook use (through :func:`redact_text`, :func:`redact_value`
and :func:`render_content`). It runs before any cut, on a window past the limit, so a secret straddling
the cut is replaced whole and no prefix of it survives. It runs off the agent's path (on the sinks' worker
threads) and is bounded: every pattern is linear in its input, and a text longer than ``MAX_TEXT_CHARS``
is cut (at a word boundary) before it is redacted.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from ..documents import loads_json

__all__ = [
    "DEFAULT_REDACTOR",
    "MAX_TEXT_CHARS",
    "REDACTED",
    "Redactor",
    "may_hold_secret",
    "redact",
    "redact_text",
    "redact_value",
    "render_content",
    "truncate",
]

REDACTED = "[REDACTED]"

# Names of secret-holding keys, variables and flags: the part that says "secret" (a key name around it,
# ``DB_PASS``, ``x-api-key``, ``github_token``, is matched by the patterns below, with a bounded run of name
# characters after it). ``pass`` and ``pwd`` only as a whole name part, so ``bypass`` and ``passed`` are not.
_SECRET_WORD = (
    r"(?:passw(?:or)?d|passphrase|(?<![a-z])pass(?![a-z])|(?<![a-z])pwd(?![a-z])|secret|token|"
    r"api[_-]?key|apikey|access[_-]?key|private[_-]?key|client[_-]?secret|credentials?|auth(?:orization)?|"
    r"session[_-]?id|cookie)"
)
_SECRET_KEY = r"[A-Za-z0-9_.-]*" + _SECRET_WORD + r"[A-Za-z0-9_.-]*"
# A quote before or after ``=``/``:``, possibly escaped (JSON inside a JSON string, or inside the ``str()`` of
# bytes inside JSON: ``{\\\"password\\\": ...``, up to three levels deep).
_QUOTE = r"(?:\\{0,8}[\"'])?"
# A value: up to whitespace, a quote, a separator or a backslash (the escape of a closing quote).
_VALUE = r"[^\s\"',;}&\\]+"
# A JSON list or object as a secret-named key's value, in text (``"password": ["a", "b"]``): whole, up to
# its first closing bracket (a nested one ends it early; what follows is then matched as text again).
_LIST_OR_OBJECT = r"\[[^\]]{0,512}+\]|\{[^}]{0,512}+\}"
# A Python bytes literal as a secret-named key's value, in text (``str()`` of a dict holding bytes:
# ``'secret': b'...'``): whole, to its closing quote.
_BYTES_LITERAL = r"b'[^'\n]{0,512}+'|b\"[^\"\n]{0,512}+\""

# Order matters: whole-block and prefixed tokens first, generic key=value last. Every repetition is bounded
# or anchored on a literal, so each pattern runs in time linear in the text (see the adversarial tests in
# tests/unit/sinks/test_telemetry_redact.py).
_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # PEM blocks (private keys, PGP private key blocks, any other), whole; a block cut before its END line
    # is redacted to the end of the text.
    (
        re.compile(r"-----BEGIN [A-Z0-9 ]{0,64}-----.*?(?:-----END [A-Z0-9 ]{0,64}-----|\Z)", re.S),
        REDACTED,
    ),
    # Credentials in URLs: scheme://user:password@host. The password runs to the last ``@`` of the URL
    # (passwords may hold ``/`` and ``@``): a path holding an ``@`` is redacted with it.
    (
        re.compile(r"\b([a-z][a-z0-9+.-]{0,31}://[^/\s:@\"'<>]{1,256}:)[^\s\"'<>]{0,256}@", re.I),
        r"\1" + REDACTED + "@",
    ),
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
    # Passwords on command lines: ``mysql -pPW`` (``-P`` is the port), ``sshpass -p PW``,
    # ``curl -u user:PW`` / ``--user user:PW``.
    (
        re.compile(
            r"((?i:\b(?:mysql|mysqldump|mysqladmin|mariadb)\b)[^\n;&|]{0,128}?\s-p)(?!\[REDACTED\])" + _VALUE
        ),
        r"\1" + REDACTED,
    ),
    (
        re.compile(r"((?i:\bsshpass\b)[^\n;&|]{0,128}?\s-p\s{0,16}+)(?!\[REDACTED\])" + _VALUE),
        r"\1" + REDACTED,
    ),
    (
        re.compile(
            r"((?<!\S)(?:-u|-U|--user|--proxy-user)(?:\s{0,16}|=)[\"']?[^\s:\"']{1,256}:)(?!\[REDACTED\])"
            + _VALUE
        ),
        r"\1" + REDACTED,
    ),
    # key=value / key: value / "key": "value" / \"key\": \"value\" where the key names a secret.
    (
        re.compile(
            r"(?i)("
            + _SECRET_WORD
            + r"[A-Za-z0-9_.-]{0,64}+"
            + _QUOTE
            + r"\s{0,16}+[=:]\s{0,16}+"
            + _QUOTE
            + r")"
            r"(?!\[REDACTED\])(" + _LIST_OR_OBJECT + "|" + _BYTES_LITERAL + "|" + _VALUE + ")"
        ),
        r"\1" + REDACTED,
    ),
    # CLI flags: --password hunter2, --db-token=abc (a flag starts at a dash no name character precedes).
    (
        re.compile(
            r"(?i)(?<![A-Za-z0-9_.-])(--?[A-Za-z0-9_.-]{0,32}?"
            + _SECRET_WORD
            + r"[A-Za-z0-9_.-]{0,64}+(?:=|\s{1,16}+))"
            r"(?!\[REDACTED\])([^\s\"'-][^\s\"']*)"
        ),
        r"\1" + REDACTED,
    ),
)


# Each built-in pattern needs one of its needles in the folded text (see _fold) to match, and substitutions
# never create a needle (what they insert, ``[REDACTED]``, holds none and cannot join text into one), so a
# pattern whose needles are all absent from the original text is skipped: its ``sub`` would change nothing.
# Most tool output holds none — a dozen regex passes cost ~20 µs on a short string and milliseconds on 4 KB
# of output, these checks ~1 µs and ~0.1 ms. Keep in step with _PATTERNS
# (tests/unit/sinks/test_telemetry_redact.py checks every pattern's matches against its needles).
_KEY_NEEDLES = ("pass", "pwd", "secret", "token", "key", "credential", "auth", "session", "cookie")
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
    ("mysql", "mariadb"),
    ("sshpass",),
    ("-u",),  # curl -u / --user / --proxy-user (-U folds to -u)
    _KEY_NEEDLES,  # key=value: also gated by _KEY_ASSIGN
    _KEY_NEEDLES,  # CLI flags
)
_NEEDLES = tuple(dict.fromkeys(n for needles in _NEEDLES_OF for n in needles))
_SHORTEST_NEEDLE = min(map(len, _NEEDLES))
_KEY_VALUE = len(_NEEDLES_OF) - 2  # index of the key=value pattern
# The key=value pattern is the costly one and its key names are common words in code ("key", "token",
# "session"). It matches only where such a name is followed by ``=`` or ``:``; this search for that, over
# the folded text, is case-sensitive (so the regex engine can skip to the names' first letters) and much
# cheaper. Every character the pattern can match in that stretch folds to exactly one character this class
# matches (checked over all of Unicode in tests/unit/sinks/test_telemetry_redact.py), so no match is
# skipped; its bounds are the pattern's plus the longest secret word's tail past its needle ("password":
# 4 more).
_KEY_ASSIGN = re.compile(
    r"(?:pass|pwd|secret|token|key|credential|auth|session|cookie)[a-z0-9_.\-]{0,80}+(?:\\{0,8}[\"'])?"
    r"\s{0,16}+[=:]"
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
#: Longest text redacted whole (and so the longest parsed as JSON); a longer one is cut (at a word
#: boundary) first and the cut marked.
MAX_TEXT_CHARS = 64 * 1024
_JSON_START = frozenset('{["')


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
        if len(text) > MAX_TEXT_CHARS:
            head = _cut(text, MAX_TEXT_CHARS)
            return self._redact(head) + _cut_mark(len(text) - len(head))
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
            structured = self._redact_json(text)
            if structured is not None:
                return structured
            for i, (pattern, repl) in enumerate(_PATTERNS):
                for needle in _NEEDLES_OF[i]:
                    if needle in folded:
                        if i != _KEY_VALUE or _KEY_ASSIGN.search(folded) is not None:
                            text = pattern.sub(repl, text)
                        break
        for pattern, repl in self._extra:
            text = pattern.sub(repl, text)
        return text

    def _redact_json(self, text: str) -> str | None:
        """A text that is a JSON document (an object, an array, or a string holding one), redacted as the
        structure it is — ``{"password": ["a", "b"]}`` loses the whole list — or None when it is not JSON
        or nothing in it changed (the patterns then see the text as it is)."""
        if text.lstrip()[:1] not in _JSON_START:  # (so a document is an object, an array or a string)
            return None
        try:
            value = loads_json(text)  # nested past the document limit: the patterns see the text as it is
        except ValueError:
            return None
        cleaned = redact_value(value, self)
        if cleaned == value:
            return None
        out = json.dumps(cleaned, ensure_ascii=False)
        for pattern, repl in self._extra:
            out = pattern.sub(repl, out)
        return out


#: The built-in patterns alone: what redaction uses when a sink is given no redactor of its own.
DEFAULT_REDACTOR = Redactor()
_SECRET_KEY_RE = re.compile(r"(?i)" + _SECRET_KEY)


def redact(text: str) -> str:
    """``text`` with every recognised secret replaced by ``[REDACTED]``."""
    return DEFAULT_REDACTOR(text)


def truncate(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, the cut marked. For text already redacted: to cut text that
    may still hold a secret, use :func:`redact_text`, which cuts where no secret can straddle."""
    if limit <= 0 or len(text) <= limit:
        return text
    return text[:limit] + _cut_mark(len(text) - limit)


def _cut_mark(n: int) -> str:
    return f"…[{n} chars truncated]"


# Characters a secret never spans (except a PEM block, which its pattern redacts to the end of the text).
_BREAKS = (" ", "\n", "\t", "\r", '"', "'")
#: Most of the word a cut goes through that is dropped with it. A longer word keeps its first part: every
#: token pattern recognises a prefix this long (their fixed parts and minimum lengths are far shorter).
_MAX_DROP = 256


def _cut(text: str, limit: int) -> str:
    """``text[:limit]`` without the word the cut goes through (no prefix of a secret is left behind)."""
    head = text[:limit]
    if len(text) > limit and text[limit] not in _BREAKS:
        start = max(head.rfind(c) for c in _BREAKS) + 1  # where the word the cut goes through starts
        head = head[: max(start, limit - _MAX_DROP)]
    return head


#: Characters past a limit that redaction looks at before the cut (longer than any secret's match but a
#: PEM block's, which its pattern redacts to the end of the text).
_SLACK = 1024


def redact_text(text: str, limit: int = 0, redactor: Redactor | None = None) -> str:
    """``text`` redacted, then cut to ``limit`` characters (0: no limit) with the cut marked.

    Redaction sees ``limit`` plus ``_SLACK`` characters, cut at a word boundary, so a secret straddling
    ``limit`` is recognised whole and replaced before the cut: no prefix of it survives.
    """
    r = redactor or DEFAULT_REDACTOR
    if limit <= 0 or len(text) <= limit:
        return r(text)
    window = _cut(text, limit + _SLACK)
    cleaned = r(window)
    left_out = len(text) - len(window)
    if len(cleaned) > limit:
        left_out += len(cleaned) - limit
        cleaned = cleaned[:limit]
    return cleaned + _cut_mark(left_out) if left_out else cleaned


def redact_value(value: Any, redactor: Redactor | None = None, *, _depth: int = 0) -> Any:
    """A JSON-like copy of ``value`` with secrets redacted: strings by pattern (and as JSON when they hold
    a JSON document), keys by pattern, the whole value of a key that names a secret whatever it holds
    (``{"password": ["a", "b"]}`` → ``{"password": "[REDACTED]"}``), bytes decoded (UTF-8, invalid bytes
    replaced) and redacted as text, and any other object as the redacted text of its ``str()``."""
    r = redactor or DEFAULT_REDACTOR
    if isinstance(value, str):
        return r(value)
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if _depth > 32:
        return REDACTED  # deeper than any real tool argument; refuse rather than recurse forever
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for k, v in value.items():
            key = str(k)  # (a str subclass's own text: an enum member's str(), as json.dumps would not)
            secret_named = _SECRET_KEY_RE.fullmatch(key) is not None
            if secret_named and v is not None and v != "" and not isinstance(v, bool):
                out[r(key)] = REDACTED
            else:
                out[r(key)] = redact_value(v, r, _depth=_depth + 1)
        return out
    if isinstance(value, (list, tuple)):
        return [redact_value(v, r, _depth=_depth + 1) for v in value]
    if isinstance(value, (bytes, bytearray, memoryview)):
        return r(bytes(value[:MAX_TEXT_CHARS]).decode("utf-8", "replace"))
    return r(str(value))


def render_content(value: Any, limit: int, redactor: Redactor | None = None) -> str:
    """Tool arguments or a result as safe text: JSON for structures, secrets redacted, at most ``limit``
    characters (0: whole) plus the cut mark.

    Redaction comes first: a string is cut where no secret straddles the cut (see :func:`redact_text`), a
    structure is redacted and then serialised and cut.
    """
    if value is None:
        return ""
    r = redactor or DEFAULT_REDACTOR
    if isinstance(value, str):
        return redact_text(value, limit, r)
    try:
        text = json.dumps(redact_value(value, r), ensure_ascii=False, default=str)
    except (TypeError, ValueError, RecursionError):
        text = redact_text(repr(value)[: MAX_TEXT_CHARS + 1], 0, r)
    return truncate(text, limit)
