"""``json.loads`` for the loaders, within the one document reader's nesting limit
(:data:`planguard.documents.MAX_DEPTH`).

Trajectories come from outside, so the limit of every other reader applies (a 100,000-deep line must be one
clear error, whatever the recursion limit, and nothing recursive downstream may meet a value nested past
it): text nested deeper than ``MAX_DEPTH`` raises :class:`~planguard.documents.DocumentError` (a
``ValueError``), as ``loads_json`` does. Otherwise the value and the exception are ``json.loads``' own (the
loaders' error messages name its column).
"""

from __future__ import annotations

import json
from typing import Any

from ...documents import MAX_DEPTH, check_depth, too_deep

__all__ = ["loads"]


def loads(data: bytes | str) -> Any:
    """``json.loads(data)``'s value or exception; a document nested deeper than ``MAX_DEPTH`` is a
    :class:`~planguard.documents.DocumentError`."""
    try:
        value = json.loads(data)
    except RecursionError:
        raise too_deep() from None
    # Only a text with more openers than the limit can be nested past it; most texts skip the walk.
    openers = (
        data.count(b"[") + data.count(b"{") if isinstance(data, bytes) else data.count("[") + data.count("{")
    )
    return check_depth(value) if openers > MAX_DEPTH else value
