"""Hostile config text shared by the core's and the hook's hostile-input tests."""

from __future__ import annotations


def alias_bomb() -> str:
    """Nine anchors, each a list of nine aliases of the one before, under a key the config accepts."""
    lines = ['x0: &a ["plan","plan","plan","plan","plan","plan","plan","plan","plan"]']
    prev = "a"
    for name in "bcdefgh":
        lines.append(f"x{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
        prev = name
    lines.append(f"score_plans: *{prev}")
    return "\n".join(lines) + "\n"
