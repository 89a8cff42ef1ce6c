"""Combining stores: `python -m ingest merge STORE... [--db DB]` brings the runs and the analysis
records of several Faultline stores (shards ingested on different machines) into one, in one
transaction: all of them or nothing.

How each table combines (`RULES`; every table of the schema must have one):
- runs, with their instances, predictions and transcript steps: a run is identified as at ingest
  (`run_id`). A run present in two stores is one run when it holds the same content (its row but
  for when it was ingested, its variant and superseded_by, its instances, predictions and steps);
  else the merge is refused, naming both stores.
- analyses, classifications, verifications, reviews, llm_calls, review_samples, calibrations:
  records that only accumulate; a record already
  present is not added again, so merging the same stores twice adds nothing. A record is present
  when every column is equal but its id (drawn from a sequence) and, for an analysis, a
  classification or a verification, when it was made: two shards that analysed one run (or
  classified one title) alike hold one result, while every LLM call is a request that was paid
  for and every review a person's act.
- taxonomies: one row per version; one version with different categories is refused.
- llm_cache: one answer per prompt key; a key already present keeps its answer (said in the
  summary).
- llm_batches: one row per submission to a provider's batch API; a submission already present
  keeps its row, so `--resume` on the merged store collects each batch once.
- derived and recomputed: each run's variant and superseded_by, latest_outcomes, failure_labels,
  latest_labels.
- schema_migrations: the target's own. A store from an older Faultline is read through a
  migrated copy (the store itself is untouched); one from a newer Faultline is refused.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

import duckdb

from . import trust
from .analysis import refresh_labels
from .db import resolve_db_path, write_session
from .errors import StoreError
from .migrations import MIGRATIONS, migrate
from .runs import refresh_groups

RUN_TABLES = ("runs", "instances", "predictions", "transcript_steps")
# each record table, and the columns that do not tell whether a record is already present
RECORDS = {"analyses": ("created_at",), "classifications": ("created_at",), "verifications": ("created_at",),
           "reviews": ("review_id",), "llm_calls": ("call_id",), "review_samples": (), "calibrations": ()}
DERIVED = ("latest_outcomes", "latest_labels", "failure_labels", "schema_migrations")
RULES = (*RUN_TABLES, *RECORDS, "taxonomies", "llm_cache", "llm_batches", *DERIVED)
# what is not a run's content: when this copy was ingested, its variant and the rerun that counts
# instead of it (derived from the other runs of its model and dataset in that store)
_NOT_CONTENT = ("ingested_at", "variant", "superseded_by")
MEMORY_LIMIT = "512MB"


@dataclass
class MergeSummary:
    db: Path
    stores: int = 0
    runs: int = 0
    runs_present: int = 0
    predictions: int = 0
    added: dict[str, int] = field(default_factory=dict)
    remarks: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def line(self) -> str:
        present = f" ({self.runs_present:,} already there)" if self.runs_present else ""
        counts = ", ".join(f"{self.added.get(t, 0):,} {name}" for t, name in (
            ("analyses", "analyses"), ("classifications", "classifications"), ("verifications", "verifications"),
            ("reviews", "reviews"), ("taxonomies", "taxonomies"), ("llm_cache", "cached answers"), ("llm_calls", "LLM calls")))
        remarks = f"; {'; '.join(self.remarks)}" if self.remarks else ""
        return (f"merged {self.stores:,} store{'s' * (self.stores != 1)} into {self.db}: {self.runs:,} runs{present}, "
                f"{self.predictions:,} predictions, {counts} in {self.seconds:.1f} s{remarks}")


def merge_stores(sources: Iterable[str | os.PathLike], db: str | os.PathLike | None = None) -> MergeSummary:
    """Bring every source store into `db` (see the module docstring) in one transaction."""
    started = time.perf_counter()
    target = resolve_db_path(db)
    summary = MergeSummary(db=target)
    paths = _distinct_sources([Path(s) for s in sources], target, summary.remarks)
    work = target.with_name(f".{target.name}.merge-{os.getpid()}")
    created = not target.exists()
    try:
        readable = []
        for path in paths:
            copy = _readable(path, work, summary.remarks)
            if copy is not None:
                readable.append((path, copy))
        summary.stores = len(readable)
        # the target's connection reads no file but the target and the source stores
        allowed = [str(f) for _, copy in readable for f in (copy.resolve(), _wal(copy.resolve()))]
        with write_session(target, settings={"memory_limit": MEMORY_LIMIT}, allowed_paths=allowed) as con:
            _check_rules(con)
            names = []
            try:
                for i, (path, copy) in enumerate(readable):
                    con.execute(f"ATTACH '{_quoted(copy.resolve())}' AS src{i} (READ_ONLY)")
                    names.append(f"src{i}")
                    # checked again as attached here: the file may have changed since it was read
                    trust.check_catalog(con, str(path), [n for n, _ in MIGRATIONS], database=f"src{i}")
                con.execute("BEGIN")
                try:
                    _merge_all(con, list(zip([p for p, _ in readable], names)), target, summary)
                    con.execute("COMMIT")
                except BaseException:
                    con.execute("ROLLBACK")
                    raise
            finally:
                for name in names:
                    con.execute(f"DETACH {name}")
    except BaseException:
        if created:  # a refused merge into a new store leaves no store behind
            for leftover in (target, target.with_name(target.name + ".wal")):
                leftover.unlink(missing_ok=True)
        raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    summary.seconds = time.perf_counter() - started
    return summary


def _distinct_sources(paths: list[Path], target: Path, remarks: list[str]) -> list[Path]:
    out: dict[Path, Path] = {}
    for path in paths:
        if not path.exists():
            raise StoreError(f"{path}: no such store")
        if path.is_dir():
            raise StoreError(f"{path}: a folder, not a store file (give the .duckdb file)")
        if target.exists() and os.path.samefile(path, target):
            raise StoreError(f"{path}: is the target store itself (--db); merge other stores into it")
        key = path.resolve()
        if key in out:
            remarks.append(f"{path} given more than once, merged once")
            continue
        out[key] = path
    return list(out.values())


def _wal(path: Path) -> Path:
    return path.with_name(path.name + ".wal")


def _readable(path: Path, work: Path, remarks: list[str]) -> Path | None:
    """The file to attach for a source store: itself when its schema is this Faultline's, a
    migrated copy when it is older; None when it is empty. Refuses what is not a Faultline store,
    and a store whose schema objects are not Faultline's own (it is untrusted input: its views
    would run here, store/trust.py)."""
    if path.stat().st_size == 0:
        remarks.append(f"{path}: empty store, nothing to merge")
        return None
    try:
        con = trust.connect(str(path), read_only=True)
    except duckdb.Error as exc:
        if "lock" in str(exc).lower():
            raise StoreError(f"{path}: another process is writing this store; merge it when that has finished") from None
        raise StoreError(f"{path}: not a DuckDB database ({str(exc).splitlines()[0]})") from None
    try:
        objects = trust.catalog(con, trust.current_database(con))
        if not objects:
            remarks.append(f"{path}: empty store, nothing to merge")
            return None
        if ("table", "main", "schema_migrations") not in objects:
            raise StoreError(f"{path}: a DuckDB database, but not a Faultline store (no schema_migrations table)")
        done = trust.trusted_migrations(con, str(path))
    finally:
        con.close()
    known = [name for name, _ in MIGRATIONS]
    missing = [n for n in known if n not in done]
    if not missing:
        return path
    work.mkdir(parents=True, exist_ok=True)
    copy = work / f"{len(list(work.iterdir()))}-{path.name}"
    shutil.copyfile(path, copy)
    wal = _wal(path)
    if wal.exists():
        shutil.copyfile(wal, _wal(copy))
    con = trust.connect(str(copy), read_only=False)
    try:
        # checked again on the copy: the store may have changed while it was copied
        trust.trusted_migrations(con, str(path))
        migrate(con)
    finally:
        con.close()
    remarks.append(f"{path}: from an older Faultline (up to {done[-1] if done else 'no migration'}); "
                   "read through a migrated copy, the store itself unchanged")
    return copy


def _check_rules(con: duckdb.DuckDBPyConnection) -> None:
    tables = {r[0] for r in con.execute(
        "SELECT table_name FROM system.main.duckdb_tables() "
        "WHERE database_name = system.main.current_database()").fetchall()}
    unknown = sorted(tables - set(RULES))
    if unknown:
        raise StoreError(f"merge does not know how to combine table(s) {', '.join(unknown)}; "
                         "upgrade Faultline (store/merge.py RULES)")


def _columns(con: duckdb.DuckDBPyConnection, table: str, leave_out: tuple[str, ...] = ()) -> list[str]:
    rows = con.execute(
        "SELECT column_name FROM system.main.duckdb_columns() "
        "WHERE database_name = system.main.current_database() AND table_name = ? "
        "ORDER BY column_index", [table]).fetchall()
    return [r[0] for r in rows if r[0] not in leave_out]


def _merge_all(con: duckdb.DuckDBPyConnection, sources: list[tuple[Path, str]], target: Path,
               summary: MergeSummary) -> None:
    origin: dict[tuple[str, str], Path] = {}  # where each run and taxonomy merged so far came from
    groups: set[tuple[str, str]] = set()
    for path, src in sources:
        groups |= _merge_runs(con, src, path, target, origin, summary)
        for table, not_identity in RECORDS.items():
            summary.added[table] = summary.added.get(table, 0) + _merge_records(con, src, table, not_identity)
        _merge_taxonomies(con, src, path, target, origin, summary)
        _merge_cache(con, src, path, summary)
        _merge_batches(con, src, summary)
    refresh_groups(con, groups)
    if summary.added.get("analyses") or summary.added.get("classifications"):
        refresh_labels(con)


def _merge_records(con, src: str, table: str, not_identity: tuple[str, ...]) -> int:
    """Add the records of `src` the store does not hold yet; return how many."""
    ids = tuple(c for c in not_identity if c.endswith("_id"))  # drawn anew from the store's sequence
    cols = _columns(con, table, ids)
    same = " AND ".join(f"t.{c} IS NOT DISTINCT FROM s.{c}" for c in _columns(con, table, not_identity))
    return con.execute(f"INSERT INTO {table} ({', '.join(cols)}) SELECT {', '.join('s.' + c for c in cols)} "
                       f"FROM {src}.{table} s ANTI JOIN {table} t ON {same}").fetchall()[0][0]


def _merge_runs(con, src: str, path: Path, target: Path, origin: dict[tuple[str, str], Path],
                summary: MergeSummary) -> set[tuple[str, str]]:
    """Add the runs of `src` the store lacks; check that those it has hold the same content."""
    con.execute(f"CREATE OR REPLACE TEMP TABLE _present AS "
                f"SELECT run_id FROM {src}.runs WHERE run_id IN (SELECT run_id FROM runs)")
    present = [r[0] for r in con.execute("SELECT run_id FROM _present ORDER BY run_id").fetchall()]
    for run_id, differs in sorted(_differences(con, src).items()):
        name = con.execute(f"SELECT run_name FROM {src}.runs WHERE run_id = ?", [run_id]).fetchall()[0][0]
        raise StoreError(
            f"run {name!r} ({run_id}) is in {origin.get(('run', run_id), target)} and in {path} with different "
            f"{' and '.join(differs)}: it was ingested differently (another version of the log, or other "
            "ingest options); re-ingest it the same way in both, or merge only one of them")
    summary.runs_present += len(present)
    con.execute(f"CREATE OR REPLACE TEMP TABLE _new AS "
                f"SELECT run_id FROM {src}.runs WHERE run_id NOT IN (SELECT run_id FROM _present)")
    for table in RUN_TABLES:
        cols = ", ".join(_columns(con, table))
        con.execute(f"INSERT INTO {table} ({cols}) SELECT {cols} FROM {src}.{table} "
                    f"WHERE run_id IN (SELECT run_id FROM _new)")
    added = con.execute(f"SELECT run_id, model, dataset, n_predictions FROM {src}.runs "
                        f"WHERE run_id IN (SELECT run_id FROM _new)").fetchall()
    for run_id, *_ in added:
        origin["run", run_id] = path
    summary.runs += len(added)
    summary.predictions += sum(r[3] for r in added)
    con.execute("DROP TABLE _present")
    con.execute("DROP TABLE _new")
    return {(model, dataset) for _, model, dataset, _ in added}


def _differences(con, src: str) -> dict[str, list[str]]:
    """For each run in `_present` (in both the store and `src`): which of its parts differ."""
    out: dict[str, list[str]] = {}
    for table, part in (("runs", "row"), ("instances", "instances"), ("predictions", "predictions"),
                        ("transcript_steps", "transcripts")):
        cols = ", ".join(_columns(con, table, ("run_id", *_NOT_CONTENT)))
        # an order-free fingerprint of each run's rows in that table
        fingerprint = (f"SELECT run_id, count(*) AS n, sum(hash({cols})::HUGEINT) AS h FROM {{db}}.{table} "
                       f"WHERE run_id IN (SELECT run_id FROM _present) GROUP BY run_id")
        rows = con.execute(
            f"SELECT coalesce(a.run_id, b.run_id) FROM ({fingerprint.format(db='main')}) a "
            f"FULL JOIN ({fingerprint.format(db=src)}) b USING (run_id) "
            "WHERE a.n IS DISTINCT FROM b.n OR a.h IS DISTINCT FROM b.h").fetchall()
        for (run_id,) in rows:
            out.setdefault(run_id, []).append(part)
    return out


def _merge_taxonomies(con, src: str, path: Path, target: Path, origin: dict[tuple[str, str], Path],
                      summary: MergeSummary) -> None:
    clash = con.execute(
        f"SELECT s.taxonomy_version FROM {src}.taxonomies s JOIN taxonomies t USING (taxonomy_version) "
        "WHERE s.categories::VARCHAR <> t.categories::VARCHAR ORDER BY 1").fetchall()
    if clash:
        version = clash[0][0]
        raise StoreError(f"taxonomy {version!r} has different categories in {origin.get(('taxonomy', version), target)} "
                         f"and in {path}: one version must name one taxonomy; give one of them a new version")
    cols = ", ".join(_columns(con, "taxonomies"))
    added = con.execute(
        f"INSERT INTO taxonomies ({cols}) SELECT {cols} FROM {src}.taxonomies "
        "WHERE taxonomy_version NOT IN (SELECT taxonomy_version FROM taxonomies) RETURNING taxonomy_version").fetchall()
    for (version,) in added:
        origin["taxonomy", version] = path
    summary.added["taxonomies"] = summary.added.get("taxonomies", 0) + len(added)


def _merge_cache(con, src: str, path: Path, summary: MergeSummary) -> None:
    kept = con.execute(
        f"SELECT count(*) FROM {src}.llm_cache s JOIN llm_cache c USING (cache_key) "
        "WHERE s.response_text <> c.response_text").fetchall()[0][0]
    if kept:
        summary.remarks.append(f"{path}: {kept:,} cached prompt(s) answered differently there; kept the answer "
                               "already stored (one answer per prompt)")
    cols = ", ".join(_columns(con, "llm_cache"))
    summary.added["llm_cache"] = summary.added.get("llm_cache", 0) + con.execute(
        f"INSERT INTO llm_cache ({cols}) SELECT {cols} FROM {src}.llm_cache "
        "WHERE cache_key NOT IN (SELECT cache_key FROM llm_cache)").fetchall()[0][0]


def _merge_batches(con, src: str, summary: MergeSummary) -> None:
    cols = ", ".join(_columns(con, "llm_batches"))
    summary.added["llm_batches"] = summary.added.get("llm_batches", 0) + con.execute(
        f"INSERT INTO llm_batches ({cols}) SELECT {cols} FROM {src}.llm_batches "
        "WHERE submission_id NOT IN (SELECT submission_id FROM llm_batches)").fetchall()[0][0]


def _quoted(path: Path) -> str:
    """A path inside a SQL string literal (ATTACH takes no parameters)."""
    return str(path).replace("'", "''")
