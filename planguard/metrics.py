"""Langutory and the plan-compliance metrics (PPC, POC, PPF, PC), kept incrementally.

Both structures take one role at a time in O(m) (m = plan length, at most a handful) and keep only
run-length or per-phase state, so a session's cost per event does not grow with its length.
Definitions: PHASE_RULES §5 and the plan-to-action paper §2.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from .phases import LETTER_OF, ROLE_OF_LETTER
from .plan import Plan, phase_matches

__all__ = ["MAX_RUNS", "Langutory", "Compliance", "PlanLayout", "Scores", "lis_length", "score_roles"]

#: Runs a Langutory keeps: the newest ones. Real runs have tens of runs; a session alternating two phases
#: for 100,000 calls had 100,000 runs (11 MB) before the cap.
MAX_RUNS = 2048
# Past this many the oldest runs are folded away at once, so dropping them costs O(1) per run amortised.
_FOLD_AT = MAX_RUNS + MAX_RUNS // 4


class Langutory:
    """A run's phase sequence in run-length form: ``[("L_navigate", 3), ("P", 1), ...]``.

    At most :data:`MAX_RUNS` runs are kept, the newest (what tails, timelines and the current phase read);
    older ones are counted in ``truncated_runs`` and ``truncated_roles``, and :meth:`rle` then starts with
    ``truncated_<roles>``. ``length`` always counts every role. The compliance metrics do not read this
    (:class:`Compliance` keeps first occurrences and distinct phases), so they stay exact.
    """

    __slots__ = ("runs", "length", "truncated_runs", "truncated_roles")

    def __init__(self) -> None:
        self.runs: list[tuple[str, int]] = []
        self.length = 0
        self.truncated_runs = 0
        self.truncated_roles = 0

    def add(self, role: str) -> None:
        self.extend((role,))

    def extend(self, roles: Iterable[str]) -> None:
        # Called for every tool call, nearly always with one role.
        runs = self.runs
        for role in roles:
            self.length += 1
            if runs and runs[-1][0] == role:
                runs[-1] = (role, runs[-1][1] + 1)
            else:
                runs.append((role, 1))
                if len(runs) >= _FOLD_AT:
                    self._fold()

    def _fold(self) -> None:
        cut = len(self.runs) - MAX_RUNS
        self.truncated_roles += sum(int(n) for _, n in self.runs[:cut])
        self.truncated_runs += cut
        del self.runs[:cut]

    @property
    def truncated(self) -> bool:
        return self.truncated_runs > 0

    def rle(self) -> list[str]:
        """The paper's run-length form, e.g. ``["L_navigate_3", "P_1"]`` (``["truncated_N", …]`` when the
        oldest runs, N roles, were folded away)."""
        head = [f"truncated_{self.truncated_roles}"] if self.truncated_runs else []
        return head + [f"{role}_{n}" for role, n in self.runs]

    def letters(self, letter_of: Mapping[str, str] = LETTER_OF) -> str:
        """One letter per role; ``letter_of`` is the rules' letters (a declared plan's phase symbols)."""
        return "".join(letter_of.get(str(role), "X") * int(n) for role, n in self.runs)

    def tail(self, runs: int = 5, letter_of: Mapping[str, str] = LETTER_OF) -> str:
        """The last few runs as compact text (``N3 R1 P2``), for span attributes and timelines."""
        return " ".join(f"{letter_of.get(str(r), '?')}{n}" for r, n in self.runs[-runs:])

    @property
    def current(self) -> str | None:
        return str(self.runs[-1][0]) if self.runs else None

    @classmethod
    def from_letters(cls, letters: str) -> Langutory:
        lang = cls()
        lang.extend(ROLE_OF_LETTER.get(ch, "X_unknown") for ch in letters)
        return lang


@dataclass(frozen=True, slots=True)
class Scores:
    PPC: float
    POC: float
    PPF: float
    PC: float
    lis: int
    m: int
    extra_phases: tuple[str, ...]

    def as_dict(self) -> dict[str, float]:
        return {"PPC": self.PPC, "POC": self.POC, "PPF": self.PPF, "PC": self.PC}


def lis_length(seq: Sequence[int]) -> int:
    """Length of the longest strictly increasing subsequence (patience sorting)."""
    tails: list[int] = []
    for x in seq:
        lo, hi = 0, len(tails)
        while lo < hi:
            mid = (lo + hi) // 2
            if tails[mid] < x:
                lo = mid + 1
            else:
                hi = mid
        if lo == len(tails):
            tails.append(x)
        else:
            tails[lo] = x
    return len(tails)


class PlanLayout:
    """What scoring a run against one plan needs that is the same for every run: the expected order and
    which expected phases each role matches. A pipeline builds one per plan and its sessions share it, so
    a new session does not redo the plan's work."""

    __slots__ = ("plan", "expected", "_match")

    def __init__(self, plan: Plan | Sequence[str]) -> None:
        self.plan = plan if isinstance(plan, Plan) else None
        self.expected: tuple[str, ...] = plan.expected if isinstance(plan, Plan) else tuple(plan)
        # role -> indices of the expected phases it matches; roles are a tiny vocabulary, so this stays small.
        self._match: dict[str, tuple[int, ...]] = {}

    def matches(self, role: str) -> tuple[int, ...]:
        idx = self._match.get(role)
        if idx is None:
            idx = tuple(j for j, e in enumerate(self.expected) if phase_matches(role, e))
            if len(self._match) < 256:
                self._match[role] = idx
        return idx


