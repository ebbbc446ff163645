"""Secret redaction: known token shapes, key=value forms, structures, and a fuzzed never-leaks property."""

from __future__ import annotations

import json
import re
import string
import sys
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planguard.sinks.redact import (
    _KEY_ASSIGN,
    _KEY_VALUE,
    _MEMO_MAX_CHARS,
    _MEMO_SIZE,
    _NEEDLES_OF,
    MAX_TEXT_CHARS,
    REDACTED,
    Redactor,
    _fold,
    may_hold_secret,
    redact,
    redact_text,
    redact_value,
    render_content,
)
from planguard.sinks.redact import _PATTERNS as _BUILTIN_PATTERNS

PEM = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n"
    "-----END OPENSSH PRIVATE KEY-----"
)


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("key sk-proj-abcdefghijklmnop0123456789 end", "sk-proj-abcdefghijklmnop0123456789"),
        ("sk-ant-api03-abcdefghijklmnopqrstu", "sk-ant-api03-abcdefghijklmnopqrstu"),
        ("token ghp_" + "a" * 36, "ghp_" + "a" * 36),
        ("github_pat_" + "B" * 50, "github_pat_" + "B" * 50),
        ("AKIAIOSFODNN7EXAMPLE in env", "AKIAIOSFODNN7EXAMPLE"),
        ("xoxb-123456789012-abcdefghij", "xoxb-123456789012-abcdefghij"),
        ("AIza" + "S" * 35, "AIza" + "S" * 35),
        ("hf_" + "q" * 34, "hf_" + "q" * 34),
        ("glpat-" + "z" * 20, "glpat-" + "z" * 20),
        (
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
            "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        ),
        ("curl -H 'Authorization: Bearer abcdef123456789'", "abcdef123456789"),
        ("postgres://admin:S3cretPw@db:5432/x", "S3cretPw"),
        ("export DB_PASSWORD=hunter2", "hunter2"),
        ('{"api_key": "k-12345"}', "k-12345"),
        ("mysql --password hunter22 -u root", "hunter22"),
        ("client_secret: abc.def", "abc.def"),
        (f"key:\n{PEM}\ndone", "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ"),
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7 (cut)", "MIIEpAIBAAKCAQEA7"),
    ],
)
def test_known_secrets_are_redacted(text: str, secret: str) -> None:
    out = redact(text)
    assert secret not in out
    assert REDACTED in out


@pytest.mark.parametrize(
    "text",
    [
        "ls -la /testbed",
        "python reproduce.py --verbose",
        "grep -rn token_count src/",
        "sed -i 's/a/b/' f.py",
        "the password field is optional",
    ],
)
def test_ordinary_text_is_untouched(text: str) -> None:
    assert redact(text) == text


def test_structures_by_key_and_value() -> None:
    value = {
        "command": "run",
        "env": {"OPENAI_API_KEY": "abc", "HOME": "/root"},
        "args": ["--token", "t0k"],
        "Password": 1234,
        "note": "uses ghp_" + "c" * 36,
    }
    out = redact_value(value)
    assert out["env"] == {"OPENAI_API_KEY": REDACTED, "HOME": "/root"}
    assert out["Password"] == REDACTED
    assert "ghp_" not in out["note"]
    assert out["command"] == "run"
    assert value["env"]["OPENAI_API_KEY"] == "abc"  # the input is not modified


def test_extra_patterns() -> None:
    r = Redactor([(r"ACME-\d{6}", "[ACME]")])
    assert r("id ACME-123456 sk-proj-abcdefghijklmnop0123") == f"id [ACME] {REDACTED}"


def test_secret_straddling_the_cut_does_not_leak_a_prefix() -> None:
    secret = "ghp_" + "k" * 36
    text = "a" * 95 + " " + secret
    out = render_content(text, 100)
    assert "ghp_" not in out and "kkkk" not in out


_token_chars = string.ascii_letters + string.digits
secrets = st.one_of(
    st.text(_token_chars, min_size=36, max_size=40).map(lambda s: "ghp_" + s),
    st.text(_token_chars, min_size=20, max_size=40).map(lambda s: "sk-proj-" + s),
    st.text(string.ascii_uppercase + string.digits, min_size=16, max_size=16).map(lambda s: "AKIA" + s),
    st.text(_token_chars, min_size=6, max_size=20).map(lambda s: "pw" + s).map(lambda s: f"PASSWORD={s}"),
)
noise = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=80)


@settings(max_examples=300, deadline=None)
@given(before=noise, secret=secrets, after=noise, limit=st.integers(min_value=0, max_value=200))
def test_fuzz_secret_never_survives(before: str, secret: str, after: str, limit: int) -> None:
    text = f"{before} {secret} {after}"
    value = secret.split("=", 1)[1] if secret.startswith("PASSWORD=") else secret
    assert value not in redact(text)
    rendered = render_content(text, limit)
    assert value not in rendered
    assert value not in render_content({"cmd": text, "nested": [text]}, limit)


