"""Issue 18, shards combine: `python -m ingest merge STORE... --db DB` gives the store one ingest of
every input would have given (runs, analyses, classifications, taxonomies, reviews, LLM cache and
calls, and what is derived from them), refuses a run or taxonomy that two stores hold
differently, adds nothing when repeated, and reads stores of an older Faultline."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import duckdb
import pytest

from conftest import q, run_module
from ingest import ingest_paths
from llm_server import FakeLLMServer
from store import MIGRATIONS, write_session
from store.calibration import record_calibration, record_sample
from store.merge import RULES, merge_stores
from store.queries import record_review
from store_tables import differing_tables, table_names, table_rows
from taxonomy import LLMSettings, analyze
from taxonomy.verify import verify

MODEL = "openai/test-model"
VERIFIER = "openai/test-verifier"
# What two stores built at different times cannot share: when each row was written, the ids its
# sequences drew, how long each LLM request took. Everything else must be equal.
WHEN = {
    "runs": ("ingested_at",),
    "analyses": ("created_at",),
    "classifications": ("created_at",),
    # which analysis a verdict is on, by when that analysis was made
    "verifications": ("created_at", "analysed_at"),
    "taxonomies": ("created_at",),
    "reviews": ("review_id", "created_at"),
    "llm_cache": ("created_at",),
    "llm_calls": ("call_id", "created_at", "latency_ms"),
    "failure_labels": ("analysed_at",),
    "schema_migrations": ("applied_at",),
    "review_samples": ("created_at",),
    "calibrations": ("created_at",),
}


def _dataset(path: Path, dataset: str, models: str, n: int = 6, twist: str = "") -> Path:
    rows = [{"model": f"m/{m}", "dataset": dataset, "instance_id": f"q{i}", "input": f"{dataset} question {i}",
             "output": f"{dataset} answer {m}{i}{twist}", "reference": f"gold {i}", "correct": (i + ord(m)) % 3 == 0}
            for m in models for i in range(n)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def inputs(tmp_path) -> list[Path]:
    return [_dataset(tmp_path / "qa.jsonl", "qa", "abc"), _dataset(tmp_path / "math.jsonl", "math", "ab")]


@pytest.fixture
def server(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    with FakeLLMServer() as srv:
        yield srv


def _store(db: Path, inputs: list[Path], srv: FakeLLMServer, review: bool) -> Path:
    """Ingest `inputs` in one command, analyse them with an LLM analyst and the offline one, verify
    the LLM's analyses, and record one human review when `review`."""
    ingest_paths(inputs, db=db)
    analyze(db, MODEL, classifier="offline", settings=LLMSettings(api_base=srv.api_base, concurrency=2, timeout=5.0))
    analyze(db, "offline")
    verify(db, VERIFIER, analyst=MODEL, settings=LLMSettings(api_base=srv.api_base, timeout=5.0))
    if review:
        run_id = _run_of(db, "m/a", "qa")  # whose q1 failed
        with write_session(db) as con:
            record_review(con, run_id, "q1", MODEL, "relabel", "Refusal", "Factual Error", "checked", "ana")
            # a drawn review sample and a stored calibration: records a merge carries like reviews
            record_sample(con, "s1", MODEL, 7, [{"run_id": run_id, "instance_id": "q1", "train_trial_index": 0,
                                                 "stratum": "Refusal", "stratum_size": 3, "stratum_drawn": 1}])
            record_calibration(con, MODEL, "erroratlas-v1", "stage1-v2", "0123456789abcdef", 1, {"all": {"n": 1}})
    return db


def _run_of(db: Path, model: str, dataset: str) -> str:
    return q(db, "SELECT run_id FROM runs WHERE model = ? AND dataset = ?", [model, dataset])[0][0]


