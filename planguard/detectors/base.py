"""The detector extension point (defined with the other stages in :mod:`planguard.stages`)."""

from ..stages import Detector

__all__ = ["Detector"]
