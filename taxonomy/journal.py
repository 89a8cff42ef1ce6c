"""The journal of paid answers: an append-only JSONL file next to the database.

Every answer an LLM run receives (its cache row) and every request it sends (its llm_calls row)
is appended here the moment it arrives, before it is queued for the database, and synced to disk
before each commit. When the store cannot take it (another process holds the file past the lock
timeout, the process is killed between an answer and its commit), the paid answers are still on
disk: the next run stores them before it sends anything, and serves them from the cache.

Storing is idempotent (cache rows by key; call rows by model, time and latency, which no two
requests share), so a journal that outlived a commit (killed between the commit and the
truncation) is harmless. The journal is truncated whenever everything in it has been committed,
and removed when a run ends with everything stored.
"""

from __future__ import annotations

import errno
import json
import os
from datetime import datetime
from pathlib import Path

from ingest.errors import IngestError
from ingest.files import open_regular
from ingest.jsonio import try_parse
from store import StoreError, write_session
from store.analysis import Batch, save_recovered

SUFFIX = ".llm-journal.jsonl"


def journal_path(db: Path) -> Path:
    """Beside the store's real file: every symbolic link to one store finds the same journal."""
    real = Path(os.path.realpath(db))
    return real.with_name(real.name + SUFFIX)


def pointer_path(db: Path) -> Path | None:
    """A link, in the folder every process on the machine shares for its locks (runlock.py), to
    the journal a run of this store file (by device and inode) is writing: a hard link in
    another folder has a journal of its own name, and the next run through any name must find
    what a killed run kept."""
    from .runlock import _identity, machine_folder

    folder = machine_folder()
    try:
        return None if folder is None else folder / f"{_identity(db)}{SUFFIX}"
    except OSError:
        return None


def _journals(db: Path) -> list[Path]:
    """The journals that may hold paid answers for this store: its own, and the one a run
    through another hard link kept (when it still sits beside a name of this very file)."""
    own = journal_path(db)
    found = [own]
    pointer = pointer_path(db)
    if pointer is not None:
        try:
            other = Path(os.readlink(pointer))
        except OSError:
            return found
        store_name = other.with_name(other.name[:-len(SUFFIX)]) if other.name.endswith(SUFFIX) else None
        try:
            if other != own and store_name is not None and other.exists() and os.path.samefile(store_name, db):
                found.append(other)
        except OSError:
            pass
    return found


def _call_json(row: tuple) -> list:
    return [*row[:-1], row[-1].isoformat()]


def _call_row(item: list) -> tuple:
    return (*item[:-1], datetime.fromisoformat(item[-1]))