def test_a_merge_of_two_shards_equals_one_store_built_from_all_inputs(tmp_path, inputs, server):
    qa, math = inputs
    a = _store(tmp_path / "a.duckdb", [qa], server, review=True)
    b = _store(tmp_path / "b.duckdb", [math], server, review=False)
    whole = _store(tmp_path / "whole.duckdb", [qa, math], server, review=True)
    merged = tmp_path / "merged.duckdb"

    result = run_module("ingest", "merge", a, b, "--db", merged)

    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(
        f"merged 2 stores into {merged}: 5 runs, 30 predictions, 40 analyses, ")
    assert differing_tables(merged, whole, WHEN) == {}
    # not an empty comparison: every kind of record is there
    counts = {t: len(table_rows(merged, t)[1]) for t in table_names(merged)}
    assert counts == {
        "analyses": 40, "classifications": counts["classifications"], "failure_labels": 40, "instances": 30,
        "latest_labels": 40, "latest_outcomes": 30, "llm_batches": 0, "llm_cache": 40, "llm_calls": 40,
        "predictions": 30, "reviews": 1, "review_samples": 1, "calibrations": 1, "runs": 5, "schema_migrations": len(MIGRATIONS), "taxonomies": 1,
        "transcript_steps": 0, "verifications": 20,
    }
    assert counts["classifications"] > 0
    assert q(merged, "SELECT DISTINCT variant FROM runs") == [(None,)]


def test_merging_again_adds_nothing(tmp_path, inputs):
    a, b = tmp_path / "a.duckdb", tmp_path / "b.duckdb"
    ingest_paths([inputs[0]], db=a)
    ingest_paths([inputs[1]], db=b)
    analyze(a, "offline")
    merged = tmp_path / "merged.duckdb"
    first = merge_stores([a, b], db=merged)
    before = {t: table_rows(merged, t) for t in table_names(merged)}
    again = merge_stores([b, a, b], db=merged)
    assert {t: table_rows(merged, t) for t in table_names(merged)} == before
    assert (first.runs, first.runs_present, first.added["analyses"]) == (5, 0, 12)
    assert (again.stores, again.runs, again.runs_present, again.predictions) == (2, 0, 5, 0)
    assert set(again.added.values()) == {0}
    assert f"{b} given more than once, merged once" in again.line()


def test_a_run_two_stores_hold_differently_is_refused_naming_both(tmp_path, inputs):
    qa = inputs[0]
    a, b, merged = tmp_path / "a.duckdb", tmp_path / "b.duckdb", tmp_path / "merged.duckdb"
    ingest_paths([qa], db=a)
    _dataset(qa, "qa", "abc", twist=" (regenerated)")  # the same log, rewritten: the same runs
    ingest_paths([qa], db=b)

    result = run_module("ingest", "merge", a, b, "--db", merged)

    assert result.returncode == 2, result.stdout
    assert "Traceback" not in result.stderr
    (run_id, name), = q(a, "SELECT run_id, run_name FROM runs ORDER BY run_id LIMIT 1")
    assert (f"error: run {name!r} ({run_id}) is in {a} and in {b} with different row and predictions: it was "
            "ingested differently") in result.stderr, result.stderr
    assert not merged.exists()  # a refused merge into a new store leaves none
    # into a store that already holds one copy: named as the target, and left as it was
    before = {t: table_rows(a, t) for t in table_names(a)}
    result = run_module("ingest", "merge", b, "--db", a)
    assert result.returncode == 2
    assert f"is in {a} and in {b} with different" in result.stderr
    assert {t: table_rows(a, t) for t in table_names(a)} == before


def test_the_same_run_in_two_stores_is_one_run(tmp_path, inputs):
    qa, math = inputs
    a, b, merged = tmp_path / "a.duckdb", tmp_path / "b.duckdb", tmp_path / "merged.duckdb"
    ingest_paths([qa], db=a)
    ingest_paths([qa, math], db=b)
    summary = merge_stores([a, b], db=merged)
    assert (summary.runs, summary.runs_present) == (5, 3)
    assert q(merged, "SELECT count(*) FROM runs") == [(5,)]
    assert q(merged, "SELECT count(*) FROM predictions") == [(30,)]


