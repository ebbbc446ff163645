"""Tools: a ``ToolEvent`` read once into a ``ToolCall`` (the one vocabulary of tools, programs and paths)."""