class Compliance:
    """Incremental PPC/POC/PPF/PC of one run against one plan's expected order."""

    __slots__ = ("layout", "plan", "expected", "first", "extras", "n", "_settled", "_cache")

    def __init__(self, plan: Plan | Sequence[str] | PlanLayout) -> None:
        layout = plan if isinstance(plan, PlanLayout) else PlanLayout(plan)
        self.layout = layout
        self.plan = layout.plan
        self.expected = layout.expected
        self.first: list[int | None] = [None] * len(self.expected)
        self.extras: dict[str, None] = {}  # insertion-ordered set of out-of-plan phase types
        self.n = 0
        # Roles seen before: every phase they match has been reached (at their first occurrence), or they
        # are a recorded extra, so another occurrence changes nothing but the count.
        self._settled: set[str] = set()
        self._cache: Scores | None = None

    def add(self, role: str, at: int | None = None) -> None:
        """Count one role. ``at`` is its position in the run when the caller keeps the count itself (a
        session skips the roles every plan has settled, so this compliance does not see every role)."""
        if at is not None:
            self.n = at
        if role in self._settled:
            self.n += 1
            return
        idx = self.layout.matches(role)
        if idx:
            first = self.first
            for j in idx:
                if first[j] is None:
                    first[j] = self.n
                    self._cache = None
        elif role not in self.extras:
            self.extras[role] = None
            self._cache = None
        self.n += 1
        if len(self._settled) < 256:
            self._settled.add(role)

    def missing(self) -> tuple[str, ...]:
        """Expected phases not reached yet."""
        return tuple(e for e, f in zip(self.expected, self.first, strict=True) if f is None)

    def scores(self) -> Scores:
        if self._cache is not None:
            return self._cache
        m = len(self.expected)
        present = [f for f in self.first if f is not None]
        lis = lis_length(present)
        if m == 0:
            s = Scores(0.0, 0.0, 0.0, 0.0, 0, 0, tuple(self.extras))
        else:
            ppc = len(present) / m
            poc = lis / m
            ppf = m / (m + len(self.extras))
            pc = (ppf * ppc * poc) ** (1 / 3) if ppf and ppc and poc else 0.0
            s = Scores(ppc, poc, ppf, pc, lis, m, tuple(self.extras))
        self._cache = s
        return s


def score_roles(roles: Iterable[str], plan: Plan | Sequence[str]) -> Scores:
    """Scores of a finished role sequence (offline convenience over :class:`Compliance`)."""
    c = Compliance(plan)
    for r in roles:
        c.add(r)
    return c.scores()
