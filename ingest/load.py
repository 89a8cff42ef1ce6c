"""Loading logs into the store, one command at a time: each input is parsed run by run; the runs
are held in memory up to one chunk and staged on disk beyond it (store/staging.py), then moved
into the store in one transaction. So one command stores all of its inputs or none of them,
readers keep reading while it parses, and memory is bounded by a chunk and the largest run, not
by the whole load."""

from __future__ import annotations

import ctypes
import gc
import os
import signal
import sys
import threading
import time
import warnings
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass, replace
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Iterator

import orjson
import pyarrow as pa

from core.names import control_character
from core.records import ParsedRun, Skipped
from store import read_connection, writable_db_path
from store.db import is_duckdb_file
from store.runs import LateRule, StagedRun, collapsed_reruns, stage_run
from store.staging import CHUNK_BYTES_DEFAULT, RunStaging

from . import files
from .errors import IngestError
from .jsonio import TOO_DEEP
from .limits import human, parse_size
from .options import ReadOptions
from .registry import by_name, choose
from .report import IngestSummary, RunNote, resolve_pending, skipped_files, skipped_lines
from .scan import scanning
from .source import Source
from .walk import total_size

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

# Below this much log data a process pool costs more than it saves. Spawned workers import
# Faultline again (about a second of start-up) and pay from 256 MB; forked ones start in
# milliseconds, and pay from about 32 MB (HELM runs on 2 cores, start-up included: 17 MB the
# same either way, 34 MB 0.92-1.02 s against 0.95-1.06 s, 120 MB 1.8 s against 2.1 s).
PARALLEL_MIN_BYTES_DEFAULT = {"fork": 32 * 1024 * 1024, "spawn": 256 * 1024 * 1024}
PARALLEL_ENV = "FAULTLINE_PARALLEL_MIN_BYTES"
START_ENV = "FAULTLINE_WORKER_START"
# Parts (HELM runs) handed to the workers ahead of the one being staged, per worker.
PARTS_IN_FLIGHT_PER_WORKER = 2
CHUNK_ENV = "FAULTLINE_INGEST_CHUNK_BYTES"


def parallel_min_bytes(method: str = "spawn") -> int:
    return _env_bytes(PARALLEL_ENV, PARALLEL_MIN_BYTES_DEFAULT[method])


def start_method() -> str:
    """How worker processes start: forked where that is safe, else spawned.

    A fork copies the parent as it stands: a lock another thread held at that moment stays held
    in the child. So workers are forked only on Linux (macOS frameworks are not fork-safe) and
    only while this process runs no Python thread but the main one (`python -m ingest` parses on
    it alone; the app's server, with its many threads, spawns). The native threads libraries
    start on import are safe here: jemalloc's and OpenBLAS's pools ready themselves for a fork
    (pthread_atfork), and a worker never touches DuckDB, whose threads a store opened earlier
    may have left. FAULTLINE_WORKER_START=spawn forces spawned workers."""
    forced = os.environ.get(START_ENV)
    if forced and forced not in ("fork", "spawn"):
        raise IngestError(f"{START_ENV}={forced!r}: expected fork or spawn")
    if forced == "spawn" or not sys.platform.startswith("linux") or threading.active_count() > 1:
        return "spawn"
    return "fork"


def chunk_bytes() -> int:
    """How much parsed run data an ingest holds in memory before writing it to its staging
    folder (store/staging.py)."""
    return _env_bytes(CHUNK_ENV, CHUNK_BYTES_DEFAULT)


def _env_bytes(name: str, default: int) -> int:
    raw = os.environ.get(name)
    return parse_size(name, raw) if raw else default


@dataclass(frozen=True)
class _Staged:
    """A run ready to write, with where it came from and what its reader noted."""

    run: StagedRun
    source: str
    notes: tuple[str, ...]
    verdicts: RunNote
    n_steps: int = 0
    n_tool_calls: int = 0


