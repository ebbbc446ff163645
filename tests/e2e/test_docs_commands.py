"""Every command the docs show runs: each fenced shell block of ``README.md``, ``docs/*.md`` and
``examples/*/README*`` is run as written, in document order, by bash in a copy of this checkout, as a user
following the docs would: the docs' own ``pip install`` lines fill a fresh virtualenv (resolved against the
wheels built from this checkout, as they will be from PyPI after publication), the docs' own
``.ci/services/*.sh start`` lines start the backends, and the docs' ``bash scripts/demo.sh`` bootstraps its
own ``.venv``. A failing command fails the test named after its block, and the message names the file and
line of the command.

A command that cannot run here carries a visible ``# not run by the docs test: <reason>`` comment in the docs
(on its own line at the top of a block: the whole block; after a command: that line), and the list of them is
kept short by ``test_few_commands_are_exempt``.

Slow (it builds the wheels, fills a virtualenv, bootstraps a checkout and runs the demo and the examples), so
it runs once, in CI's normal pass."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = [
    REPO / "README.md",
    *sorted((REPO / "docs").glob("*.md")),
    *sorted((REPO / "examples").glob("*/README*")),
]
SHELL = {"bash", "sh", "shell", "console"}
EXEMPT = "not run by the docs test:"
MAX_EXEMPT = 3
FENCE = re.compile(r"^(?P<indent> *)(?P<fence>```+|~~~+)\s*(?P<lang>[\w+-]*)")


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # 1-based line of the block's first command line
    lang: str
    lines: tuple[str, ...]

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}"

    @property
    def exempt(self) -> bool:
        return bool(self.lines) and self.lines[0].lstrip().startswith("#") and EXEMPT in self.lines[0]

    def script(self) -> str:
        """The block as run: exempt lines become ``:`` so line numbers stay the docs' own."""
        return "\n".join(":" if EXEMPT in line else line for line in self.lines)


def fenced_blocks(path: Path) -> list[Block]:
    blocks: list[Block] = []
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        end = i + 1
        while end < len(lines) and not lines[end].strip().startswith(m["fence"]):
            end += 1
        blocks.append(Block(path, i + 2, m["lang"], tuple(lines[i + 1 : end])))
        i = end + 1
    return blocks


ALL_BLOCKS = [b for path in DOCS for b in fenced_blocks(path)]
SHELL_BLOCKS = [b for b in ALL_BLOCKS if b.lang in SHELL]


def test_every_fence_names_its_language() -> None:
    """An unlabelled fence could hide a command from this test: shell blocks say ``bash``, the rest
    ``text``, ``yaml``, ..."""
    assert [b.where for b in ALL_BLOCKS if not b.lang] == []
    # Indented code blocks are unlabelled too: commands belong in fences.
    indented = [
        f"{path.relative_to(REPO)}:{n}"
        for path in DOCS
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if re.match(r"^ {4}(planguard|python|pip|bash|export|eval|curl) ", line)
        and not _inside_fence(path, n)
    ]
    assert indented == []


def _inside_fence(path: Path, n: int) -> bool:
    return any(b.path == path and b.line <= n < b.line + len(b.lines) for b in ALL_BLOCKS)


def test_few_commands_are_exempt() -> None:
    exempt = [
        f"{b.where}+{k}: {line.strip()}"
        for b in SHELL_BLOCKS
        for k, line in enumerate(b.lines)
        if EXEMPT in line
    ]
    assert 0 < len(exempt) <= MAX_EXEMPT, "\n".join(exempt)
    for entry in exempt:  # each states why
        reason = entry.split(EXEMPT, 1)[1].strip()
        assert len(reason) >= 10, entry
    # The marker is only read in shell comments; anywhere else it would exempt nothing and mislead.
    prose = [p for p in DOCS if EXEMPT in p.read_text()]
    assert all(any(EXEMPT in line for b in SHELL_BLOCKS if b.path == p for line in b.lines) for p in prose)


