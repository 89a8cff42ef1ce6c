"""How a write ends: all of it in one transaction, or none of it — and when the disk or the
folder refuses it, a message saying so instead of DuckDB's follow-up error ("cannot rollback -
no transaction is active", which is what a failed COMMIT leaves for the ROLLBACK after it)."""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path
from typing import Iterator

import duckdb

from .errors import StoreError

_NO_SPACE = ("No space left on device", "Disk quota exceeded", "File too large")
_NOT_WRITABLE = ("Permission denied", "Read-only file system", "Operation not permitted")


def insert_row(table: str, columns: tuple[str, ...]) -> str:
    """`INSERT INTO table (columns) VALUES (?, …)`: one row, its columns as core/schema.py declares them."""
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"


@contextlib.contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """BEGIN … COMMIT; on any error ROLLBACK (when a transaction is still open) and re-raise."""
    con.execute("BEGIN")
    try:
        yield con
        con.execute("COMMIT")
    except BaseException:
        try:
            con.execute("ROLLBACK")
        except duckdb.Error:
            pass  # a COMMIT that failed has already ended the transaction
        raise


def write_failure(path: Path, exc: BaseException) -> StoreError | None:
    """The user's message for a write the file system refused (disk full, quota, a folder that
    cannot be written), or None for any other error."""
    if isinstance(exc, OSError) and exc.errno is not None:
        reason = os.strerror(exc.errno)
    elif isinstance(exc, (duckdb.Error, OSError)):
        reason = str(exc)
    else:
        return None
    folder = Path(path).parent
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG) or any(
            s in reason for s in _NO_SPACE):
        return StoreError(
            f"no space left on the device holding {folder} (writing {Path(path).name}); nothing of this "
            "write was stored — free some space there, or give --db a store on another disk")
    if isinstance(exc, OSError) and exc.errno in (errno.EACCES, errno.EROFS, errno.EPERM) or any(
            s in reason for s in _NOT_WRITABLE):
        why = next((s for s in _NOT_WRITABLE if s in reason), reason)
        return StoreError(f"{folder}: cannot write the database here ({why}); nothing was stored — "
                          "give --db a store in a folder you can write")
    return None