def test_a_taxonomy_version_two_stores_define_differently_is_refused(tmp_path, inputs):
    a, b, merged = tmp_path / "a.duckdb", tmp_path / "b.duckdb", tmp_path / "merged.duckdb"
    for db, categories in ((a, ["Tone", "Other"]), (b, ["Wrong Policy", "Other"])):
        ingest_paths([inputs[0]], db=db)
        with write_session(db) as con:
            con.execute("INSERT INTO taxonomies VALUES ('support-v1', 'Support', 'mine.yaml', ?, now())",
                        [json.dumps(categories)])
    result = run_module("ingest", "merge", a, b, "--db", merged)
    assert result.returncode == 2
    assert f"taxonomy 'support-v1' has different categories in {a} and in {b}" in result.stderr


def test_a_prompt_answered_differently_keeps_the_first_answer_and_says_so(tmp_path, inputs):
    a, b, merged = tmp_path / "a.duckdb", tmp_path / "b.duckdb", tmp_path / "merged.duckdb"
    ingest_paths([inputs[0]], db=a)
    ingest_paths([inputs[1]], db=b)
    for db, answer in ((a, "first"), (b, "second")):
        with write_session(db) as con:
            con.execute("INSERT INTO llm_cache (cache_key, model, prompt_version, response_text, prompt_tokens,"
                        " completion_tokens, created_at) VALUES ('k1', 'm', 'v1', ?, 1, 1, now())", [answer])
    summary = merge_stores([a, b], db=merged)
    assert q(merged, "SELECT cache_key, response_text FROM llm_cache") == [("k1", "first")]
    assert f"{b}: 1 cached prompt(s) answered differently there; kept the answer already stored" in summary.line()


# ---------------------------------------------------------------- stores of other Faultline versions


def _older_store(current: Path, old: Path, migrations: int) -> Path:
    """`current`'s runs as a Faultline with only the first `migrations` migrations stored them."""
    con = duckdb.connect(str(old))
    try:
        con.execute("CREATE TABLE schema_migrations (id INTEGER PRIMARY KEY, name VARCHAR NOT NULL,"
                    " applied_at TIMESTAMP NOT NULL)")
        for i, (name, sql) in enumerate(MIGRATIONS[:migrations], start=1):
            con.execute(sql)
            con.execute("INSERT INTO schema_migrations VALUES (?, ?, now())", [i, name])
        con.execute(f"ATTACH '{current}' AS cur (READ_ONLY)")
        for table in ("runs", "instances", "predictions", "latest_outcomes"):
            cols = ", ".join(r[0] for r in con.execute(
                "SELECT column_name FROM duckdb_columns() WHERE database_name = 'old' AND table_name = ?",
                [table]).fetchall())
            con.execute(f"INSERT INTO {table} ({cols}) SELECT {cols} FROM cur.{table}")
    finally:
        con.close()
    return old


def test_a_store_of_an_older_faultline_is_read_through_a_migrated_copy(tmp_path, inputs):
    current = tmp_path / "current.duckdb"
    ingest_paths(inputs, db=current)
    old = _older_store(current, tmp_path / "old.duckdb", migrations=8)  # before 009's evidence columns
    fingerprint = hashlib.sha256(old.read_bytes()).hexdigest()
    merged = tmp_path / "merged.duckdb"

    summary = merge_stores([old], db=merged)

    assert f"{old}: from an older Faultline (up to 008_failure_labels_at_write_time); read through a migrated copy" in summary.line()
    assert hashlib.sha256(old.read_bytes()).hexdigest() == fingerprint
    # what 010 records of how each run was judged, an older Faultline never stored
    unrecorded = {**WHEN, "runs": (*WHEN["runs"], "metric_min", "headline_metric", "verdict_rule")}
    assert differing_tables(merged, current, unrecorded) == {}
    assert q(merged, "SELECT count(*), count(verdict_rule) FROM runs") == [(5, 0)]
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # the copy is gone