class Journal:
    def __init__(self, db: Path):
        self.path = journal_path(db)
        self.pointer = pointer_path(db)
        self._fd: int | None = None
        # answers appended and not yet committed: what a failed run reports as kept
        self.pending_answers = 0

    def append(self, batch: Batch) -> None:
        if not (batch.cache or batch.calls):
            return
        if self._fd is None:
            # non-blocking: a FIFO at the journal's name fails here (no reader) instead of hanging
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NONBLOCK, 0o644)
            self._point()
        line = json.dumps({"cache": batch.cache, "calls": [_call_json(c) for c in batch.calls]}, ensure_ascii=False)
        # one write per line: with O_APPEND it lands whole at the end, and once written it
        # survives the process being killed
        data = (line + "\n").encode("utf-8")
        if os.write(self._fd, data) < len(data):
            # a disk that filled mid-line: the cut line is skipped on recovery, its answers are not kept
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self.path))
        self.pending_answers += len(batch.cache)

    def sync(self) -> None:
        if self._fd is not None:
            os.fsync(self._fd)

    def committed(self, answers: int, everything: bool) -> None:
        """`answers` appended answers are in the store; `everything`: nothing appended is left
        uncommitted, so the file can start over."""
        self.pending_answers -= answers
        if everything and self._fd is not None:
            try:
                os.ftruncate(self._fd, 0)
            except OSError:
                pass  # kept as it is: storing it again is harmless (see the module docstring)

    def _point(self) -> None:
        """Make the machine-wide link name this journal (see `pointer_path`); best effort: the
        journal itself is what keeps the answers."""
        if self.pointer is None:
            return
        tmp = self.pointer.with_name(f".{self.pointer.name}.{os.getpid()}")
        try:
            tmp.unlink(missing_ok=True)
            os.symlink(self.path, tmp)
            os.replace(tmp, self.pointer)
        except OSError:
            tmp.unlink(missing_ok=True)

    def remove(self) -> None:
        """Everything appended is in the store."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        self.path.unlink(missing_ok=True)
        _unpoint(self.pointer, self.path)
        self.pending_answers = 0

    def close(self) -> None:
        """Keep the file for the next run (as far as the disk took it)."""
        if self._fd is not None:
            try:
                os.fsync(self._fd)
            except OSError:
                pass  # a full disk: what was written stays, a line cut short is skipped on recovery
            os.close(self._fd)
            self._fd = None


_OPT_INT = (int, type(None))
_OPT_STR = (str, type(None))
_NUMBER = (int, float)
# the types of a cache row (a seventh field, the finish reason, only for an answer cut off) and
# of a call row, as `append` writes them
_CACHE_FIELDS = (str, str, str, str, _OPT_INT, _OPT_INT, _OPT_STR)
_CALL_FIELDS = (_OPT_STR, str, str, str, _OPT_INT, _OPT_STR, _OPT_INT, _OPT_INT, (*_NUMBER, type(None)),
                _NUMBER, str)


def _fits(row, fields: tuple, least: int) -> bool:
    return (isinstance(row, list) and least <= len(row) <= len(fields)
            and all(isinstance(v, t) and not isinstance(v, bool) for v, t in zip(row, fields)))


def _parse_line(line: bytes) -> Batch | None:
    """One journal line as a batch, or None when it is cut short or not of the shape `append`
    writes (an edited or foreign file): storing it would fail every later run."""
    item = try_parse(line)
    if not isinstance(item, dict) or not isinstance(item.get("cache"), list) or not isinstance(item.get("calls"), list):
        return None
    if not all(_fits(r, _CACHE_FIELDS, 6) for r in item["cache"]):
        return None
    if not all(_fits(c, _CALL_FIELDS, len(_CALL_FIELDS)) for c in item["calls"]):
        return None
    try:
        calls = [_call_row(c) for c in item["calls"]]
    except ValueError:  # not an ISO time
        return None
    return Batch(cache=[tuple(r) for r in item["cache"]], calls=calls)


def _unpoint(pointer: Path | None, journal: Path) -> None:
    if pointer is None:
        return
    try:
        if Path(os.readlink(pointer)) == journal:
            pointer.unlink()
    except OSError:
        pass


def recover(db: Path) -> tuple[int, int]:
    """Store what earlier runs journaled but could not commit (beside this name of the store,
    or beside another hard link to it), then drop those journals. Returns (answers stored,
    unreadable lines). A line cut short by a kill mid-write, or of a shape the journal never
    writes, is skipped and counted."""
    stored = unreadable = 0
    for path in _journals(db):
        got, bad = _recover_one(db, path)
        stored, unreadable = stored + got, unreadable + bad
        _unpoint(pointer_path(db), path)
    return stored, unreadable


def _recover_one(db: Path, path: Path) -> tuple[int, int]:
    if not path.exists():
        return 0, 0
    try:
        handle = os.fdopen(open_regular(path), "rb")
    except IngestError as exc:  # a FIFO or device at the journal's name would never end
        raise StoreError(f"{exc.message}: Faultline keeps its journal of paid answers there; move it away") from None
    batch, unreadable = Batch(), 0
    with handle as fh:
        for line in fh:
            if not line.strip():
                continue
            parsed = _parse_line(line)
            if parsed is None:
                unreadable += 1
            else:
                batch.extend(parsed)
    stored = 0
    if batch:
        with write_session(db) as con:
            stored = save_recovered(con, batch)
    path.unlink()
    return stored, unreadable
