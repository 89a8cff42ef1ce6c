"""Opening the DuckDB store.

DuckDB lets one process write *or* many processes read a file, never both at once. Faultline's
rule is that nobody holds the file for long: readers (the dashboard) open short read-only
connections, writers (ingest, analysis) do their slow work (parsing, LLM calls) outside the lock
and open a write session only to insert what is ready. Both sides retry while the other holds
the lock, so the app keeps reading while a CLI writes.

The app asks for a *lingering* read connection: one read-only database kept open for at most
`linger` seconds after its last query, so that the dozen queries of one page (and the next
click) do not each pay for opening the file. A writer announces itself before it waits for the
lock by holding a shared flock on `<db>.writer.lock`; a lingering reader that sees the
announcement lets go of the file at once and goes back to one connection per query.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import random
import stat
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Iterator

import duckdb

try:
    import fcntl
except ImportError:  # not POSIX: writers cannot announce themselves, so readers never linger
    fcntl = None

from . import remote, trust
from .errors import EmptyStoreError, OutdatedStoreError, StoreError
from .migrations import MIGRATIONS, migrate
from .writes import transaction, write_failure

DEFAULT_DB = Path(__file__).resolve().parent.parent / "data" / "faultline.duckdb"
ENV_VAR = "FAULTLINE_DB"
LOCK_TIMEOUT_S = float(os.environ.get("FAULTLINE_LOCK_TIMEOUT", "120"))


def db_spec(db: str | os.PathLike | None = None) -> str:
    """What the user named: `--db`, else env FAULTLINE_DB, else data/faultline.duckdb; a path
    or the URL of a store elsewhere (store/remote.py)."""
    return str(db or os.environ.get(ENV_VAR) or DEFAULT_DB)


def is_remote_db(db: str | os.PathLike | None = None) -> bool:
    """Whether the store is at a URL (and so read-only)."""
    return remote.is_remote(db_spec(db))


def resolve_db_path(db: str | os.PathLike | None = None) -> Path:
    """The file to open: `--db PATH`, else env FAULTLINE_DB, else data/faultline.duckdb; for a
    store at a URL, its verified local copy (fetched or revalidated here)."""
    spec = db_spec(db)
    if remote.is_remote(spec):
        return remote.local_copy(spec)
    return Path(spec)


def writable_db_path(db: str | os.PathLike | None = None) -> Path:
    """The file a command that writes may open; a store at a URL is refused before any work."""
    spec = db_spec(db)
    if remote.is_remote(spec) or remote.is_copy(spec):
        raise remote.RemoteStoreError(
            f"{remote.display(spec)}: a store at a URL is read-only; to change it, download the file, "
            "run the command on that copy (--db FILE) and publish it again (docs/hosting.md)"
        )
    return Path(spec)


def _is_lock_conflict(exc: Exception) -> bool:
    text = str(exc)
    # the second case: this process holds the file open the other way (the app's review write
    # while another session reads), which clears as soon as that connection closes
    return ("lock" in text.lower() and ("Conflicting" in text or "Could not set lock" in text)) or (
        "different configuration" in text)


def _open(path: Path, read_only: bool, timeout: float, **access) -> duckdb.DuckDBPyConnection:
    """A connection that can reach nothing but the store (store/trust.py; `access`: the settings
    and allow-lists `trust.connect` takes), retried while another process holds the file."""
    deadline = time.monotonic() + timeout
    delay = 0.005
    while True:
        try:
            return trust.connect(str(path), read_only, **access)
        except (duckdb.IOException, duckdb.ConnectionException) as exc:
            if not _is_lock_conflict(exc):
                if _is_empty_file(path):
                    if read_only:
                        raise EmptyStoreError(f"{path}: {NO_DATA}") from None
                    # DuckDB will not open a 0-byte file; it holds nothing, so start it afresh
                    path.unlink()
                    continue
                refused = None if read_only else write_failure(path, exc)
                raise refused or StoreError(f"{path}: cannot open the database: {_first_line(exc)}") from None
            if time.monotonic() > deadline:
                raise StoreError(
                    f"{path}: another process has held the database for over {timeout:.0f} s; "
                    "try again when it has finished"
                ) from None
        except duckdb.Error as exc:
            raise StoreError(f"{path}: not a usable DuckDB database: {_first_line(exc)}") from None
        # jitter so that two waiting processes do not retry in lockstep
        time.sleep(delay * (0.5 + random.random()))
        delay = min(delay * 1.6, 0.1)


_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


def refuse_irregular(path: Path) -> None:
    """StoreError unless the store (and its WAL, when there is one) is a regular file: DuckDB
    would wait forever on a named pipe and read a device to no end."""
    for p in (path, path.with_name(path.name + ".wal")):
        try:
            mode = os.stat(p).st_mode
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise StoreError(f"{p}: cannot look at the store file: {exc.strerror or exc}") from None
        if not stat.S_ISREG(mode):
            kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
            raise StoreError(f"{p}: {kind}, not a store file; give the path of a DuckDB file (--db)")


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


NO_DATA = "no data yet; load logs with `python -m ingest PATH`"


def _is_empty_file(path: Path) -> bool:
    try:
        return path.stat().st_size == 0
    except FileNotFoundError:
        return False


def is_duckdb_file(path: Path) -> bool:
    """Whether `path` is a DuckDB database file (its header's magic bytes)."""
    try:
        with open(path, "rb") as handle:
            return handle.read(12)[8:12] == b"DUCK"
    except OSError:
        return False


def _trusted(con: duckdb.DuckDBPyConnection, path: Path, writable: bool = False) -> list[str]:
    """The migrations the store records, once its schema is known to be Faultline's own: a store
    a newer Faultline wrote, or one whose views, macros or tables differ from what those
    migrations create, is refused before anything reads it (store/trust.py). Staging views a
    killed ingest of an earlier Faultline left are removed by a writer, and said."""
    state = trust.file_state(path)  # taken while this connection holds the file
    known = trust.checked(state)
    if known is not None:
        return list(known)
    applied = trust.trusted_migrations(con, str(path))
    if left := trust.staging_leftovers(con):
        if writable:
            with transaction(con):
                for name in left:
                    con.execute(f"DROP VIEW main.{name}")
            state = trust.file_state(path)
        _note(f"{path}: an ingest killed while it wrote left {len(left)} staging view(s) in the store "
              f"({', '.join(left)}); " + ("removed them (the store's data is as its last complete write left it)"
                                         if writable else "they are never read, and the next command that "
                                         "writes to the store removes them"))
    trust.remember(state, applied)
    return applied


def _note(message: str) -> None:
    """Say on stderr, once per process and message, what a user should know about the store."""
    if message not in _noted:
        _noted.add(message)
        print(f"note: {message}", file=sys.stderr)


_noted: set[str] = set()


def _check_ready(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    """UntrustedStoreError for a store whose schema is not Faultline's; EmptyStoreError for a
    store never set up; OutdatedStoreError for one an older Faultline wrote (migrations missing:
    the queries would meet tables and columns it lacks)."""
    applied = _trusted(con, path)
    if "001_core_tables" not in applied:
        raise EmptyStoreError(f"{path}: {NO_DATA}")
    missing = [name for name, _ in MIGRATIONS if name not in applied]
    if missing:
        raise OutdatedStoreError(path, missing)


def _connect(path: Path, timeout: float, linger: float) -> tuple[duckdb.DuckDBPyConnection, Callable[[], None]]:
    """A ready read-only connection (or a cursor on the lingering one) and how to give it back."""
    cursor = _READERS.cursor(path, timeout, linger) if linger > 0 and fcntl else None
    if cursor is not None:
        def done() -> None:
            cursor.close()
            _READERS.done()

        return cursor, done
    con = _open_ready(path, timeout)
    return con, con.close


def _open_ready(path: Path, timeout: float) -> duckdb.DuckDBPyConnection:
    """A read-only connection on a set-up, current store (see `_check_ready`)."""
    con = _open(path, read_only=True, timeout=timeout)
    try:
        _check_ready(con, path)
    except BaseException:
        con.close()
        raise
    return con


@contextlib.contextmanager
def read_connection(db: str | os.PathLike | None = None, timeout: float = LOCK_TIMEOUT_S,
                    linger: float = 0.0, upgrade: bool = True) -> Iterator[duckdb.DuckDBPyConnection]:
    """A read-only connection; the file is released on exit, or with `linger` > 0 up to that
    many seconds later (at once when a writer announces itself): see the module docstring.

    A missing, 0-byte or never set-up file raises EmptyStoreError: an empty store, not a fault.
    A store an older Faultline wrote is upgraded first (its missing migrations applied) when
    `upgrade` and this process may write it; otherwise OutdatedStoreError says how to upgrade it.
    """
    path = resolve_db_path(db)
    if not path.exists():
        raise EmptyStoreError(f"{path}: no database here yet; load logs with `python -m ingest PATH`")
    refuse_irregular(path)
    try:
        con, done = _connect(path, timeout, linger)
    except OutdatedStoreError:
        # a store at a URL was upgraded in its copy when fetched; the copy is never written here
        if not upgrade or not _writable(path) or remote.is_copy(str(path)):
            raise
        upgrade_store(path, timeout)
        con, done = _connect(path, timeout, linger)
    try:
        yield con
    finally:
        done()


def _writable(path: Path) -> bool:
    return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)


def upgrade_store(db: str | os.PathLike | None = None, timeout: float = LOCK_TIMEOUT_S) -> list[str]:
    """Apply the migrations a store lacks (`python -m ingest --migrate DB`); returns their names."""
    path = resolve_db_path(db)
    if not path.exists():
        raise EmptyStoreError(f"{path}: no database here")
    with _writing(path, timeout) as (_, applied):
        return applied


WRITER_SUFFIX = ".writer.lock"


def _writer_lock_path(path: Path) -> Path:
    return path.with_name(path.name + WRITER_SUFFIX)


@contextlib.contextmanager
def _announce_writer(path: Path) -> Iterator[None]:
    """Hold a shared flock on `<db>.writer.lock` for as long as this writer waits or writes; the
    last writer out removes the file."""
    lock = _writer_lock_path(path)
    if fcntl is None:
        yield
        return
    while True:
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError:
            yield  # a folder we may not write: the write itself will say so
            return
        fcntl.flock(fd, fcntl.LOCK_SH)
        # the previous last writer may have removed the file between our open and our lock: a
        # lock on a removed file announces nothing, so take it again on the file now there
        try:
            if os.stat(lock).st_ino == os.fstat(fd).st_ino:
                break
        except FileNotFoundError:
            pass
        os.close(fd)
    try:
        yield
    finally:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            lock.unlink(missing_ok=True)
        except BlockingIOError:
            pass  # another writer is announced (or a reader is looking): leave it the file
        finally:
            os.close(fd)


def _writer_waiting(path: Path) -> bool:
    """Whether a writer holds the announcement lock (a left-over file with no holder is none)."""
    if fcntl is None:
        return False
    try:
        fd = os.open(_writer_lock_path(path), os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


class _LingeringReader:
    """One read-only database per process, open while queries come at most `linger` s apart.

    Each query gets its own cursor (DuckDB cursors may be used from different threads, one per
    Streamlit session). While the database is open a watcher thread closes it once it has been
    idle for `linger` s, or as soon as no query runs on it and a writer has announced itself;
    this process closes it itself before writing (`release`)."""

    POLL_S = 0.05

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._con: duckdb.DuckDBPyConnection | None = None
        self._path: Path | None = None
        self._file: int | None = None  # the inode opened
        self._users = 0
        self._last_used = 0.0
        self._linger = 0.0
        self._opened = 0  # which opening the watcher thread watches (it holds no connection)

    def cursor(self, path: Path, timeout: float, linger: float) -> duckdb.DuckDBPyConnection | None:
        """A cursor on the lingering database, or None: use a connection of your own."""
        if _writer_waiting(path):
            return None
        try:
            file = os.stat(path).st_ino
        except FileNotFoundError:
            return None
        with self._lock:
            # another store, or this one replaced by a rename (the demo store rebuilt)
            if self._con is not None and (self._path, self._file) != (path, file):
                if self._users:
                    return None
                self._close()
            if self._con is None:
                con = _open_ready(path, timeout)
                self._con, self._path, self._file = con, path, file
                self._opened += 1
                threading.Thread(target=self._watch, args=(self._opened,), daemon=True,
                                 name="faultline-read-linger").start()
            self._linger = linger
            self._users += 1
            return self._con.cursor()

    def done(self) -> None:
        with self._lock:
            self._users -= 1
            self._last_used = time.monotonic()
            if self._users == 0:
                self._lock.notify_all()

    def _watch(self, opened: int) -> None:
        while True:
            time.sleep(self.POLL_S)
            with self._lock:
                if self._con is None or self._opened != opened:
                    return
                if self._users:
                    continue
                if time.monotonic() - self._last_used >= self._linger or _writer_waiting(self._path):
                    self._close()
                    return

    def release(self, wait: float = LOCK_TIMEOUT_S) -> None:
        """Close the database as soon as the queries running on it have finished."""
        with self._lock:
            self._lock.wait_for(lambda: self._users == 0, timeout=wait)
            if self._users == 0:
                self._close()

    def _close(self) -> None:
        if self._con is not None:
            self._con.close()
        self._con = self._path = None


_READERS = _LingeringReader()
# an open database at interpreter exit makes DuckDB's bindings complain on stderr
atexit.register(_READERS.release, 0)


def release_read_connections() -> None:
    """Close this process's lingering read connection now (after its running queries)."""
    _READERS.release()


@contextlib.contextmanager
def write_session(db: str | os.PathLike | None = None, timeout: float = LOCK_TIMEOUT_S,
                  **access) -> Iterator[duckdb.DuckDBPyConnection]:
    """A read-write connection on a migrated store, held only for the `with` block.

    Callers open their own transactions inside; keep the block short. A write the file system
    refuses (disk full, a folder that cannot be written) is a StoreError saying so. Like every
    connection it reaches no file but the store: `access` passes the settings and allow-lists
    of `store.trust.connect` (a merge's source stores, an ingest's staging folder).
    """
    with _writing(writable_db_path(db), timeout, **access) as (con, _):
        yield con


@contextlib.contextmanager
def _writing(path: Path, timeout: float, **access) -> Iterator[tuple[duckdb.DuckDBPyConnection, list[str]]]:
    """A migrated read-write connection and the migrations applied to open it (`access`: what
    `trust.connect` takes besides the store)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        refuse_irregular(path)
        with _announce_writer(path):
            # this process's own lingering reader would keep the file open the other way
            _READERS.release()
            con = _open(path, read_only=False, timeout=timeout, **access)
            wrote = False
            try:
                _trusted(con, path, writable=True)
                yield con, migrate(con)
                wrote = True
            finally:
                con.close()
            if wrote:  # what this session wrote is Faultline's own: its next opening need not re-check it
                trust.remember(trust.file_state(path), [name for name, _ in MIGRATIONS])
    except (duckdb.Error, OSError) as exc:
        refused = write_failure(path, exc)
        if refused is None:
            raise
        raise refused from None


def data_version(db: str | os.PathLike | None = None) -> tuple:
    """Changes whenever a writer has committed; used to key the app's caches."""
    path = resolve_db_path(db)
    parts = []
    for p in (path, path.with_name(path.name + ".wal")):
        try:
            st = p.stat()
            parts.append((st.st_mtime_ns, st.st_size))
        except FileNotFoundError:
            parts.append(None)
    return (str(path), *parts)
