"""Hostile documents fail fast with one clear error, wherever planguard reads JSON or YAML: a 331-byte
YAML alias bomb (9**8 strings once expanded), a 100,000-deep JSON document and bytes that are not UTF-8.
Before planguard.documents the bomb hung config loading (validation walked the expansion) and the other
two ended in a traceback (RecursionError, UnicodeDecodeError)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hostile_config import alias_bomb

from planguard import Guard
from planguard.config import ConfigError, load_config
from planguard.documents import MAX_DEPTH, DocumentError, loads_json, loads_yaml
from planguard.plan import load_plan

DEEP_JSON = '{"plan": ' + "[" * 100_000 + "]" * 100_000 + "}"
BAD_UTF8 = b'enabled: true\nplan: "\xff\xfe"\n'


@pytest.fixture
def hostile(tmp_path: Path) -> dict[str, Path]:
    files = {
        "bomb": tmp_path / "bomb.yaml",
        "deep": tmp_path / "deep.json",
        "utf8": tmp_path / "bad.yaml",
    }
    files["bomb"].write_text(alias_bomb())
    files["deep"].write_text(DEEP_JSON)
    files["utf8"].write_bytes(BAD_UTF8)
    return files


EXPECTED = {
    "bomb": "YAML aliases are not allowed",
    "deep": f"nested deeper than {MAX_DEPTH} levels",
    "utf8": "not valid UTF-8 (byte 0xff at offset 21)",
}


def test_the_bomb_is_small_and_really_expands() -> None:
    import yaml

    text = alias_bomb()
    assert len(text) < 400
    data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # shared, not expanded
    assert len(data["score_plans"]) == 9 and len(data["score_plans"][0][0][0][0][0][0]) == 9


@pytest.mark.parametrize("kind", ["bomb", "deep", "utf8"])
def test_load_config_and_guard_from_file_refuse_fast(hostile: dict[str, Path], kind: str) -> None:
    for load in (lambda p: load_config(p, env={}), Guard.from_file):
        t0 = time.perf_counter()
        with pytest.raises(ConfigError) as info:
            load(hostile[kind])
        assert time.perf_counter() - t0 < 1.0
        message = str(info.value)
        assert len(message.splitlines()) == 1
        assert message.startswith(str(hostile[kind])) and EXPECTED[kind] in message


@pytest.mark.parametrize("kind", ["bomb", "deep", "utf8"])
def test_check_config_prints_one_error_line(hostile: dict[str, Path], kind: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "planguard", "check-config", "--no-env", str(hostile[kind])],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 1
    assert proc.stdout == ""
    (line,) = proc.stderr.splitlines()
    assert line.startswith(f"error: {hostile[kind]}") and EXPECTED[kind] in line
    assert "Traceback" not in proc.stderr


def test_plan_files_refuse_the_same_documents(tmp_path: Path) -> None:
    bomb = tmp_path / "plan.yaml"
    bomb.write_text("phases: &p [{id: N}]\nname: x\nextra: [*p, *p]\n")
    with pytest.raises(ValueError, match=r"plan\.yaml:1: YAML aliases are not allowed"):
        load_plan(bomb)
    deep = tmp_path / "plan.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ValueError, match="nested deeper than"):
        load_plan(deep)


def test_documents_limits() -> None:
    assert loads_json("[" * MAX_DEPTH + "]" * MAX_DEPTH) is not None
    with pytest.raises(DocumentError, match="nested deeper"):
        loads_json("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1))
    # Brackets inside strings are not nesting.
    assert loads_json(json.dumps({"cmd": "[" * 1000})) == {"cmd": "[" * 1000}
    with pytest.raises(DocumentError, match="nested deeper"):
        loads_yaml("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1))
    assert loads_yaml("a: [1, {b: 2}]\n") == {"a": [1, {"b": 2}]}
    with pytest.raises(DocumentError) as info:
        loads_yaml("a: &x 1\nb: *x\n")
    assert info.value.line == 1
    with pytest.raises(DocumentError, match="not valid YAML"):
        loads_yaml("a: 2020-13-45\n")
    with pytest.raises(DocumentError) as bad:
        loads_json(b'{"a":\n"\xc3"}')
    assert bad.value.line == 2 and "not valid UTF-8" in str(bad.value)


def test_report_skips_a_deeply_nested_line_and_reports_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from planguard.cli import main

    good = {
        "id": "r1",
        "letters": "NP",
        "step_roles": [["L_navigate"], ["P"]],
        "metrics": {"plan": {"PPC": 0.5, "POC": 0.5, "PPF": 1.0, "PC": 0.63}},
        "findings": [],
    }
    deep = json.dumps({**good, "id": "r2"})[:-1] + ', "x": ' + "[" * 100_000 + "]" * 100_000 + "}"
    path = tmp_path / "runs.jsonl"
    path.write_text("\n".join([json.dumps(good), deep, json.dumps({**good, "id": "r3"})]) + "\n")
    out = tmp_path / "r.html"
    assert main(["report", str(path), "-o", str(out)]) == 1  # 1: some input failed, the rest reported
    err = capsys.readouterr().err
    assert f"{path}:2: nested deeper than {MAX_DEPTH} levels" in err
    assert '<b id="n-runs">2</b>' in out.read_text("utf-8")


def test_store_reader_names_a_deeply_nested_line(tmp_path: Path) -> None:
    from planguard.events import ToolEvent
    from planguard.offline.loaders.planguard_store import read_session
    from planguard.session import Pipeline
    from planguard.sinks.store.config import StoreConfig
    from planguard.sinks.store.writer import StoreSink

    sink = StoreSink(StoreConfig(path=str(tmp_path / "store")))
    session = Pipeline(sinks=(sink,)).session("s1")
    session.after_tool(ToolEvent(tool="Read", arguments={"path": "a.py"}, call_id="c1"))
    session.end()
    sink.shutdown()
    (file,) = (tmp_path / "store").glob("*.jsonl")
    with file.open("a") as f:
        f.write("[" * 100_000 + "]" * 100_000 + "\n")
    stored = read_session(file)
    assert len(stored.steps) == 1  # the session still loads
    (error,) = stored.errors
    assert "nested deeper than" in error.message


def test_proxy_config_refuses_the_alias_bomb(hostile: dict[str, Path]) -> None:
    pytest.importorskip("planguard_proxy")
    from planguard_proxy.config import load_proxy_config

    for kind in ("bomb", "deep", "utf8"):
        t0 = time.perf_counter()
        with pytest.raises(ConfigError, match=EXPECTED[kind].replace("(", r"\(").replace(")", r"\)")):
            load_proxy_config(hostile[kind])
        assert time.perf_counter() - t0 < 1.0


def test_hook_journal_skips_a_deeply_nested_line(tmp_path: Path) -> None:
    pytest.importorskip("planguard_hooks")
    from planguard_hooks.state import SessionStore, file_name

    store = SessionStore(tmp_path / "s")
    store.ensure_directory()
    (tmp_path / "s" / (file_name("k") + ".log")).write_text(
        '{"op":"model"}\n' + '{"op":"pre","e":' + "[" * 100_000 + "]" * 100_000 + "}\n"
    )
    with store.open("k") as stored:
        ops, complete = stored.journal()
    assert [op.kind for op in ops] == ["model"] and not complete
    assert "nested deeper than" in stored.problems[0]
