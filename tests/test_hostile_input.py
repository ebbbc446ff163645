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

from planguard import Guard
from planguard.config import ConfigError, load_config
from planguard.documents import MAX_DEPTH, DocumentError, loads_json, loads_yaml
from planguard.plan import load_plan


def alias_bomb() -> str:
    """Nine anchors, each a list of nine aliases of the one before, under a key the config accepts."""
    lines = ['x0: &a ["plan","plan","plan","plan","plan","plan","plan","plan","plan"]']
    prev = "a"
    for name in "bcdefgh":
        lines.append(f"x{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
        prev = name
    lines.append(f"score_plans: *{prev}")
    return "\n".join(lines) + "\n"


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
