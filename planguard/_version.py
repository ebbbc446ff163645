"""The version of planguard: the single source, read by pyproject.toml (dynamic version) and ``--version``."""

__version__ = "0.2.0"
