"""Where one ingest command collects its runs while it parses: in memory up to a chunk, beyond
that in Parquet files beside the store, written a chunk at a time.

Parsing a large load takes minutes, and the store may be held for writing only briefly (the app
keeps reading, see store/db.py); holding every parsed run in memory until then grew with the
load (4.2 GB for 2,000,000 predictions). So once the runs of a command outgrow one chunk, each
chunk goes to Parquet files in `.<db name>.ingest-<pid>/` beside the store as soon as it is full,
and the write session then reads them all into the store in one transaction (`commit`): one
command stores all of its runs or none. The store holds nothing of the staging until that
transaction commits: a command killed at any moment leaves the store as it was. A load that fits in one chunk (most do) is written
straight from memory. Parquet rather than a DuckDB file: writing it costs little next to the
parse, and the store's own insert then runs once, as for a load held in memory. A command that
fails removes its staging folder; one killed outright leaves it, and the next ingest into that
store removes it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

import duckdb

from .db import write_session
from .errors import StoreError
from .remote import alive
from .runs import LateRule, StagedRun, registered, replace_from, replace_runs, run_tables
from .writes import transaction

# Runs are held in memory up to this much column data, then written out as one chunk: large
# enough that most loads never touch disk, small enough to be a modest share of an ingest's memory.
CHUNK_BYTES_DEFAULT = 128 * 1024 * 1024
# DuckDB's own buffers while it reads the staged chunks into the store (it spills to disk beyond
# this); with one chunk and the runs being parsed, this bounds an ingest's memory.
MEMORY_LIMIT = "512MB"
TABLES = ("runs", "instances", "predictions", "transcript_steps")
# DuckDB spreads an insert over its threads by row group (122,880 rows): a load whose tables each
# fit in one row group gains nothing from more threads and pays for merging their partial row
# groups in order (the 283-run HELM suite's 56,600 predictions: 0.17 s single-threaded against
# 0.30 s on 2 cores, a quiet machine), so such a load is written on one thread.
ROW_GROUP_ROWS = 122_880


def _threads_for(chunk: list[StagedRun]) -> dict[str, object] | None:
    """The write session's settings for a load held in memory: one thread when it is small."""
    rows = max(sum(s.instances.num_rows for s in chunk), sum(s.predictions.num_rows for s in chunk),
               sum(s.steps.num_rows for s in chunk if s.steps is not None))
    return {"threads": 1} if rows < ROW_GROUP_ROWS else None


def staging_folder(db: Path, pid: int | None = None) -> Path:
    """`.<db name>.ingest-<pid>` beside the store: hidden, so that an ingest of the folder holding
    the store never reads its own staging files (the folder search skips hidden folders)."""
    return db.with_name(f".{db.name}.ingest-{os.getpid() if pid is None else pid}")


def remove_abandoned(db: Path) -> list[Path]:
    """Remove the staging folders that ingests killed outright left beside `db` (their process
    is gone); return them."""
    gone = []
    prefix = staging_folder(db, 0).name[:-1]
    for folder in db.parent.glob(f"{prefix}*"):
        pid = folder.name[len(prefix):]
        if pid.isdigit() and int(pid) != os.getpid() and not alive(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)
            gone.append(folder)
    return gone


class RunStaging:
    """The runs of one ingest command on their way into the store (use as a context manager:
    leaving it removes the staging folder, whether or not `commit` ran)."""

    def __init__(self, db: Path, chunk_bytes: int = CHUNK_BYTES_DEFAULT) -> None:
        self.db = db
        self.chunk_bytes = chunk_bytes
        self.folder = staging_folder(db)
        self._chunk: list[StagedRun] = []
        self._bytes = 0
        self._written = 0  # chunks written to the staging folder

    def __enter__(self) -> "RunStaging":
        return self

    def __exit__(self, *exc) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)

    def add(self, run: StagedRun) -> bool:
        """Stage one run; return whether that wrote a chunk to disk."""
        self._chunk.append(run)
        self._bytes += run.nbytes
        if self._bytes < self.chunk_bytes:
            return False
        self._write_chunk()
        return True

    def _write_chunk(self) -> None:
        if not self._written:
            remove_abandoned(self.db)
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder.mkdir(parents=True)
        import pyarrow.parquet as pq  # only for a load past one chunk: it costs an ingest 10 ms to import

        try:
            for table, rows in zip(TABLES, run_tables(self._chunk)):
                pq.write_table(rows, self.folder / f"{table}-{self._written:06d}.parquet")
        except OSError as exc:
            raise StoreError(f"{self.folder}: cannot stage the runs of this load here ({exc.strerror or exc}); "
                             "nothing of it was written") from None
        self._written += 1
        self._chunk = []
        self._bytes = 0

    def commit(self, late: list[LateRule] = ()) -> dict[str, tuple[int, int]]:
        """Move every staged run into the store in one transaction: each replaces any stored
        copy of itself, runs with a `late` rule are judged by it (store.runs `replace_from`).
        Nothing is written when anything fails. Returns the late-judged runs' (judged, failed)
        counts."""
        try:
            return self._commit(late)
        except duckdb.Error as exc:
            # the transaction was rolled back: the store is as it was
            raise StoreError(f"{self.db}: the store could not take this load, nothing of it was written: "
                             f"{str(exc).splitlines()[0]}") from None

    def _commit(self, late: list[LateRule]) -> dict[str, tuple[int, int]]:
        if not self._written:
            with write_session(self.db, settings=_threads_for(self._chunk)) as con, transaction(con):
                return replace_runs(con, self._chunk, late)
        if self._chunk:
            self._write_chunk()
        # the staged chunks are read by DuckDB itself, a chunk at a time, through relations
        # registered on the store's connection: like every registered name they live only in
        # this connection, so a kill leaves nothing of them in the store. The connection may read
        # no file but the store and exactly these chunks (allowed_paths, set at connect time).
        files = {table: [str(f.resolve()) for f in sorted(self.folder.glob(f"{table}-*.parquet"))] for table in TABLES}
        chunks = [f for table in TABLES for f in files[table]]
        with write_session(self.db, settings={"memory_limit": MEMORY_LIMIT}, allowed_paths=chunks) as con, \
                contextlib.ExitStack() as names:
            for table in TABLES:
                # chunks are matched by column name: a column may be all NULL in one of them
                staged = con.read_parquet(files[table], union_by_name=True)
                names.enter_context(registered(con, f"_staged_{table}", staged))
            with transaction(con):
                return replace_from(con, *(f"_staged_{table}" for table in TABLES), late)
