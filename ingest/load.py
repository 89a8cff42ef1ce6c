"""Loading logs into the store: parse every input of a command first, then write them all in one
transaction, so that one command stores all of its inputs or none of them."""

from __future__ import annotations

import ctypes
import gc
import multiprocessing
import os
import signal
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterable, Iterator

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from store import writable_db_path, write_session
from store.writes import transaction
from store.runs import StagedRun, replace_runs, stage_run

from . import files
from .errors import IngestError
from .jsonio import TOO_DEEP
from .limits import human
from .options import ReadOptions
from .records import ParsedRun, Skipped
from .registry import Reader, by_name, choose
from .report import RunNote, details, resolve_pending, skipped_files

# Below this much log data a process pool costs more (start-up, imports, pickling) than it saves:
# a 120 MB HELM suite parses in 2-3 s of CPU, and starting spawned workers costs about a second.
PARALLEL_MIN_BYTES_DEFAULT = 256 * 1024 * 1024
PARALLEL_ENV = "FAULTLINE_PARALLEL_MIN_BYTES"


def parallel_min_bytes() -> int:
    raw = os.environ.get(PARALLEL_ENV)
    if not raw:
        return PARALLEL_MIN_BYTES_DEFAULT
    try:
        return int(raw)
    except ValueError:
        raise IngestError(f"{PARALLEL_ENV}={raw!r}: expected a number of bytes") from None


@dataclass(frozen=True)
class _Staged:
    """A run ready to write, with where it came from and what its reader noted."""

    run: StagedRun
    source: str
    notes: tuple[str, ...]
    verdicts: RunNote


def _stage(parsed: ParsedRun | Skipped, options: ReadOptions) -> _Staged | Skipped:
    if isinstance(parsed, Skipped):
        return parsed
    source = parsed.run.source_path
    try:
        staged = stage_run(parsed)
    except (RecursionError, orjson.JSONEncodeError):
        raise IngestError(f"{source}: {TOO_DEEP}") from None
    _check_text_sizes(staged, source, options.limits.text_bytes)
    return _Staged(staged, source, tuple(parsed.notes), RunNote.of(parsed))


def _check_text_sizes(staged: StagedRun, source: str, cap: int) -> None:
    """Refuse a run holding one text (an input, output, reference, ...) longer than the cap."""
    for table in (staged.instances, staged.predictions):
        for name in table.column_names:
            column = table[name]
            # no value can be longer than the whole column: the common case costs no scan
            if not pa.types.is_string(column.type) or column.nbytes <= cap:
                continue
            lengths = pc.binary_length(column)
            biggest = pc.max(lengths).as_py()
            if biggest is not None and biggest > cap:
                row = pc.index(lengths, biggest).as_py()
                instance = table["instance_id"][row].as_py()
                raise IngestError(
                    f"{source}: instance {instance!r}: {name} is {human(biggest)}, over the {human(cap)} limit "
                    "on one text (raise FAULTLINE_MAX_TEXT_BYTES to read it)"
                )


def _read_part(reader_name: str, path: Path, options: ReadOptions) -> list[_Staged | Skipped]:
    files.confine(options.only_under)  # a worker process starts unconfined
    part = replace(options, part_of_folder=True)
    return [_stage(parsed, options) for parsed in by_name(reader_name).read(path, part)]


PR_SET_PDEATHSIG = 1


def _die_with_parent(parent: int) -> None:
    """Worker initializer: a worker must not outlive the ingest that started it (kill -9 included)."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    else:
        def watch() -> None:
            while os.getppid() == parent:
                time.sleep(0.5)
            os._exit(1)

        threading.Thread(target=watch, daemon=True).start()
    if os.getppid() != parent:  # the parent died before the line above took effect
        os._exit(1)


def worker_pool(workers: int) -> ProcessPoolExecutor:
    """Worker processes that end with this one, however it ends.

    spawn, not forkserver: the workers are then children of this process, so the kernel can end
    them with it, and no fork server is left behind; not fork, which is unsafe with threads.
    """
    ctx = multiprocessing.get_context("spawn")
    return ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_die_with_parent, initargs=(os.getpid(),))


def _read_staged(reader: Reader, path: Path, options: ReadOptions) -> Iterator[_Staged | Skipped]:
    """Parse and stage an input's runs, on every core when the input is large enough to pay."""
    parts = reader.parts(path) if reader.parts else []
    workers = min(len(parts), os.cpu_count() or 1)
    if workers < 2 or _size(path) < parallel_min_bytes():
        for parsed in reader.read(path, options):
            yield _stage(parsed, options)
        return
    with worker_pool(workers) as pool:
        futures = [pool.submit(_read_part, reader.name, part, options) for part in parts]
        try:
            for future in futures:
                yield from future.result()
        finally:
            for future in futures:
                future.cancel()


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


