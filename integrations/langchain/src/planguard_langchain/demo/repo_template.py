"""The demo's throw-away repository: a tiny text-statistics package with one real bug and its own tests.

``make_repo(dest)`` writes it; the demo agent then works on it with real tools (read, search, edit, run).
The bug: ``word_count`` splits on single spaces, so runs of whitespace count as extra words
(``word_count("hello  world") == 3``). The existing tests pass because none uses two spaces in a row.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

__all__ = ["FILES", "ISSUE", "make_repo", "temporary_repo"]

ISSUE = (
    "word_count() over-counts when words are separated by more than one space or by a newline: "
    "word_count('hello  world') returns 3, expected 2. Fix it, keep the existing tests passing, and submit."
)

FILES: dict[str, str] = {
    "README.md": """# textstats

Small text statistics: word and line counts, reading time, a command-line tool.

    python -m textstats FILE
""",
    "textstats/__init__.py": '''"""Text statistics."""

from .wordcount import line_count, reading_time, word_count

__all__ = ["word_count", "line_count", "reading_time"]
''',
    "textstats/wordcount.py": '''"""Counting words and lines."""

WORDS_PER_MINUTE = 230


def word_count(text: str) -> int:
    """Number of words in ``text``."""
    if not text.strip():
        return 0
    return len(text.strip().split(" "))


def line_count(text: str) -> int:
    """Number of lines in ``text`` (a final line without a newline counts)."""
    return len(text.splitlines())


def reading_time(text: str) -> float:
    """Minutes an average reader needs for ``text``."""
    return word_count(text) / WORDS_PER_MINUTE
''',
    "textstats/format.py": '''"""Human-readable reports."""

from .wordcount import line_count, reading_time, word_count


def report(text: str) -> str:
    minutes = reading_time(text)
    return f"{word_count(text)} words, {line_count(text)} lines, {minutes:.1f} min read"
''',
    "textstats/__main__.py": '''"""``python -m textstats FILE``"""

import sys

from .format import report


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m textstats FILE", file=sys.stderr)
        return 2
    with open(argv[0], encoding="utf-8") as f:
        print(report(f.read()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
''',
    "tests/__init__.py": "",
    "tests/test_wordcount.py": """import unittest

from textstats import line_count, word_count


class WordCountTest(unittest.TestCase):
    def test_simple(self):
        self.assertEqual(word_count("one two three"), 3)

    def test_empty(self):
        self.assertEqual(word_count(""), 0)
        self.assertEqual(word_count("   "), 0)

    def test_lines(self):
        self.assertEqual(line_count("a\\nb\\n"), 2)


if __name__ == "__main__":
    unittest.main()
""",
    "tests/test_format.py": """import unittest

from textstats.format import report


class ReportTest(unittest.TestCase):
    def test_report(self):
        self.assertEqual(report("one two"), "2 words, 1 lines, 0.0 min read")


if __name__ == "__main__":
    unittest.main()
""",
}


def make_repo(dest: Path) -> Path:
    """Write the repository under ``dest`` (created if needed) and return it."""
    dest.mkdir(parents=True, exist_ok=True)
    for rel, text in FILES.items():
        path = dest / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return dest


def temporary_repo() -> tempfile.TemporaryDirectory[str]:
    """A temporary directory holding a fresh copy (``with temporary_repo() as root: ...``)."""
    tmp = tempfile.TemporaryDirectory(prefix="planguard-demo-")
    make_repo(Path(tmp.name))
    return tmp
