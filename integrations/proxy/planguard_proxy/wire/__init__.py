"""Model API wire formats the proxy understands."""

from __future__ import annotations

from .anthropic import AnthropicWire
from .base import Decide, StreamTranslator, ToolCall, ToolResult, Wire, text_of
from .openai import OpenAIWire
from .responses import ResponsesWire

__all__ = [
    "WIRES",
    "AnthropicWire",
    "Decide",
    "OpenAIWire",
    "ResponsesWire",
    "StreamTranslator",
    "ToolCall",
    "ToolResult",
    "Wire",
    "text_of",
]

WIRES: dict[str, Wire] = {"openai": OpenAIWire(), "anthropic": AnthropicWire(), "responses": ResponsesWire()}