def _stage(parsed: ParsedRun | Skipped, options: ReadOptions) -> _Staged | Skipped:
    if isinstance(parsed, Skipped):
        return parsed
    source = parsed.run.source_path
    try:
        staged = stage_run(parsed)
    except (RecursionError, orjson.JSONEncodeError):
        raise IngestError(f"{source}: {TOO_DEEP}") from None
    _check_names(parsed, source)
    _check_text_sizes(staged, source, options.limits.text_bytes)
    steps = parsed.steps
    return _Staged(staged, source, tuple(parsed.notes), RunNote.of(parsed),
                   len(steps) if steps is not None else 0, steps.n_tool_calls if steps is not None else 0)


NAME_FIELDS = ("model", "model_deployment", "dataset", "dataset_raw", "domain", "variant", "main_split", "suite")


def _check_names(parsed: ParsedRun, source: str) -> None:
    """Refuse names with control characters, whatever the reader (core/names.py): a NUL byte in
    a model name once hung the taxonomy page for good. Readers of one row per line say the line
    themselves (custom JSONL/CSV); this names the run's file and the field or instance."""
    for field in NAME_FIELDS:
        value = getattr(parsed.run, field)
        why = control_character(value) if isinstance(value, str) else None
        if why:
            raise IngestError(f"{source}: {field.replace('_', ' ')} {value!r} {why}")
    # a run's instances share a handful of splits: each distinct value is checked once
    checked: set[str] = set()
    for inst in parsed.instances:
        for field in ("split", "sub_split"):
            value = getattr(inst, field)
            if value.__class__ is not str or value in checked:
                continue
            why = control_character(value)
            if why:
                raise IngestError(f"{source}: instance {inst.instance_id!r}: {field.replace('_', ' ')} {value!r} {why}")
            checked.add(value)
        if "\0" in inst.instance_id or "\0" in inst.raw_instance_id:
            raise IngestError(f"{source}: instance {inst.raw_instance_id!r}: the id holds a NUL byte")


def _check_text_sizes(staged: StagedRun, source: str, cap: int) -> None:
    """Refuse a run holding one text (an input, output, reference, ...) longer than the cap."""
    for table in (staged.instances, staged.predictions):
        if table.nbytes <= cap:
            continue  # no value can be longer than all of them together
        for name in table.column_names:
            column = table[name]
            # no value can be longer than the whole column: the common case costs no scan
            if not pa.types.is_string(column.type) or column.nbytes <= cap:
                continue
            import pyarrow.compute as pc  # only for a run holding a text this long: it costs start-up time
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
    files.confine(options.only_under)  # a spawned worker starts unconfined
    part = replace(options, part_of_folder=True)
    staged = [_stage(parsed, options) for parsed in by_name(reader_name).read(path, part)]
    if _collect_after_part:
        # a forked worker parses with cycle collection off, as its parent did: free what this
        # part left in reference cycles (its inherited objects are frozen, so this scans few)
        gc.collect()
    return staged


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


_collect_after_part = False


def _forked_worker(parent: int) -> None:
    """Initializer of a forked worker: die with the parent; leave the parent's objects, which it
    shares copy-on-write, out of cycle collection (collecting would touch, so copy, them)."""
    global _collect_after_part
    _die_with_parent(parent)
    gc.freeze()
    _collect_after_part = True


def worker_pool(workers: int, method: str = "spawn") -> "ProcessPoolExecutor":
    """Worker processes that end with this one, however it ends.

    fork or spawn (`start_method`), never forkserver: the workers are then children of this
    process, so the kernel can end them with it, and no fork server is left behind.
    """
    import multiprocessing  # only for inputs large enough to parse on every core
    from concurrent.futures import ProcessPoolExecutor

    ctx = multiprocessing.get_context(method)
    init = _forked_worker if method == "fork" else _die_with_parent
    return ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=init, initargs=(os.getpid(),))


