"""The policy extension point (defined with the other stages in :mod:`planguard.stages`)."""

from ..stages import Policy

__all__ = ["Policy"]