def test_what_is_not_a_store_of_this_faultline_is_refused(tmp_path, inputs):
    newer = tmp_path / "newer.duckdb"
    ingest_paths([inputs[0]], db=newer)
    with write_session(newer) as con:
        con.execute("INSERT INTO schema_migrations VALUES (999, '999_from_the_future', now())")
    plain = tmp_path / "plain.duckdb"
    duckdb.connect(str(plain)).execute("CREATE TABLE t (x INTEGER)").close()
    for source, message in (
        (newer, f"{newer} has migrations this Faultline does not know (999_from_the_future): a newer "
                "Faultline wrote it; upgrade Faultline"),
        (plain, f"{plain}: a DuckDB database, but not a Faultline store (no schema_migrations table)"),
        (inputs[0], f"{inputs[0]}: not a DuckDB database"),
        (tmp_path / "missing.duckdb", f"{tmp_path / 'missing.duckdb'}: no such store"),
        (tmp_path, f"{tmp_path}: a folder, not a store file"),
    ):
        result = run_module("ingest", "merge", source, "--db", tmp_path / "merged.duckdb")
        assert result.returncode == 2, (source, result.stdout)
        assert message in result.stderr, result.stderr
        assert "Traceback" not in result.stderr
    assert not (tmp_path / "merged.duckdb").exists()
    result = run_module("ingest", "merge", newer, "--db", newer)
    assert result.returncode == 2
    assert "is the target store itself" in result.stderr


def test_every_table_has_a_merge_rule(tmp_path):
    db = tmp_path / "fresh.duckdb"
    with write_session(db):
        pass
    assert sorted(table_names(db)) == sorted(RULES)


def test_a_store_given_to_ingest_points_to_merge(tmp_path, inputs):
    shard = tmp_path / "shard.duckdb"
    ingest_paths([inputs[0]], db=shard)
    result = run_module("ingest", shard, "--db", tmp_path / "x.duckdb")
    assert result.returncode == 2
    assert f"{shard}: a DuckDB database, not a log; to bring in the runs and analyses of another Faultline store: " \
           f"python -m ingest merge {shard} --db {tmp_path / 'x.duckdb'}" in result.stderr
    assert not (tmp_path / "x.duckdb").exists()


def test_a_batch_submission_is_merged_once_so_resume_collects_it_once(tmp_path, inputs, server):
    """`llm_batches` (verify --batch): the merged store holds the shard's submission, and the
    LLM calls its lines were billed as; merging the shard again adds neither."""
    shard = tmp_path / "shard.duckdb"
    ingest_paths([inputs[0]], db=shard)
    analyze(shard, MODEL, classifier="offline",
            settings=LLMSettings(api_base=server.api_base, concurrency=2, timeout=5.0))
    verify(shard, VERIFIER, analyst=MODEL,
           settings=LLMSettings(api_base=server.api_base, timeout=5.0, batch=True, poll_interval=0.05))
    submitted = q(shard, "SELECT submission_id, batch_id, n_requests, status FROM llm_batches")
    assert len(submitted) == 1 and submitted[0][3] == "collected"
    merged = tmp_path / "merged.duckdb"

    first = merge_stores([shard], db=merged)
    again = merge_stores([shard], db=merged)

    assert q(merged, "SELECT submission_id, batch_id, n_requests, status FROM llm_batches") == submitted
    assert (first.added["llm_batches"], again.added["llm_batches"]) == (1, 0)
    assert q(merged, "SELECT count(*) FROM llm_calls WHERE batch_id = ?", [submitted[0][1]]) == \
        q(shard, "SELECT count(*) FROM llm_calls WHERE batch_id = ?", [submitted[0][1]])
