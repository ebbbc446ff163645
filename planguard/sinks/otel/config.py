"""The ``telemetry:`` section of planguard's config."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..capture import ENV_CAPTURE, VALID_VALUES, CaptureMode, capture_mode_from_env, parse_capture_mode

__all__ = ["TelemetryConfig"]


class TelemetryConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(True, description="Emit OpenTelemetry spans and metrics.")
    service_name: str = Field("planguard", description="service.name of providers planguard creates.")
    agent_name: str | None = Field(
        None, description="gen_ai.agent.name; also names the session span 'invoke_agent {agent_name}'."
    )
    capture_content: str | None = Field(
        None,
        description=(
            "Tool arguments/results in telemetry: true/false or "
            "NO_CONTENT/SPAN_ONLY/EVENT_ONLY/SPAN_AND_EVENT. "
            f"None reads {ENV_CAPTURE}; off by default. Captured content is redacted off the agent's path."
        ),
    )
    otlp_endpoint: str | None = Field(
        None,
        description=(
            "OTLP base URL (e.g. http://127.0.0.1:6006); over HTTP '/v1/traces' and '/v1/metrics' are "
            "appended. None reads OTEL_EXPORTER_OTLP_ENDPOINT / OTEL_EXPORTER_OTLP_{TRACES,METRICS}_ENDPOINT."
            " Used only when planguard builds its own providers (none passed in, none set globally by the "
            "application)."
        ),
    )
    provider_name: str | None = Field(
        None,
        description=(
            "gen_ai.provider.name on invoke_agent spans (e.g. openai, anthropic). None: the session's "
            "'provider' metadata (the integrations set it from the model), else 'unknown'."
        ),
    )
    tool_spans: Literal["auto", "own", "enrich"] = Field(
        "auto",
        description=(
            "auto/enrich: when the current span is already a tool span for the same call (OpenInference, "
            "an instrumented framework), add planguard's attributes and events to it instead of opening "
            "an execute_tool span of its own; own: always open one. auto also nests under OpenInference's "
            "current span when its LangChain instrumentation is active."
        ),
    )
    console: bool = Field(False, description="Print a live timeline of each session to stderr.")
    max_content_chars: int = Field(4096, ge=0, description="Captured content is cut to this many characters.")
    max_queue_size: int = Field(2048, ge=1, description="Spans (and content jobs) queued for export at most.")
    defer_spans: bool = Field(
        False,
        description=(
            "End tool spans on a background thread: the agent's thread starts each span and sets its "
            "attributes; its events, status and end (and the export of a SimpleSpanProcessor) happen "
            "there. Spans reach the exporter up to 50 ms later."
        ),
    )
    export_timeout_s: float | None = Field(
        None, gt=0, description="Per-request OTLP timeout; None reads OTEL_EXPORTER_OTLP_TIMEOUT (10 s)."
    )
    shutdown_timeout_s: float = Field(
        2.0,
        gt=0,
        description=(
            "Longest the guard's shutdown waits for telemetry to leave (spans first, then the last metrics); "
            "what has not left by then is dropped and counted. Without it a collector that is down held "
            "the app's exit for 10 s (OTLP's own export timeout)."
        ),
    )
    prometheus_port: int | None = Field(
        None,
        ge=0,
        le=65535,
        description="Serve metrics for Prometheus on this port (0: any free port; default "
        "OTEL_EXPORTER_PROMETHEUS_PORT, else 9464, when OTEL_METRICS_EXPORTER=prometheus).",
    )
    prometheus_host: str = Field(
        "127.0.0.1",
        description="Address the Prometheus endpoint binds (when not set here: "
        "OTEL_EXPORTER_PROMETHEUS_HOST, else 127.0.0.1).",
    )

    @field_validator("capture_content", mode="before")
    @classmethod
    def _known_mode(cls, value: object) -> object:
        if isinstance(value, bool):
            return "true" if value else "false"
        if value is not None and (not isinstance(value, str) or parse_capture_mode(value) is None):
            raise ValueError(f"expected one of {', '.join(VALID_VALUES)}, got {value!r}")
        return value

    def capture_mode(self, environ: Mapping[str, str] | None = None) -> CaptureMode:
        mode = parse_capture_mode(self.capture_content)
        return mode if mode is not None else capture_mode_from_env(environ)
