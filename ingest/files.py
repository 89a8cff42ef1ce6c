"""Which files ingest opens, and how: regular files only, under the size cap, and — when the app
confines a load to its data roots — only where the file's resolved path lies under a root.

A FIFO in a log folder would block a reader forever and /dev/zero never ends, so every open is
non-blocking and checked with fstat before a byte is read; the size cap is checked on the size
the file system reports and again on what is actually read (files under /proc report 0 bytes).
A symbolic link inside a data root that points outside it is refused like the outside path
itself: the check is on the resolved path of every file and folder read.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Iterable

from .errors import IngestError
from .limits import ENV, Limits, human
from .scan import current as current_scan

_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a folder"),
)
NOT_REGULAR = "not a regular file"
OUTSIDE = "outside the data roots"

# Set by `confine` (the app's loads, through `python -m ingest --only-under`): None reads anywhere.
_roots: tuple[Path, ...] | None = None


def confine(roots: Iterable[str | os.PathLike] | None) -> None:
    """Read only under these folders from now on in this process (None or empty: anywhere)."""
    global _roots
    resolved = tuple(Path(r).expanduser().resolve() for r in roots or ())
    _roots = resolved or None


def roots() -> tuple[Path, ...] | None:
    return _roots


def outside_roots(path: Path) -> bool:
    """Whether the resolved `path` lies outside the roots set by `confine` (never, unconfined)."""
    if _roots is None:
        return False
    try:
        resolved = Path(path).resolve()
    except (OSError, RuntimeError, ValueError):
        return True
    return not any(resolved == r or r in resolved.parents for r in _roots)


def kind_of(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def refusal(path: Path) -> str | None:
    """Why a file found in a folder is not read (NOT_REGULAR, OUTSIDE), or None. A path that
    cannot be stat'ed is left to the caller (it is reported as unreadable)."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    if outside_roots(path):
        return OUTSIDE
    if not stat.S_ISREG(mode):
        return NOT_REGULAR
    return None


def _outside_message(path: Path) -> str:
    where = ", ".join(str(r) for r in _roots or ())
    return f"{path}: resolves to {Path(path).resolve()}, outside the folders this load may read ({where}); refused"


def _unusable(path: Path, exc: OSError | ValueError, missing: str) -> IngestError:
    if isinstance(exc, ValueError):
        return IngestError(f"{path!r}: not a usable path (it holds a NUL byte)")
    if isinstance(exc, FileNotFoundError):
        return IngestError(f"{path}: {missing}")
    return IngestError(f"{path}: cannot read: {exc.strerror or exc}")


def check_input(path: Path) -> None:
    """A path named on the command line: a folder or a regular file, inside the roots."""
    try:
        st = os.stat(path)
    except (OSError, ValueError) as exc:
        raise _unusable(path, exc, "no such file or folder") from None
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
        raise IngestError(f"{path}: {kind_of(st.st_mode)}, not a regular file; refused")
    if outside_roots(path):
        raise IngestError(_outside_message(path))


def open_regular(path: Path, limits: Limits | None = None) -> int:
    """A file descriptor on a regular file within the size cap (and the roots), else IngestError.

    Opened non-blocking, so that a FIFO is refused instead of waiting for a writer."""
    if outside_roots(path):
        raise IngestError(_outside_message(path))
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except (OSError, ValueError) as exc:
        raise _unusable(path, exc, "file not found") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise IngestError(f"{path}: cannot read: Is a directory")
        if not stat.S_ISREG(st.st_mode):
            raise IngestError(f"{path}: {kind_of(st.st_mode)}, not a regular file; refused")
        cap = (limits or Limits.from_env()).file_bytes
        if st.st_size > cap:
            raise IngestError(_too_big(path, st.st_size, cap))
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _too_big(path: Path, size: int, cap: int, at_least: str = "") -> str:
    return (f"{path}: {at_least}{human(size)}, over the {human(cap)} limit on one file "
            f"(raise {ENV['file_bytes']} to read it)")


def read_capped(path: Path, limits: Limits | None = None) -> bytes:
    """The bytes of a regular file, refused over the size cap (counted while reading, too)."""
    limits = limits or Limits.from_env()
    cap = limits.file_bytes
    fd = open_regular(path, limits)
    try:
        # read(n) sets aside n bytes first: ask for the file's size (+1, to see it grow), not the
        # cap, which cost 0.1 s a 283-run HELM suite; a file that grew is read on up to the cap
        want = min(os.fstat(fd).st_size, cap) + 1
        with os.fdopen(fd, "rb", closefd=False) as handle:
            raw = handle.read(want)
            if len(raw) == want and want <= cap:
                raw += handle.read(cap + 1 - want)
    except OSError as exc:
        raise IngestError(f"{path}: cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if len(raw) > cap:
        raise IngestError(_too_big(path, len(raw), cap, "at least "))
    return raw


def open_text(path: Path, limits: Limits | None = None, encoding: str = "utf-8", newline: str | None = None):
    """A text stream on a regular file within the caps (see `open_regular`)."""
    fd = open_regular(path, limits)
    return open(fd, encoding=encoding, newline=newline)


# While a command recognises its inputs (ingest/scan.py `scanning`), each file is opened once
# however many readers look at it: its head is read this far, and what `holds` found is kept
HEAD_READ = 64 * 1024
SCAN_CHUNK = 1 << 20


def holds(path: Path, needles: tuple[bytes, ...], cap: int) -> frozenset[bytes]:
    """Which of `needles` occur in the first `cap` bytes of a regular file, read a chunk at a time
    (a format's telling keys can lie past its head, after a long first field); the scan stops once
    every needle is found. Empty when the file is not one or cannot be read."""
    key = (str(path), needles, cap)
    scan = current_scan()
    if scan is not None and key in scan.found:
        return scan.found[key]
    found: set[bytes] = set()
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except (OSError, ValueError):
        return frozenset()
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode) and not outside_roots(path):
            os.set_blocking(fd, True)
            overlap, tail, read = max(map(len, needles)) - 1, b"", 0
            while read < cap and len(found) < len(needles) and (chunk := os.read(fd, min(SCAN_CHUNK, cap - read))):
                read += len(chunk)
                window = tail + chunk
                found.update(n for n in needles if n in window)
                tail = window[-overlap:] if overlap else b""
    except OSError:
        pass
    finally:
        os.close(fd)
    if scan is not None:
        scan.found[key] = frozenset(found)
    return frozenset(found)


def head(path: Path, size: int) -> bytes | None:
    """Up to `size` first bytes of a regular file, for recognising its format; None when it is
    not one or cannot be read (a FIFO is never waited on)."""
    scan = current_scan()
    if scan is None:
        return _head(path, size)
    key = str(path)
    known = scan.heads.get(key)
    if known is not None and (known[1] or len(known[0]) >= size):
        return known[0][:size]
    want = max(size, HEAD_READ)
    raw = _head(path, want)
    if raw is None:
        return None
    scan.heads[key] = (raw, len(raw) < want)
    return raw[:size]


def _head(path: Path, size: int) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except (OSError, ValueError):
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode) or outside_roots(path):
            return None
        os.set_blocking(fd, True)
        return os.read(fd, size)
    except OSError:
        return None
    finally:
        os.close(fd)