# The pre-check that lets text with no possible secret skip the patterns must never skip a match.
@pytest.mark.parametrize("index", range(len(_BUILTIN_PATTERNS)))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_every_builtin_match_passes_the_precheck(index: int, data: st.DataObject) -> None:
    pattern = _BUILTIN_PATTERNS[index][0]
    text = data.draw(st.from_regex(pattern))
    assert pattern.search(text)
    assert may_hold_secret(text), f"pattern {index} matches {text!r} but the pre-check skips it"
    folded = _fold(text)
    assert any(n in folded for n in _NEEDLES_OF[index]), f"pattern {index}: {text!r} lacks its needles"
    if index == _KEY_VALUE:
        assert _KEY_ASSIGN.search(folded), f"{text!r} matches key=value but not its gate"


def test_folding_maps_every_character_the_patterns_take_for_ascii() -> None:
    """What the needles and the key=value gate rely on, over all of Unicode: a character the IGNORECASE
    patterns match as an ASCII letter (or key-name character, space, quote, ``=``/``:``) folds to exactly
    one character of the same kind, and a value character folds to text starting with a value character."""
    key = re.compile(r"(?i)[A-Za-z0-9_.-]")
    value = re.compile(r"(?i)[^\s\"',;}&\\]")
    for cp in range(sys.maxunicode + 1):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        c = chr(cp)
        unchanged = c.casefold() == c and c.lower() == c and c.upper() == c
        if unchanged and not c.isspace() and not c.isascii():
            continue  # folds to itself and is no ASCII letter: nothing to check
        f = _fold(c)
        if key.fullmatch(c):
            assert len(f) == 1 and re.fullmatch(r"[a-z0-9_.\-]", f), (hex(cp), f)
        if c.isspace() and re.fullmatch(r"\s", c):
            assert len(f) == 1 and re.fullmatch(r"\s", f), (hex(cp), f)
        if c in "\"'=:":
            assert f == c
        if value.fullmatch(c):
            assert f and re.match(r"[^\s\"',;}&\\]", f), (hex(cp), f)


def test_dotted_capital_i_still_reaches_the_key_patterns() -> None:
    # casefold turns İ into i + combining dot, which IGNORECASE still takes for "i": no needle may miss it.
    for text in ("credentİal=hunter2", "CREDENTİALS: hunter2", "cookİe=hunter2", "sessİon_id=hunter2"):
        assert "hunter2" not in redact(text), text
    assert "abcdefghijkl" not in redact("Authorization: Basİc abcdefghijkl")


@settings(max_examples=300, deadline=None)
@given(
    text=st.one_of(
        noise,
        st.tuples(noise, secrets, noise).map(" ".join),
        st.tuples(noise, st.sampled_from(["ı", "İ", "ſ", "K", "ß"]), noise).map("".join),
    )
)
def test_precheck_fast_path_equals_running_every_pattern(text: str) -> None:
    slow = text
    for pattern, repl in _BUILTIN_PATTERNS:
        slow = pattern.sub(repl, slow)
    assert redact(text) == slow
    extra = Redactor([(r"internal-\d+", "[X]")])  # extra patterns run whether or not the built-ins do
    tagged = f"{text} internal-42"
    for pattern, repl in extra.patterns:
        tagged = pattern.sub(repl, tagged)
    assert extra(f"{text} internal-42") == tagged
    assert "internal-42" not in tagged


def test_dotless_i_still_reaches_the_key_patterns() -> None:
    # IGNORECASE lets "ı" stand for "i" in "credentials"; the pre-check must not rule it out.
    assert "hunter2" not in redact("CREDENTıALS=hunter2")


def test_memo_answers_repeats_as_the_first_time_per_redactor_and_stays_bounded() -> None:
    plain, tagging = Redactor(), Redactor([(r"internal-\d+", "[X]")])
    for text in ("export DB_PASSWORD=hunter2", "ls internal-7", "view", "ok"):
        first = plain(text)
        assert plain(text) == first == plain._redact(text)
        # Another redactor's patterns are its own: a text the first one memoised is judged afresh.
        assert tagging(text) == tagging._redact(text)
    assert tagging("ls internal-7") == "ls [X]" and plain("ls internal-7") == "ls internal-7"
    long_text = "x" * (_MEMO_MAX_CHARS + 1) + " password=hunter2"
    assert "hunter2" not in plain(long_text)
    assert long_text not in plain._memo  # long texts (tool output) are not kept
    for i in range(_MEMO_SIZE + 10):
        plain(f"cat file_{i}.py")
    assert len(plain._memo) <= _MEMO_SIZE
    assert plain("export DB_PASSWORD=hunter2") == f"export DB_PASSWORD={REDACTED}"


# --------------------------------------------------------------------------- the shapes of issue #21 item 3

