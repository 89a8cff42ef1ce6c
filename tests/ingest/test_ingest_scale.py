"""Issue 18, streaming ingest: a load bigger than one chunk is staged on disk while it is parsed,
so memory stays bounded whatever the load's size, and it still stores all of a command or
nothing, replaces re-ingested runs, judges dataset-column scales over every input, refuses two
copies of one run and reads its staging never as a log."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from child_runs import run_measured
from conftest import FIXTURES, ROOT, q, requires_fixtures, run_module
from helm_gen import Case, Run, write_run, write_schema
from ingest import IngestError, ingest_paths
from ingest.report import OWN_TABLE
from ingest_inputs import helm_run, preds, write_jsonl
from store import staging
from store_tables import differing_tables

MiB = 1024**2


def _bench_ingest():
    spec = importlib.util.spec_from_file_location("bench_ingest", ROOT / "bench" / "ingest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def chunked(monkeypatch) -> list[int]:
    """Every run its own chunk (FAULTLINE_INGEST_CHUNK_BYTES=1); the list counts chunks written."""
    monkeypatch.setenv("FAULTLINE_INGEST_CHUNK_BYTES", "1")
    written: list[int] = []
    write = staging.RunStaging._write_chunk

    def counted(self):
        written.append(len(self._chunk))
        return write(self)

    monkeypatch.setattr(staging.RunStaging, "_write_chunk", counted)
    return written


def _staging_left(db: Path) -> list[Path]:
    return sorted(db.parent.glob(f".{db.name}.ingest-*"))


# ---------------------------------------------------------------- memory


# The old loader held every parsed run until the write: 921 MB for this suite (measured with the
# code before streaming, on this machine); staged in chunks, about 450 MB.
MEMORY_LIMIT = 700 * MiB


@pytest.mark.slow
def test_a_200k_prediction_suite_ingests_under_a_memory_limit(tmp_path, monkeypatch):
    suite = tmp_path / "suite"
    _bench_ingest().generate_suite(suite, n_runs=200, per_run=1000)
    monkeypatch.setenv("FAULTLINE_INGEST_CHUNK_BYTES", str(16 * MiB))
    # one process, so that its own high-water mark is the ingest's peak (no workers)
    monkeypatch.setenv("FAULTLINE_PARALLEL_MIN_BYTES", str(10**12))
    db = tmp_path / "big.duckdb"
    result, peak = run_measured(suite, "--db", db)
    assert result.returncode == 0, result.stderr
    assert "ingested 200 runs, 200,000 predictions, 80,014 failures" in result.stdout
    assert peak < MEMORY_LIMIT, f"peak {peak / MiB:.0f} MiB"
    assert q(db, "SELECT count(*), count(*) FILTER (WHERE NOT is_correct) FROM predictions") == [(200_000, 80_014)]
    assert _staging_left(db) == []


# ---------------------------------------------------------------- staged loads store what in-memory ones do


def _mixed_inputs(tmp_path: Path) -> list[Path]:
    suite = tmp_path / "suite"
    for m in ("a", "b"):
        helm_run(suite / f"run_{m}", name=f"mmlu:subject=anatomy,model=m_{m}", model=f"m/{m}", n=6)
    # a scale settled on the column over both runs: the schema's display name says 1–5 jury
    # scores, which the scores 0.2–1 contradict; the name `qa_accuracy` says 0–1, which they fit
    jury = tmp_path / "jury"
    for m, scores in (("a", [0.5, 0.4, 0.2]), ("b", [0.5, 1.0, 0.8])):
        write_run(jury, Run("qa", m, ["qa"], [Case(f"q{i}", f"question {i}", "x", {"qa_accuracy": v})
                                              for i, v in enumerate(scores)]))
    write_schema(jury, {"qa": ("qa_accuracy", "test")}, {"qa_accuracy": "QA Jury Score"})
    return [suite, jury, write_jsonl(tmp_path / "c.jsonl", preds("m/c", 5))]


STAMPS = {"runs": ("ingested_at",), "schema_migrations": ("applied_at",)}


def test_a_load_staged_in_chunks_stores_what_one_held_in_memory_does(tmp_path, monkeypatch, chunked):
    inputs = _mixed_inputs(tmp_path)
    staged = ingest_paths(inputs, db=tmp_path / "staged.duckdb")
    assert len(chunked) == 5  # every run went to disk on its own
    monkeypatch.delenv("FAULTLINE_INGEST_CHUNK_BYTES")
    held = ingest_paths(inputs, db=tmp_path / "held.duckdb")
    assert len(chunked) == 5  # ... and none this time
    assert differing_tables(tmp_path / "staged.duckdb", tmp_path / "held.duckdb", STAMPS) == {}
    assert staged.line().split(" in ")[0] == held.line().split(" in ")[0] == (
        "ingested 5 runs, 23 predictions, 12 failures")
    assert staged.details() == held.details()
    # the dataset-column scale spans both files, though each was a chunk of its own
    assert q(tmp_path / "staged.duckdb", "SELECT model, score, is_correct FROM outcomes WHERE dataset = 'qa' ORDER BY 1, 2") == [
        ("a", 0.2, False), ("a", 0.4, False), ("a", 0.5, False),
        ("b", 0.5, False), ("b", 0.8, True), ("b", 1.0, True),
    ]
    assert q(tmp_path / "staged.duckdb", "SELECT DISTINCT n_failures, pass_threshold, scale_source FROM runs WHERE model = 'a'") == [
        (3, 0.7, "name rule")]
    # judged first on the display name's 1–5 (every score fails at 3.8), then on 0–1 once both
    # runs, each in a chunk on disk, were read
    assert q(tmp_path / "staged.duckdb", "SELECT DISTINCT metric_min, metric_max FROM runs WHERE dataset = 'qa'") == [(0.0, 1.0)]
    assert _staging_left(tmp_path / "staged.duckdb") == []


@requires_fixtures
def test_every_fixture_log_staged_in_chunks_stores_what_one_held_in_memory_does(tmp_path, monkeypatch, chunked):
    staged = ingest_paths([FIXTURES], db=tmp_path / "staged.duckdb")
    assert len(chunked) == staged.runs
    monkeypatch.delenv("FAULTLINE_INGEST_CHUNK_BYTES")
    held = ingest_paths([FIXTURES], db=tmp_path / "held.duckdb")
    assert differing_tables(tmp_path / "staged.duckdb", tmp_path / "held.duckdb", STAMPS) == {}
    assert (staged.runs, staged.predictions, staged.failures) == (held.runs, held.predictions, held.failures)
    assert staged.details() == held.details()


@pytest.mark.parametrize("start", ["fork", "spawn"])
def test_parallel_parsing_staged_in_chunks_stores_what_serial_parsing_does(tmp_path, monkeypatch, start):
    suite = tmp_path / "suite"
    for r in range(7):
        helm_run(suite / f"run{r}", name=f"mmlu:subject=s{r},model=m_a", n=40, text_words=20)
    # as a user runs it: spawned workers re-import the parent's main module, which inside this
    # test process may be whatever script ran last (an AppTest page)
    monkeypatch.setenv("FAULTLINE_INGEST_CHUNK_BYTES", "1")
    monkeypatch.setenv("FAULTLINE_PARALLEL_MIN_BYTES", "1")
    monkeypatch.setenv("FAULTLINE_WORKER_START", start)
    parallel = run_module("ingest", suite, "--db", tmp_path / "parallel.duckdb")
    monkeypatch.setenv("FAULTLINE_PARALLEL_MIN_BYTES", str(10**12))
    serial = run_module("ingest", suite, "--db", tmp_path / "serial.duckdb")
    assert parallel.returncode == serial.returncode == 0, (parallel.stderr, serial.stderr)
    # every run's spec says subject anatomy, ids id0..id39: reruns of one model on the same questions
    assert parallel.stdout.split(" in ")[0] == serial.stdout.split(" in ")[0]
    assert parallel.stdout.splitlines()[-1].split(" in ")[0] == (
        "ingested 7 runs, 280 predictions, 140 failures, 6 earlier reruns collapsed (the latest counts)")
    assert differing_tables(tmp_path / "parallel.duckdb", tmp_path / "serial.duckdb", STAMPS) == {}


# ---------------------------------------------------------------- all or nothing, identity, re-ingest


def test_a_bad_input_after_staged_chunks_leaves_the_store_as_it_was(tmp_path, tmp_db, chunked):
    before = write_jsonl(tmp_path / "before.jsonl", preds("m/before", 3))
    ingest_paths([before], db=tmp_db)
    stored = q(tmp_db, "SELECT run_id, ingested_at, n_predictions FROM runs")
    good = [write_jsonl(tmp_path / f"good{i}.jsonl", preds(f"m/good{i}", 4)) for i in range(3)]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(preds("m/bad", 1)[0]) + "\n{not json\n")
    chunked.clear()
    with pytest.raises(IngestError, match="bad.jsonl:2:2: invalid JSON"):
        ingest_paths([*good, bad], db=tmp_db)
    assert len(chunked) == 3  # three runs were on disk when the bad file came
    assert q(tmp_db, "SELECT run_id, ingested_at, n_predictions FROM runs") == stored
    assert q(tmp_db, "SELECT count(*) FROM predictions") == [(3,)]
    assert _staging_left(tmp_db) == []


def test_reingesting_in_chunks_replaces_each_run(tmp_path, tmp_db, chunked):
    inputs = _mixed_inputs(tmp_path)
    first = ingest_paths(inputs, db=tmp_db)
    stamped = q(tmp_db, "SELECT max(ingested_at) FROM runs")[0][0]
    again = ingest_paths(inputs, db=tmp_db)
    assert again.run_ids == first.run_ids
    assert q(tmp_db, "SELECT count(*), count(DISTINCT ingested_at), min(ingested_at) > ? FROM runs", [stamped]) == [
        (5, 1, True)]
    assert q(tmp_db, "SELECT count(*) FROM predictions") == [(23,)]
    assert q(tmp_db, "SELECT count(*) FROM latest_outcomes") == [(23,)]


def test_the_same_file_twice_across_chunks_is_stored_once_and_said(tmp_path, tmp_db, chunked):
    a = write_jsonl(tmp_path / "a.jsonl", preds("m/a", 4))
    b = write_jsonl(tmp_path / "b.jsonl", preds("m/b", 2))
    summary = ingest_paths([a, b, a], db=tmp_db)
    assert f"1 run(s) given more than once ({a.resolve()}), stored once" in summary.line()
    assert (summary.runs, summary.predictions) == (2, 6)
    assert q(tmp_db, "SELECT count(*) FROM predictions") == [(6,)]


def test_two_copies_of_one_run_in_different_chunks_are_refused_naming_both(tmp_path, tmp_db, chunked):
    suite = tmp_path / "suite"
    first = helm_run(suite / "run", name="mmlu:subject=anatomy,model=m_a")
    helm_run(suite / "other", name="mmlu:subject=anatomy,model=m_b", model="m/b")
    copy = helm_run(suite / "run (copy)", name="mmlu:subject=anatomy,model=m_a")
    with pytest.raises(IngestError, match="are the same run") as refused:
        ingest_paths([suite], db=tmp_db)
    assert f"{first.resolve()} and {copy.resolve()}" in str(refused.value)
    assert len(chunked) >= 1  # a run was already staged when the copy was found
    assert not tmp_db.exists()
    assert _staging_left(tmp_db) == []


# ---------------------------------------------------------------- the staging folder


def test_an_ingest_of_the_folder_holding_the_store_never_reads_its_staging(tmp_path, chunked):
    for m in ("a", "b", "c"):
        write_jsonl(tmp_path / f"{m}.jsonl", preds(f"m/{m}", 3))
    helm_run(tmp_path / "suite" / "run")
    db = tmp_path / "store.duckdb"
    # the custom files first (each a chunk on disk), then a walk of the folder holding it all
    summary = ingest_paths([*sorted(tmp_path.glob("*.jsonl")), tmp_path], db=db)
    assert summary.runs == 4
    assert len(chunked) == 4
    assert summary.skipped == {OWN_TABLE: [str(tmp_path / f"{m}.jsonl") for m in ("a", "b", "c")]}


def test_staging_left_by_a_killed_ingest_is_removed_by_the_next(tmp_path, tmp_db, chunked):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    abandoned = staging.staging_folder(tmp_db, int(dead.stdout))
    abandoned.mkdir()
    (abandoned / "runs-000000.parquet").write_bytes(b"left by kill -9")
    running = staging.staging_folder(tmp_db, os.getppid())  # a live process's: not ours to remove
    running.mkdir()
    ingest_paths([write_jsonl(tmp_path / "a.jsonl", preds("m/a", 2))], db=tmp_db)
    assert not abandoned.exists()
    assert running.exists()
    assert _staging_left(tmp_db) == [running]


def test_latest_outcomes_recomputed_a_batch_of_groups_at_a_time_equal_one_batch(tmp_path, monkeypatch):
    from store import runs

    inputs = _mixed_inputs(tmp_path)
    ingest_paths(inputs, db=tmp_path / "whole.duckdb")
    batches = []
    original = runs._batches
    monkeypatch.setattr(runs, "LATEST_BATCH_PREDICTIONS", 6)  # the two qa groups (3 + 3), then one group each
    monkeypatch.setattr(runs, "_batches", lambda *a: batches.append(original(*a)) or batches[-1])
    ingest_paths(inputs, db=tmp_path / "batched.duckdb")
    assert [[len(b) for b in call] for call in batches] == [[2, 1, 1, 1]]
    assert differing_tables(tmp_path / "batched.duckdb", tmp_path / "whole.duckdb", STAMPS) == {}


def test_a_write_the_store_cannot_take_is_a_clear_error_and_stores_nothing(tmp_path, tmp_db, chunked, monkeypatch):
    import duckdb

    from store import StoreError, runs

    before = write_jsonl(tmp_path / "before.jsonl", preds("m/before", 3))
    ingest_paths([before], db=tmp_db)
    stored = q(tmp_db, "SELECT run_id, ingested_at FROM runs")

    def out_of_memory(con, groups):
        raise duckdb.OutOfMemoryException("Out of Memory Error: failed to pin block of size 256.0 KiB")

    monkeypatch.setattr(runs, "refresh_groups", out_of_memory)
    with pytest.raises(StoreError) as refused:
        ingest_paths(_mixed_inputs(tmp_path), db=tmp_db)
    assert refused.value.message == (f"{tmp_db}: the store could not take this load, nothing of it was written: "
                                     "Out of Memory Error: failed to pin block of size 256.0 KiB")
    assert q(tmp_db, "SELECT run_id, ingested_at FROM runs") == stored
    assert _staging_left(tmp_db) == []