@dataclass
class IngestSummary:
    db: Path
    runs: int = 0
    predictions: int = 0
    failures: int = 0
    infra_errors: int = 0
    seconds: float = 0.0
    run_ids: list[str] = field(default_factory=list)
    notes: list[RunNote] = field(default_factory=list)
    # what readers and the loader did that the user should hear about (e.g. repeats stored once)
    remarks: list[str] = field(default_factory=list)
    skipped: dict[str, list[str]] = field(default_factory=dict)

    @property
    def differing(self) -> list[RunNote]:
        """Runs whose recomputed rate differs from the log's own aggregate."""
        return [n for n in self.notes if n.harness_agrees is False]

    @property
    def nonfinite(self) -> int:
        return sum(n.n_nonfinite for n in self.notes)

    def details(self, skipped_list: Path | None = None) -> list[str]:
        """What the one-line summary cannot hold: harness check, thresholds, unscored, skipped files."""
        return details(self, skipped_list)

    def line(self) -> str:
        infra = f", {self.infra_errors:,} infrastructure errors" if self.infra_errors else ""
        remarks = f"; {'; '.join(self.remarks)}" if self.remarks else ""
        return (
            f"ingested {self.runs:,} runs, {self.predictions:,} predictions, {self.failures:,} failures"
            f"{infra} in {self.seconds:.1f} s into {self.db}{remarks}"
        )


def _read_input(path: Path, fmt: str, options: ReadOptions, bar, summary: IngestSummary) -> list[_Staged]:
    readers = choose(path, fmt)
    if bar is not None:
        bar.total = (bar.total or 0) + sum(r.count_runs(path) for r in readers)
        bar.refresh()
    staged: list[_Staged] = []
    try:
        for reader in readers:
            for item in _read_staged(reader, path, options):
                if isinstance(item, Skipped):
                    # what a reader found but cannot analyse (e.g. text-to-image records)
                    summary.skipped.setdefault(item.reason, []).append(item.path)
                else:
                    staged.append(item)
                if bar is not None:
                    bar.update(1)
    except RecursionError:
        # a reader walking a deeply nested value; the JSON layer names the file when it can
        raise IngestError(f"{path}: {TOO_DEEP}") from None
    for reason, found in skipped_files(path, readers).items():
        summary.skipped.setdefault(reason, []).extend(map(str, found))
    return staged


def _one_per_run(staged: list[_Staged], remarks: list[str]) -> list[_Staged]:
    """Each run once: the same file named twice is read once; two files claiming one run refused."""
    by_id: dict[str, _Staged] = {}
    repeated: list[str] = []
    for item in staged:
        earlier = by_id.get(item.run.run_id)
        if earlier is None:
            by_id[item.run.run_id] = item
        elif earlier.source == item.source:
            repeated.append(item.source)
        else:
            raise IngestError(
                f"{earlier.source} and {item.source} are the same run (same suite and run name, or the "
                "same task id): remove one copy, or ingest them into different stores"
            )
    if repeated:
        example = f" ({repeated[0]})" if len(repeated) == 1 else f" (e.g. {repeated[0]})"
        remarks.append(f"{len(repeated)} run(s) given more than once{example}, stored once")
    return list(by_id.values())


def _judge_pending(staged: list[_Staged]) -> list[_Staged]:
    """Scales read from a dataset's column span every input of the command: judge those runs now."""
    runs = [s.run for s in staged]
    notes = [s.verdicts for s in staged]
    resolve_pending(runs, notes)
    return [replace(s, run=run, verdicts=note) for s, run, note in zip(staged, runs, notes)]


def ingest_paths(
    paths: Iterable[str | Path],
    db: str | Path | None = None,
    fmt: str = "auto",
    options: ReadOptions | None = None,
    progress: bool = False,
) -> IngestSummary:
    """Read every path, then store them all in one transaction.

    All or nothing: any bad input raises IngestError before anything is written, and the write
    either commits every run of the command or none (what was stored before stays untouched).
    Parsed runs are held in columnar form until the write, which takes about as much memory as
    the predictions' text.
    """
    options = options or ReadOptions()
    started = time.perf_counter()
    summary = IngestSummary(db=writable_db_path(db))
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(unit="run", desc="ingest", leave=False, disable=None)  # silent when stderr is not a terminal
    # Parsing makes millions of small acyclic objects; the cycle collector would rescan them
    # over and over (a quarter of the CPU time on a 120 MB suite) and find nothing to free.
    collecting = gc.isenabled()
    gc.disable()
    files.confine(options.only_under)
    try:
        staged: list[_Staged] = []
        for raw in paths:
            staged.extend(_read_input(Path(raw), fmt, options, bar, summary))
    finally:
        files.confine(None)
        if collecting:
            gc.enable()
        if bar is not None:
            bar.close()
    staged = _judge_pending(_one_per_run(staged, summary.remarks))
    with write_session(db) as con, transaction(con):
        replace_runs(con, [s.run for s in staged])
    for item in staged:
        summary.runs += 1
        summary.predictions += item.run.n_predictions
        summary.failures += item.run.n_failures
        summary.infra_errors += item.run.n_infra_errors
        summary.run_ids.append(item.run.run_id)
        summary.notes.append(item.verdicts)
        summary.remarks.extend(item.notes)
    summary.seconds = time.perf_counter() - started
    return summary