def _user_env(home: Path, user_venv: Path, services_run: Path, wheels: Path) -> dict[str, str]:
    """A user's shell: the docs' virtualenv first on PATH, not the test's; no checkout on the Python path,
    no planguard or OTel settings, no API keys. Its services keep their state in its own directory and
    Redis gets a port of its own: the teardown's ``stop`` must not stop the backends the rest of the suite
    uses (redis.sh's default state directory is shared)."""
    test_bin = str(Path(sys.executable).parent)
    path = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and p != test_bin]
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PHOENIX_URL", "PROMETHEUS_URL", "PIP_FIND_LINKS")
        and not (k.endswith("_API_KEY") or k.startswith(("OTEL_", "LANGSMITH_", "LANGCHAIN_", "LANGFUSE_")))
        and not (k.startswith("PLANGUARD_") and k != "PLANGUARD_SERVICES_DIR")
    }
    env.update(
        PATH=os.pathsep.join([str(user_venv / "bin"), *path]),
        HOME=str(home),
        NO_COLOR="1",
        PIP_FIND_LINKS=str(wheels),
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        PLANGUARD_SERVICES_RUN=str(services_run),
        PLANGUARD_REDIS_STATE=str(services_run / "redis"),
        PLANGUARD_REDIS_PORT=str(_free_port()),
    )
    return env


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def user(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    if not (REPO / ".git").exists() or shutil.which("git") is None:
        pytest.skip("needs a git checkout to copy")
    base = tmp_path_factory.mktemp("docs")
    checkout = base / "checkout"
    files = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for rel in filter(None, files.split("\0")):
        src = REPO / rel
        if src.is_file() or src.is_symlink():
            dst = checkout / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst, follow_symlinks=False)
    wheels = base / "wheels"
    integrations = sorted(str(p.parent) for p in (checkout / "integrations").glob("*/pyproject.toml"))
    build = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(checkout)]
    subprocess.run(
        [*build, *integrations],
        check=True,
        capture_output=True,
        timeout=900,
    )
    user_venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(user_venv)], check=True, timeout=300)
    services_run = base / "services"
    services_run.mkdir()
    return {
        "checkout": checkout,
        "env": _user_env(base / "home", user_venv, services_run, wheels),
        "home": base / "home",
    }


@pytest.fixture(scope="module", autouse=False)
def stop_services(user: dict[str, object]):  # type: ignore[no-untyped-def]
    yield
    checkout = user["checkout"]
    assert isinstance(checkout, Path)
    for svc in sorted((checkout / ".ci" / "services").glob("[!_]*.sh")):
        subprocess.run(["bash", str(svc), "stop"], env=user["env"], capture_output=True, check=False)  # type: ignore[arg-type]


@pytest.mark.slow
@pytest.mark.parametrize("block", [b for b in SHELL_BLOCKS if not b.exempt], ids=lambda b: b.where)
def test_docs_command_runs(block: Block, user: dict[str, object], stop_services: None) -> None:
    if ".ci/services/" in block.script() and os.environ.get("PLANGUARD_SKIP_SERVICES") == "1":
        pytest.skip("PLANGUARD_SKIP_SERVICES=1: the block starts a backend")
    home = user["home"]
    assert isinstance(home, Path)
    home.mkdir(exist_ok=True)
    # ERR fires on the first failing command; $LINENO minus the two preamble lines is its line in the block.
    preamble = "set -Eeo pipefail\ntrap 'echo \"docs-test-failed-at $LINENO\" >&2' ERR\n"
    script = preamble + block.script() + "\n"
    proc = subprocess.run(
        ["bash", "-c", script],
        cwd=user["checkout"],  # type: ignore[arg-type]
        env=user["env"],  # type: ignore[arg-type]
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    # A traceback is a failure even when the command went on (planguard fails open: a missing extra is
    # logged with its traceback and the agent runs without that sink).
    if proc.returncode == 0 and "Traceback (most recent call last)" in proc.stderr:
        pytest.fail(f"{block.where}: the block printed a traceback\n{proc.stderr[-3000:]}", pytrace=False)
    if proc.returncode != 0:
        at = re.findall(r"docs-test-failed-at (\d+)", proc.stderr)
        line = block.line + int(at[0]) - 3 if at else block.line
        command = block.path.read_text().splitlines()[line - 1].strip()
        pytest.fail(
            f"{block.path.relative_to(REPO)}:{line}: `{command}` exited {proc.returncode}\n"
            f"--- stdout (tail)\n{proc.stdout[-3000:]}\n--- stderr (tail)\n{proc.stderr[-3000:]}",
            pytrace=False,
        )
