"""Known programs and the decided cases of PHASES_LIVE §5, read once: the action layer, the live phases and
the detectors see the same thing (issue #29)."""

from __future__ import annotations

import pytest

from planguard import Guard
from planguard.actions.classify import DEFAULT_CLASSIFIER
from planguard.events import ToolEvent
from planguard.phases import get_rules
from planguard.shell.lexer import tokenize
from planguard.shell.reading import read
from planguard.tools.paths import W_GENERAL, W_SOURCE, W_TEST, write_kind
from planguard.tools.programs import Does, program

_PATCH = "sed -i 's/a/b/' src/pkg/mod.py"
_APPLYPATCH = (
    "applypatch <<'PATCH'\n*** Begin Patch\n*** Update File: src/pkg/mod.py\n@@\n-a\n+b\n*** End Patch\nPATCH"
)


def _letters(*lines: str, cwd: str | None = None) -> list[str]:
    rules = get_rules()
    state = rules.new_state()
    out = []
    for line in lines:
        event = ToolEvent("bash", {"command": line}, metadata={"cwd": cwd} if cwd else {})
        c = rules.classify(event, state)
        state.apply(c)
        out.append(c.letters)
    return out


@pytest.mark.parametrize(
    "line",
    [
        "python -m django test app.tests",
        "python manage.py test app",
        "./manage.py test",
        "django-admin test",
        "npm test",
        "yarn jest",
        "npx vitest run",
        "bundle exec rspec spec/x_spec.rb",
        "bundle exec rake test",
        "pdm run pytest -x",
        "poetry run pytest",
        "uv run pytest -q",
        "nice -n 5 pytest",
        "timeout 60 pytest tests/",
        "env CI=1 pytest",
        "go test ./...",
        "cargo test",
        "mix test",
    ],
)
def test_test_runners_are_regression_runs_everywhere(line: str) -> None:
    assert _letters(line) == ["r"]
    assert _letters(_PATCH, line) == ["P", "v"]
    verdict = DEFAULT_CLASSIFIER.shell.classify(line)
    assert verdict.is_validation


@pytest.mark.parametrize(
    "line",
    [
        "node --check src/app.js",
        "ruby -c lib/a.rb",
        "php -l src/A.php",
        "bash -n scripts/build.sh",
        "python -m py_compile src/pkg/mod.py",
        "npm run build",
        "yarn build",
        "npx tsc --noEmit",
        "mypy src",
        "cargo build",
    ],
)
def test_syntax_checks_and_builds_are_checks(line: str) -> None:
    assert _letters(line) == [""]  # general before the first patch (§5)
    assert _letters(_PATCH, line) == ["P", "v"]
    assert DEFAULT_CLASSIFIER.shell.classify(line).is_validation


def test_older_codex_applypatch_heredoc_in_a_shell_is_a_patch() -> None:
    assert _letters(_APPLYPATCH) == ["P"]
    verdict = DEFAULT_CLASSIFIER.shell.classify(_APPLYPATCH)
    assert verdict.is_source_write and verdict.target == "src/pkg/mod.py"
    argv = ToolEvent("shell", {"command": ["bash", "-lc", _APPLYPATCH]})
    assert get_rules().classify(argv, get_rules().new_state()).letters == "P"


@pytest.mark.parametrize(
    "line",
    [
        "rm -rf __pycache__",
        "rm -rf src/pkg/__pycache__ .pytest_cache",
        "rm -f src/pkg/mod.pyc",
        "rm -rf dist/",
    ],
)
def test_removing_caches_and_build_output_is_not_a_patch(line: str) -> None:
    assert _letters(line) == [""]
    assert not DEFAULT_CLASSIFIER.shell.classify(line).is_source_write


def test_documentation_edits_are_patches_and_notes_are_not() -> None:
    assert _letters("echo 'More.' >> README.md") == ["P"]
    assert _letters("sed -i 's/old/new/' docs/usage.rst") == ["P"]
    assert DEFAULT_CLASSIFIER.shell.classify("echo x >> CHANGELOG.md").is_source_write
    assert _letters("echo 'step 1' > plan.md") == [""]


def test_writes_outside_the_repository_are_not_patches() -> None:
    repo = "/home/dev/proj"
    assert write_kind("/home/dev/notes.txt", root=repo) == W_GENERAL
    assert write_kind("/home/dev/try.py", root=repo) == W_TEST
    assert write_kind("src/a.py", root=repo) == W_SOURCE
    assert _letters("cp dist/app.js /home/dev/bin/app.js", "echo hi > /home/dev/x.txt", cwd=repo) == ["", ""]
    assert _letters("echo x = 1 >> /home/dev/proj/src/a.py", cwd=repo) == ["P"]


def test_checksums_and_listings_navigate() -> None:
    assert _letters("shasum -a 256 dist/app.tgz", "md5sum a.bin", "stat setup.py") == ["N", "N", "N"]
    assert DEFAULT_CLASSIFIER.shell.classify("shasum -a 256 dist/app.tgz").target == "dist/app.tgz"


def test_one_reading_unwraps_nests_tracks_cd_and_loops() -> None:
    ((loop,), (body,), (done,)) = read(tokenize("for f in tests/*.py; do python $f; done"))
    assert loop.loop and done.loop and body.words == ["python", "tests/*.py"]
    ((cd,), (run,)) = read(tokenize("bash -lc 'cd src && sudo -u ci nice -n 5 pdm run pytest -q'"))
    assert cd.words == ["cd", "src"] and run.words == ["pytest", "-q"] and run.cwd == "src"
    ((cat,), (py,)) = read(tokenize("cat > t.py <<'EOF'\nprint(1)\nEOF\npython t.py"))
    assert cat.outputs == ["t.py"] and cat.body == "print(1)\n" and py.words == ["python", "t.py"]
    assert program("python", ["-m", "django", "test"], None).does is Does.TESTS


def test_detectors_see_the_validation_the_phases_see() -> None:
    """``bundle exec rspec``, ``pdm run pytest`` or ``nice -n 5 pytest`` after the last patch: validation
    to the phases (``Pv``) and to ``no_tail_validation`` alike."""
    for runner in ("bundle exec rspec", "pdm run pytest", "nice -n 5 pytest", "python -m django test"):
        session = Guard().session(runner)
        letters = [
            session.observe(ToolEvent("bash", {"command": c})).classification.letters
            for c in (_PATCH, runner)
        ]
        summary = session.end()
        assert letters == ["P", "v"]
        assert "no_tail_validation" not in [f.detector for f in summary.findings], runner
