"""What a command has read while it recognises its inputs: each folder's listing, each file's head
and the telling keys found in it. Format detection, run discovery, the readers and the list of
skipped files all ask for the same folders and heads; within `scanning()` each folder is walked
once and each head read once. The scan lives in a context variable set for the block, so it
belongs to the command that opened it, not to the process, and is gone when the block ends.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Iterator


@dataclass
class Scan:
    """One command's reads: (folder, data roots) -> (its walk, the folders it did not enter with
    why); path -> (head bytes, whether they are the whole file); (path, needles, cap) -> found."""

    listings: dict[tuple, tuple[list, list]] = field(default_factory=dict)
    heads: dict[str, tuple[bytes, bool]] = field(default_factory=dict)
    found: dict[tuple, frozenset[bytes]] = field(default_factory=dict)


_scan: ContextVar[Scan | None] = ContextVar("ingest_scan", default=None)


def current() -> Scan | None:
    """The scan of the `scanning()` block this code runs in; None outside one (read afresh)."""
    return _scan.get()


@contextmanager
def scanning() -> Iterator[Scan]:
    """Walk each folder and read each file's head once for the duration of the block; a block
    inside another shares the outer one's scan."""
    outer = _scan.get()
    if outer is not None:
        yield outer
        return
    token = _scan.set(Scan())
    try:
        yield _scan.get()
    finally:
        _scan.reset(token)
