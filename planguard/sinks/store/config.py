"""The ``store:`` section of planguard's config: the embedded local session store."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["DEFAULT_STORE_PATH", "StoreConfig"]

DEFAULT_STORE_PATH = ".planguard/sessions"


class StoreConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(
        True,
        description="Record sessions as JSONL files, also when exporting over OTLP (nothing is lost while "
        "the collector is down).",
    )
    path: str = Field(DEFAULT_STORE_PATH, description="Directory of session files (one file per session).")
    always: bool = Field(
        False, description="Accepted for older configs: the store now records whenever it is enabled."
    )
    max_queue: int = Field(
        10_000, ge=1, description="Records waiting for the writer at most; more are dropped (or waited for)."
    )
    durability: Literal["drop", "block", "write"] = Field(
        "drop",
        description="A full queue: drop (the record is dropped and counted, the agent never waits; replay "
        "marks the session partial) or block (back-pressure: the agent's thread waits for the writer, "
        "and no record is lost). write: no queue; each record is written to the file (handed to the OS, "
        "not fsync'd) on the agent's thread before the hook returns, so a process killed (SIGKILL) or "
        "ended by os._exit keeps everything recorded before; it costs each call the write (see README "
        "'Reliability').",
    )
    max_result_chars: int = Field(
        4096, ge=0, description="Tool results are cut to this many characters (0: keep whole)."
    )
    content: bool | None = Field(
        None,
        description="Keep tool arguments, results, finding evidence, decision messages and action "
        "targets (redacted unless 'redact' is false). null: only when "
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT opts in; false: never. Without content a "
        "session keeps its metadata: tools, phases, actions, scores.",
    )
    redact: bool = Field(True, description="Redact secrets (keys, tokens, passwords) from stored content.")
