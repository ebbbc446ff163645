"""What detectors report: a ``Finding`` names the predicate that held and the steps it held over."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Finding"]


@dataclass(frozen=True, slots=True)
class Finding:
    """A detector's predicate held over steps ``first_step..last_step`` (0-based, inclusive).

    Emitted once when the predicate first holds, and again only after it has reset and holds anew;
    ``at_end`` marks predicates that can only be judged once the run is over.
    """

    detector: str
    first_step: int
    last_step: int
    evidence: str
    data: Mapping[str, Any] = field(default_factory=dict)
    at_end: bool = False