def _read_staged(reader: Source, path: Path, options: ReadOptions) -> Iterator[_Staged | Skipped]:
    """Parse and stage an input's runs, on every core when the input is large enough to pay."""
    parts = reader.parts(path) if reader.parts else []
    workers = min(len(parts), os.cpu_count() or 1)
    method = start_method() if workers >= 2 else None
    size = reader.work_bytes(path) if reader.work_bytes else total_size(path)
    if method is None or size < parallel_min_bytes(method):
        for parsed in reader.read(path, options):
            yield _stage(parsed, options)
        return
    from concurrent.futures.process import (
        BrokenProcessPool,  # with the pool: it costs start-up time
    )

    with worker_pool(workers, method) as pool:
        # a bounded window of parts in flight: the workers stay busy while this process stages,
        # and parsed runs never pile up faster than they are written
        todo = iter(parts)
        running: deque = deque()
        try:
            with warnings.catch_warnings():
                # Python 3.12+ warns of any fork in a process with native threads; those that
                # `start_method` lets through are fork-safe (the first submit starts the workers)
                warnings.filterwarnings("ignore", "This process .* is multi-threaded", DeprecationWarning)
                running.extend(pool.submit(_read_part, reader.name, part, options)
                               for part in islice(todo, PARTS_IN_FLIGHT_PER_WORKER * workers))
            while running:
                done = running.popleft().result()
                for part in islice(todo, 1):
                    running.append(pool.submit(_read_part, reader.name, part, options))
                yield from done
                del done
        except BrokenProcessPool:
            # killed (the kernel's out-of-memory killer, a signal) or crashed in a library
            raise IngestError(
                f"{path}: a worker process parsing it ended abruptly (killed, or out of memory); nothing "
                f"from this command was written. To parse in this process alone: {PARALLEL_ENV}=1000G"
            ) from None
        finally:
            for future in running:
                future.cancel()


def _read_input(path: Path, fmt: str, options: ReadOptions, bar, summary: IngestSummary) -> Iterator[_Staged]:
    """The runs of one input, as they are parsed; skipped files go to the summary."""
    if path.is_file() and is_duckdb_file(path):
        raise IngestError(f"{path}: a DuckDB database, not a log; to bring in the runs and analyses of another "
                          f"Faultline store: python -m ingest merge {path} --db {summary.db}")
    readers = choose(path, fmt)
    if bar is not None:
        bar.total = (bar.total or 0) + sum(r.count_runs(path) for r in readers)
        bar.refresh()
    try:
        for reader in readers:
            for item in _read_staged(reader, path, options):
                if isinstance(item, Skipped):
                    # what a reader found but cannot analyse (e.g. text-to-image records)
                    summary.skipped.setdefault(item.reason, []).append(item.path)
                else:
                    yield item
                if bar is not None:
                    bar.update(1)
    except RecursionError:
        # a reader walking a deeply nested value; the JSON layer names the file when it can
        raise IngestError(f"{path}: {TOO_DEEP}") from None
    for reason, found in skipped_files(path, readers).items():
        summary.skipped.setdefault(reason, []).extend(map(str, found))


@dataclass
class _Kept:
    """What the summary needs of a staged run once its rows are on disk."""

    source: str
    n_predictions: int
    n_infra_errors: int
    notes: tuple[str, ...]
    verdicts: RunNote
    n_steps: int = 0
    n_tool_calls: int = 0


class _Runs:
    """The runs of a command, in the order read, each once: the same file named twice is read
    once; two files claiming one run are refused, naming both."""

    def __init__(self) -> None:
        self.kept: dict[str, _Kept] = {}
        self.repeated: list[str] = []

    def keep(self, item: _Staged) -> bool:
        """Whether `item` is a run not seen before in this command (to be staged)."""
        earlier = self.kept.get(item.run.run_id)
        if earlier is None:
            run = item.run
            self.kept[run.run_id] = _Kept(item.source, run.n_predictions, run.n_infra_errors,
                                          item.notes, item.verdicts, item.n_steps, item.n_tool_calls)
            return True
        if earlier.source == item.source:
            self.repeated.append(item.source)
            return False
        raise IngestError(
            f"{earlier.source} and {item.source} are the same run (same suite and run name, or the "
            "same task id): remove one copy, or ingest them into different stores"
        )

    def remark(self) -> list[str]:
        if not self.repeated:
            return []
        repeated = self.repeated
        example = f" ({repeated[0]})" if len(repeated) == 1 else f" (e.g. {repeated[0]})"
        return [f"{len(repeated)} run(s) given more than once{example}, stored once"]

    def late_rules(self) -> list[LateRule]:
        """Scales read from a dataset's column span every input of the command: now that all are
        read, decide them; the runs they judge are judged as they are written."""
        kept = list(self.kept.values())
        notes = [k.verdicts for k in kept]
        judged = resolve_pending(notes)
        for k, note in zip(kept, notes):
            k.verdicts = note
        return [LateRule(notes[i].run_id, **notes[i].rule.run_fields()) for i in judged]

    def record_late_verdicts(self, counts: dict[str, tuple[int, int]]) -> None:
        """The verdicts of the runs judged as they were written."""
        for run_id, (judged, failed) in counts.items():
            kept = self.kept[run_id]
            kept.verdicts = replace(kept.verdicts, n_judged=judged, n_failed=failed)


