"""The brackets of a JSON text that lie outside its strings, and the depth each leaves, found a
chunk at a time with array operations (numpy) instead of a Python step per token.

A sample member is hundreds of megabytes of a few thousand events; a parser that hands Python
one token at a time spends most of its time handing (about ten million tokens per 100 MB). This
scan finds where each event and each top-level value begins and ends, so each is parsed whole
by orjson in C. It only locates: every byte it places is still parsed by a real JSON parser
(stream.py), so a text it misreads is refused there, never read wrong.
"""

from __future__ import annotations

import numpy as np

QUOTE, BACKSLASH, OPEN, CLOSE = 1, 2, 3, 4
# each byte's part in the structure: one table look-up and one search find every byte that matters
_CLASS = np.zeros(256, dtype=np.uint8)
_CLASS[ord('"')], _CLASS[ord("\\")] = QUOTE, BACKSLASH
for _open, _close in (b"[]", b"{}"):
    _CLASS[_open], _CLASS[_close] = OPEN, CLOSE


class StructureScan:
    """Carries what a chunk leaves open for the next one: inside a string or not, the backslashes
    the chunk ended with, and the nesting depth."""

    def __init__(self) -> None:
        self.in_string = False
        self.backslashes = 0  # the run of backslashes the last chunk ended with
        self.depth = 0

    def brackets(self, chunk: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(offset in `chunk`, depth after it, whether it opens) of each bracket outside a
        string, in order: an opening bracket's depth is that of the value it opens (the
        top-level value's is 1), a closing one's that of the value around it."""
        classes = _CLASS[np.frombuffer(chunk, dtype=np.uint8)]
        marked = np.flatnonzero(classes)
        kinds = classes[marked]
        quotes = marked[kinds == QUOTE]
        backslashes = marked[kinds == BACKSLASH]
        brackets = kinds >= OPEN
        at, opens = marked[brackets], kinds[brackets] == OPEN
        if quotes.size and (backslashes.size or self.backslashes):
            quotes = quotes[~self._escaped(quotes, backslashes)]
        if at.size and quotes.size:
            outside = (np.searchsorted(quotes, at) + self.in_string) % 2 == 0
            at, opens = at[outside], opens[outside]
        elif self.in_string:
            at, opens = at[:0], opens[:0]
        depth = self.depth + np.cumsum(np.where(opens, 1, -1))
        if depth.size:
            self.depth = int(depth[-1])
        self.in_string ^= bool(quotes.size % 2)
        self.backslashes = self._trailing(len(chunk), backslashes)
        return at, depth, opens

    def _runs(self, backslashes: np.ndarray) -> np.ndarray:
        """For each backslash, the index (into `backslashes`) of the first of its run."""
        starts = np.ones(backslashes.size, dtype=bool)
        starts[1:] = np.diff(backslashes) != 1
        return np.maximum.accumulate(np.where(starts, np.arange(backslashes.size), 0))

    def _escaped(self, quotes: np.ndarray, backslashes: np.ndarray) -> np.ndarray:
        """Whether each quote follows an odd run of backslashes (counting the previous chunk's)."""
        escaped = np.zeros(quotes.size, dtype=bool)
        if quotes[0] == 0 and self.backslashes % 2:
            escaped[0] = True
        if not backslashes.size:
            return escaped
        first = self._runs(backslashes)
        before = np.searchsorted(backslashes, quotes - 1)  # the backslash just before, if any
        found = before < backslashes.size
        found[found] = backslashes[before[found]] == quotes[found] - 1
        j = before[found]
        run = j - first[j] + 1 + np.where(backslashes[first[j]] == 0, self.backslashes, 0)
        escaped[found] = run % 2 == 1
        return escaped

    def _trailing(self, size: int, backslashes: np.ndarray) -> int:
        if not backslashes.size or backslashes[-1] != size - 1:
            return 0
        first = int(self._runs(backslashes)[-1])
        run = backslashes.size - first
        return run + self.backslashes if backslashes[first] == 0 else run
