"""A kill never bricks a store (issue 38): `python -m ingest` of a 300 MB suite into a store that
already holds it, killed with SIGKILL at 20 moments of its write phase (from the moment its writer
lock appears to past the end of its usual write), leaves a store every command opens, with the
data of its last complete write, and the next ingest writes to it. A store an earlier Faultline's
killed ingest left with staging views in it is read, and repaired by the next writer, with a note."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from tests.conftest import ROOT, q, run_module
from tests.seed_store import seed

KILLS = 20


@pytest.fixture(scope="module")
def big_suite(tmp_path_factory) -> Path:
    from bench.ingest import generate_suite

    suite = tmp_path_factory.mktemp("suite") / "synthetic_300"
    generate_suite(suite, n_runs=300, per_run=480)  # 144,000 predictions, about 300 MB of JSON
    assert sum(f.stat().st_size for f in suite.rglob("*") if f.is_file()) >= 300e6 * 0.95
    return suite


def _counts(db: Path) -> tuple:
    return q(db, "SELECT count(*), count(DISTINCT run_id), sum(is_correct::INT) FROM outcomes")[0]


def _write_phase(db: Path, suite: Path, kill_after: float | None) -> float:
    """Start an ingest of `suite` into `db`; once its writer lock appears, wait `kill_after` s and
    SIGKILL it (None: let it finish). Returns how long the lock was held (or until the kill)."""
    lock = db.with_name(db.name + ".writer.lock")
    proc = subprocess.Popen([sys.executable, "-m", "ingest", str(suite), "--db", str(db)], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        while not lock.exists():
            assert proc.poll() is None, proc.stderr.read()
            time.sleep(0.002)
        started = time.monotonic()
        if kill_after is None:
            assert proc.wait(timeout=600) == 0, proc.stderr.read()
            return time.monotonic() - started
        time.sleep(kill_after)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
        return time.monotonic() - started
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stderr.close()


@pytest.mark.slow
@pytest.mark.timeout(2400)
def test_an_ingest_killed_at_20_moments_of_its_write_never_bricks_the_store(big_suite, tmp_path):
    db = tmp_path / "store.duckdb"
    first = run_module("ingest", big_suite, "--db", db, timeout=600)
    assert first.returncode == 0, first.stderr
    expected = _counts(db)
    assert expected[:2] == (144_000, 300)
    write = _write_phase(db, big_suite, None)  # how long a write into a store holding the suite takes
    small = tmp_path / "small"
    small.mkdir()
    for run in sorted(big_suite.iterdir())[:3]:
        if run.is_dir():
            os.symlink(run, small / run.name)
    (small / "schema.json").write_bytes((big_suite / "schema.json").read_bytes())
    moments = [write * 1.2 * i / (KILLS - 1) for i in range(KILLS)]
    outcomes = []
    for moment in moments:
        held = _write_phase(db, big_suite, moment)
        # every command opens it, and it holds the runs of its last complete write
        accuracy = run_module("stats", "accuracy", "--json", "--db", db)
        assert accuracy.returncode == 0, (moment, accuracy.stderr)
        assert _counts(db) == expected, moment
        # and the next ingest writes to it
        again = run_module("ingest", small, "--db", db)
        assert again.returncode == 0, (moment, again.stderr)
        assert "staging" not in again.stderr  # nothing of the killed write was left in the store
        assert _counts(db) == expected, moment
        outcomes.append(round(held, 2))
    assert len(outcomes) == KILLS
    # no staging folder of a killed ingest outlives the next one
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".store.duckdb.ingest-")] == []
    final = run_module("ingest", big_suite, "--db", db, timeout=600)
    assert final.returncode == 0, final.stderr
    assert _counts(db) == expected


def _leave_staging_views(db: Path) -> None:
    """What an earlier Faultline's ingest killed while it committed left in the store: persistent
    views named _staged_* over Parquet files that are gone."""
    import shutil

    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = db.with_name(f".{db.name}.ingest-999999")
    folder.mkdir()
    con = duckdb.connect(str(db))
    try:
        for table in ("runs", "instances", "predictions", "transcript_steps"):
            pq.write_table(pa.table({"run_id": ["r"]}), folder / f"{table}-000000.parquet")
            # as store/staging.py did: a relation's create_view is a view of the store itself
            con.read_parquet([str(folder / f"{table}-000000.parquet")]).create_view(f"_staged_{table}")
    finally:
        con.close()
    shutil.rmtree(folder)


def test_staging_views_a_killed_ingest_left_are_read_past_and_removed_by_the_next_writer(tmp_path):
    from tests.hostile_store import rows

    db = tmp_path / "left.duckdb"
    seed(db, rows())
    before = _counts(db)
    _leave_staging_views(db)
    note = ("an ingest killed while it wrote left 4 staging view(s) in the store (_staged_instances, "
            "_staged_predictions, _staged_runs, _staged_transcript_steps)")
    read = run_module("stats", "accuracy", "--json", "--db", db)
    assert read.returncode == 0, read.stderr
    assert f"note: {db}: {note}; they are never read, and the next command that writes to the store removes them" \
        in read.stderr
    assert _counts(db) == before
    migrate = run_module("ingest", "--migrate", db)
    assert migrate.returncode == 0, migrate.stderr
    assert f"note: {db}: {note}; removed them (the store's data is as its last complete write left it)" in migrate.stderr
    assert q(db, "SELECT count(*) FROM duckdb_views() WHERE view_name LIKE '\\_staged%' ESCAPE '\\'") == [(0,)]
    assert _counts(db) == before
    again = run_module("stats", "accuracy", "--json", "--db", db)
    assert again.returncode == 0 and "note:" not in again.stderr, again.stderr


def test_a_view_named_like_staging_but_elsewhere_is_still_refused(tmp_path):
    """Only the four names in the store's main schema are taken for leftovers."""
    from tests.hostile_store import rows

    db = tmp_path / "other.duckdb"
    seed(db, rows())
    con = duckdb.connect(str(db))
    con.execute("CREATE VIEW _staged_secrets AS SELECT 1 AS x")
    con.close()
    r = run_module("stats", "accuracy", "--json", "--db", db)
    assert r.returncode == 2 and "view _staged_secrets (not Faultline's)" in r.stderr, r.stderr