PGP = (
    "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBGXpgpgSECRETBODYabc123\n=Xy9z\n"
    "-----END PGP PRIVATE KEY BLOCK-----"
)


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("git clone https://admin:pa/ss9word@git.example.com/r.git", "pa/ss9word"),
        ("https://admin:p@ss9word@db.example.com/x", "p@ss9word"),
        ("https://admin:hunter2pass@example.com/x", "hunter2pass"),
        (f"key:\n{PGP}\n", "lQOYBGXpgpgSECRETBODYabc123"),
        ("-----BEGIN CERTIFICATE-----\nMIIBsecretcertbody\n-----END CERTIFICATE-----", "MIIBsecretcertbody"),
        (json.dumps(json.dumps({"password": "hunter2x"})), "hunter2x"),
        (json.dumps({"cfg": json.dumps({"password": ["hunter2x", "y2"]})}), "hunter2x"),
        ('{"password": ["hunter2x", "other"]}', "hunter2x"),
        ('{"credentials": {"user": "u", "pw": "hunter2x"}}', "hunter2x"),
        ("mysql -u root -phunter2x appdb", "hunter2x"),
        ("mysqldump -h db -phunter2x -P 3306 appdb", "hunter2x"),
        ("curl -u admin:hunter2x https://api.example.com", "hunter2x"),
        ("curl --user admin:hunter2x https://api.example.com", "hunter2x"),
        ("DB_PASS=hunter2x ./migrate", "hunter2x"),
        ("export APP_PASSWORD=hunter2x", "hunter2x"),
        ("CI_DEPLOY_TOKEN=hunter2x make deploy", "hunter2x"),
        ("MYSQL_PWD=hunter2x mysql", "hunter2x"),
        ("sshpass -p hunter2x ssh deploy@host", "hunter2x"),
        ("sshpass -phunter2x scp f host:", "hunter2x"),
    ],
)
def test_issue_21_shapes_are_redacted(text: str, secret: str) -> None:
    out = redact(text)
    assert secret not in out, out
    assert REDACTED in out


@pytest.mark.parametrize(
    "text",
    ["mysql -P 3306 -h db", "5 passed, 1 skipped", "bypass=1", "sort -u names.txt", "ssh user@host"],
)
def test_lookalikes_of_the_new_shapes_are_untouched(text: str) -> None:
    assert redact(text) == text


def test_secret_named_keys_lose_whatever_they_hold_and_bytes_are_text() -> None:
    value = {
        "password": ["hunter2x", "b"],
        "api_token": {"value": "hunter2x"},
        "secret": b"hunter2x",
        "blob": b"auth ghp_" + b"z" * 36,
        "bad": b"\xff\xfe token=hunter2x",
        "obj": _Holder("password=hunter2x"),
        "flag_auth": True,
        "n": 3,
    }
    out = redact_value(value)
    text = json.dumps(out)
    assert "hunter2x" not in text and "zzzz" not in text
    assert out["flag_auth"] is True and out["n"] == 3  # booleans and plain numbers are no secrets
    assert out["password"] == out["api_token"] == out["secret"] == REDACTED


class _Holder:
    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text


def test_a_secret_in_a_key_is_redacted() -> None:
    token = "ghp_" + "k" * 36
    assert token not in json.dumps(redact_value({token: 1}))


@pytest.mark.parametrize("limit", [10, 50, 96, 100, 110, 4096])
def test_cut_before_redaction_never_leaves_a_prefix(limit: int) -> None:
    # A token straddling the limit: the cut drops the word it goes through before redaction.
    for secret in (
        "ghp_" + "k" * 36,
        "https://admin:hunter2pass@h/x",
        "sshpass -p hunter2x",
        "mysql -phunter2x",
    ):
        text = "a" * (limit - 12) + " " + secret + " tail"
        out = redact_text(text, limit)
        assert "kkkk" not in out and "hunter2" not in out, (limit, out)
        assert len(out) <= limit + len("…[99999 chars truncated]")


# Inputs built to make a backtracking pattern retry at every position; every pattern is bounded, so each
# finishes in well under a second at the size cap (a quadratic one would take minutes).
_ADVERSARIAL = {
    "url": "a://b:" * (MAX_TEXT_CHARS // 6),
    "key-dots": "a." * (MAX_TEXT_CHARS // 2) + " password=x",
    "key-run": "token" * (MAX_TEXT_CHARS // 5) + "=x",
    "flags": "--token" * (MAX_TEXT_CHARS // 7),
    "dashes": "-" * MAX_TEXT_CHARS + " --password x",
    "mysql": "mysql " * (MAX_TEXT_CHARS // 6) + "-px",
    "sshpass": "sshpass -" * (MAX_TEXT_CHARS // 9),
    "curl": "-u " * (MAX_TEXT_CHARS // 3) + "a:b",
    "pem": "-----BEGIN A-----" * (MAX_TEXT_CHARS // 17),
    "bearer": "Bearer " * (MAX_TEXT_CHARS // 7),
    "escaped": '\\"password\\": ' * (MAX_TEXT_CHARS // 15),
    "deep-json": "[" * 100_000 + '"password=x"',
    "over-cap": "token=x " * MAX_TEXT_CHARS,
}


@pytest.mark.parametrize("name", sorted(_ADVERSARIAL))
def test_adversarial_input_finishes_fast(name: str) -> None:
    text = _ADVERSARIAL[name]
    began = time.perf_counter()
    out = Redactor()(text)
    assert time.perf_counter() - began < 2.0, name
    assert len(out) <= max(len(text), MAX_TEXT_CHARS) + 64
