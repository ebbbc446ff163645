"""Whether tool-call content (arguments, results, evidence) may leave the process, and where it goes.

Read from ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` as the OpenTelemetry GenAI
instrumentations do: the old boolean form (``true``/``false``) and the new enum form (``NO_CONTENT``,
``SPAN_ONLY``, ``EVENT_ONLY``, ``SPAN_AND_EVENT``). Off unless set; an unknown value is off, with a warning.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from enum import StrEnum

__all__ = ["ENV_CAPTURE", "VALID_VALUES", "CaptureMode", "capture_mode_from_env", "parse_capture_mode"]

ENV_CAPTURE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
_log = logging.getLogger("planguard.telemetry")


class CaptureMode(StrEnum):
    NO_CONTENT = "NO_CONTENT"
    SPAN_ONLY = "SPAN_ONLY"
    EVENT_ONLY = "EVENT_ONLY"
    SPAN_AND_EVENT = "SPAN_AND_EVENT"

    @property
    def enabled(self) -> bool:
        return self is not CaptureMode.NO_CONTENT

    @property
    def on_span(self) -> bool:
        return self in (CaptureMode.SPAN_ONLY, CaptureMode.SPAN_AND_EVENT)

    @property
    def as_event(self) -> bool:
        return self in (CaptureMode.EVENT_ONLY, CaptureMode.SPAN_AND_EVENT)


_ALIASES = {
    "true": CaptureMode.SPAN_ONLY,  # the old boolean form put content on the span
    "1": CaptureMode.SPAN_ONLY,
    "yes": CaptureMode.SPAN_ONLY,
    "false": CaptureMode.NO_CONTENT,
    "0": CaptureMode.NO_CONTENT,
    "no": CaptureMode.NO_CONTENT,
    "": CaptureMode.NO_CONTENT,
}
VALID_VALUES = ("true", "false", *(m.value for m in CaptureMode))


def parse_capture_mode(value: str | bool | None) -> CaptureMode | None:
    """The mode a setting names, or ``None`` when it names none (the caller decides what that means)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return CaptureMode.SPAN_ONLY if value else CaptureMode.NO_CONTENT
    text = value.strip()
    alias = _ALIASES.get(text.lower())
    if alias is not None:
        return alias
    try:
        return CaptureMode(text.upper())
    except ValueError:
        return None


def capture_mode_from_env(environ: Mapping[str, str] | None = None) -> CaptureMode:
    env = os.environ if environ is None else environ
    raw = env.get(ENV_CAPTURE)
    if raw is None:
        return CaptureMode.NO_CONTENT
    mode = parse_capture_mode(raw)
    if mode is None:
        _log.warning(
            "%s=%r is not one of %s; content capture stays off", ENV_CAPTURE, raw, ", ".join(VALID_VALUES)
        )
        return CaptureMode.NO_CONTENT
    return mode
