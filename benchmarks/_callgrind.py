"""Instructions executed, counted by valgrind's callgrind: figures that a shared machine's noise cannot move.

A benchmark re-runs itself under callgrind (:func:`run`) with ``--segments LIB`` in its arguments; the inner
run brackets each measured piece with :class:`Segments` (``zero()`` before, ``dump(label)`` after), and every
dump is one counter segment, read back as the instructions of each label's segments in dump order.
Deterministic to ~0.1 %; valgrind runs the interpreter ~50× slower than native.

Needs ``valgrind`` and a C compiler with ``valgrind/callgrind.h`` (Debian's ``valgrind``): a four-line helper
is compiled to switch the counters from Python.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

_HELPER = r"""
#include <valgrind/callgrind.h>
void pg_cg_start(void) { CALLGRIND_START_INSTRUMENTATION; }
void pg_cg_stop(void) { CALLGRIND_STOP_INSTRUMENTATION; }
void pg_cg_zero(void) { CALLGRIND_ZERO_STATS; }
void pg_cg_dump(const char *label) { CALLGRIND_DUMP_STATS_AT(label); }
"""
_TRIGGER = "desc: Trigger: Client Request: "


def missing() -> str | None:
    """Why instructions cannot be counted here, or None when they can."""
    if shutil.which("valgrind") is None:
        return "valgrind is not installed"
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        return "no C compiler (cc or gcc)"
    return None


def run(script: str, args: list[str]) -> dict[str, list[int]]:
    """``python script args... --segments LIB`` under callgrind; its segments' instructions by label, in dump
    order.

    Counting starts at the inner run's :meth:`Segments.start` (imports and set-up run uninstrumented, fast)
    and covers all threads. Raises ``RuntimeError`` when valgrind or the compiler is missing."""
    reason = missing()
    if reason is not None:
        raise RuntimeError(f"counting instructions needs valgrind and a C compiler: {reason}")
    cc = shutil.which("cc") or shutil.which("gcc")
    with tempfile.TemporaryDirectory(prefix="planguard-bench-cg-") as tmp:
        work = Path(tmp)
        (work / "cg.c").write_text(_HELPER)
        lib = work / "libcg.so"
        subprocess.run([str(cc), "-O2", "-shared", "-fPIC", "-o", str(lib), str(work / "cg.c")], check=True)
        out = work / "cg.out"
        cmd = [
            "valgrind",
            "--tool=callgrind",
            "--instr-atstart=no",
            "--combine-dumps=yes",  # one file, one part per dump
            "--dump-line=no",
            f"--callgrind-out-file={out}",
            sys.executable,
            script,
            *args,
            "--segments",
            str(lib),
        ]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        segments: dict[str, list[int]] = {}
        label = None
        with out.open(errors="replace") as f:
            for line in f:  # a part's cost lines run to hundreds of MB over thousands of dumps: stream them
                if line.startswith(_TRIGGER):
                    label = line[len(_TRIGGER) :].strip()
                elif line.startswith("totals: ") and label is not None:
                    segments.setdefault(label, []).append(int(line.split()[1]))
                    label = None
        return segments


class Segments:
    """The inner run's switches, loaded from the helper library :func:`run` compiled."""

    def __init__(self, lib: str) -> None:
        self._lib = ctypes.CDLL(lib)
        self._lib.pg_cg_dump.argtypes = [ctypes.c_char_p]
        self.start = self._lib.pg_cg_start
        self.stop = self._lib.pg_cg_stop  # stretches between segments then run ~10× faster, uncounted
        self.zero = self._lib.pg_cg_zero
        self._dump = self._lib.pg_cg_dump

    def dump(self, label: str | bytes) -> None:
        self._dump(label if isinstance(label, bytes) else label.encode())