@contextmanager
def _confined(roots: tuple[str, ...]):
    """Files outside `roots` refused while the inputs are read (ingest/files.py)."""
    files.confine(roots)
    try:
        yield
    finally:
        files.confine(None)


@contextmanager
def _parsing(progress: bool):
    """A progress bar (or None) for the parsing, with cycle collection off meanwhile."""
    bar = None
    if progress:
        from tqdm import tqdm

        # no monitor thread: a second thread would make forking workers unsafe (`start_method`)
        tqdm.monitor_interval = 0
        bar = tqdm(unit="run", desc="ingest", leave=False, disable=None)  # silent when stderr is not a terminal
    # Parsing makes millions of small acyclic objects; the cycle collector would rescan them
    # over and over (a quarter of the CPU time on a 120 MB suite) and find nothing to free.
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield bar
    finally:
        if collecting:
            gc.enable()
        if bar is not None:
            bar.close()


def ingest_paths(
    paths: Iterable[str | Path],
    db: str | Path | None = None,
    fmt: str = "auto",
    options: ReadOptions | None = None,
    progress: bool = False,
) -> IngestSummary:
    """Read every path and store all their runs in one transaction.

    All or nothing: any bad input raises IngestError before the store is touched, and the write
    either commits every run of the command or none (what was stored before stays untouched).
    Runs beyond one chunk are staged on disk as they are parsed (store/staging.py), so memory
    does not grow with the number of runs; the store is held for writing only while they are
    moved in.
    """
    options = options or ReadOptions()
    started = time.perf_counter()
    summary = IngestSummary(db=writable_db_path(db))
    runs = _Runs()
    with RunStaging(summary.db, chunk_bytes()) as staging:
        with _parsing(progress) as bar, _confined(options.only_under), scanning():
            for raw in paths:
                for item in _read_input(Path(raw), fmt, options, bar, summary):
                    if runs.keep(item) and staging.add(item.run):
                        # a chunk went to disk: free what parsing it left behind in reference cycles
                        gc.collect()
                    del item
            if not runs.kept and summary.skipped:
                # exit 0 with nothing stored would read as success: say why nothing was loaded
                raise IngestError("nothing loaded: every log found was skipped\n" + "\n".join(skipped_lines(summary.skipped)))
        runs.record_late_verdicts(staging.commit(runs.late_rules()))
    with read_connection(summary.db) as con:
        summary.reruns = collapsed_reruns(con, list(runs.kept))
    summary.remarks.extend(runs.remark())
    for run_id, kept in runs.kept.items():
        summary.runs += 1
        summary.predictions += kept.n_predictions
        summary.failures += kept.verdicts.n_failed
        summary.infra_errors += kept.n_infra_errors
        summary.unscored += kept.n_predictions - kept.n_infra_errors - kept.verdicts.n_judged
        summary.steps += kept.n_steps
        summary.tool_calls += kept.n_tool_calls
        summary.run_ids.append(run_id)
        summary.notes.append(kept.verdicts)
        summary.remarks.extend(kept.notes)
    summary.seconds = time.perf_counter() - started
    return summary
