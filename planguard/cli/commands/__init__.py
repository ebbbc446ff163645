"""Subcommands of the ``planguard`` CLI: one module each, exposing ``register(subparsers)``."""
