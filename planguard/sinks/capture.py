"""Whether tool-call content (arguments, results, evidence) may leave the process, and where it goes.

Read from ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` as the OpenTelemetry GenAI
instrumentations do: the old boolean form (``true``/``false``) and the new enum form (``NO_CONTENT``,
``SPAN_ONLY``, ``EVENT_ONLY``, ``SPAN_AND_EVENT``). Off unless set; an unknown value is off, with a warning.

:class:`ContentPolicy` is what every sink (store, webhook, console; the OTel sink reads the mode itself)
asks before writing content: metadata only unless the sink's own opt-in or the variable says otherwise, and
then always through the one redaction pass (:mod:`planguard.sinks.redact`), cut after redaction starts.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from ..decisions import is_own_text
from .redact import Redactor, redact_text, redact_value

__all__ = [
    "ENV_CAPTURE",
    "VALID_VALUES",
    "CaptureMode",
    "ContentPolicy",
    "capture_mode_from_env",
    "parse_capture_mode",
]

ENV_CAPTURE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
_log = logging.getLogger("planguard.sinks.otel")


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


# The old boolean form (its true put content on the span).
_ALIASES = {
    **dict.fromkeys(("true", "1", "yes"), CaptureMode.SPAN_ONLY),
    **dict.fromkeys(("false", "0", "no", ""), CaptureMode.NO_CONTENT),
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


@dataclass(frozen=True, slots=True)
class ContentPolicy:
    """What one sink may write of tool-call content — arguments, results, finding evidence, decision
    messages that quote the calls, action targets: nothing (``include`` False, metadata only: the default
    for everything that leaves the process), or the content redacted (``redact``) and cut to
    ``max_chars`` after redaction."""

    include: bool = False
    max_chars: int = 4096
    redact: bool = True
    redactor: Redactor | None = None

    @classmethod
    def resolve(
        cls,
        opt_in: bool | None,
        *,
        max_chars: int = 4096,
        redact: bool = True,
        redactor: Redactor | None = None,
    ) -> ContentPolicy:
        """The sink's own setting when it has one (``opt_in`` True/False), else what
        ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` says (any mode but ``NO_CONTENT``: include)."""
        include = opt_in if opt_in is not None else capture_mode_from_env().enabled
        return cls(include, max_chars, redact, redactor)

    def text(self, text: str | None, max_chars: int | None = None) -> str | None:
        """``text`` as the sink may write it: None without content, else redacted and cut."""
        if not self.include or text is None:
            return None
        limit = self.max_chars if max_chars is None else max_chars
        if not self.redact:
            return text if limit <= 0 or len(text) <= limit else text[:limit]
        return redact_text(text, limit, self.redactor)

    def value(self, value: Any) -> Any:
        """A structure (tool arguments) as the sink may write it: None without content, else redacted."""
        if not self.include:
            return None
        return redact_value(value, self.redactor) if self.redact else value

    def clean(self, value: Any) -> Any:
        """Metadata (session facts, call ids) — written either way, redacted unless redaction is off."""
        return redact_value(value, self.redactor) if self.redact else value

    def clean_text(self, text: str) -> str:
        """:meth:`clean` for a text (a tool or program name, an id): redacted unless redaction is off."""
        return redact_text(text, 0, self.redactor) if self.redact else text

    def message(self, decision: Any, max_chars: int | None = None) -> str | None:
        """A decision's message as the sink may write it. planguard's own text (a plan reminder, a gate's
        refusal from its template: :func:`~planguard.decisions.is_own_text`) is metadata, written either
        way (redacted). Any other is content: a message answering a finding quotes its evidence, a
        recorded harness denial the harness's reason, and a custom policy's may quote the call."""
        text = decision.message
        if not text:
            return None
        if not is_own_text(decision):
            return self.text(text, max_chars)
        return self.clean_text(text)
