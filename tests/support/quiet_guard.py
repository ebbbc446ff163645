"""A planguard config for tests that bring their own sinks: no exporters, no local store."""

from __future__ import annotations

from typing import Any

from planguard.config import Config


def quiet_config(**overrides: Any) -> Config:
    """``Config`` with telemetry and the store off; ``overrides`` are further top-level sections."""
    return Config.model_validate({"telemetry": {"enabled": False}, "store": {"enabled": False}, **overrides})
