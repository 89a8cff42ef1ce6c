"""Store plumbing: migrations recorded in order, upgrades, lock handling, clear errors."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from datetime import datetime

import duckdb
import pytest

from conftest import ROOT, q
from older_stores import store_before
from store import MIGRATIONS, StoreError, read_connection, resolve_db_path, write_session
from store.analysis import refresh_labels
from store.migrations import migrate


def test_migrations_are_recorded_in_order_once(tmp_db):
    with write_session(tmp_db):
        pass
    with write_session(tmp_db):
        pass
    rows = q(tmp_db, "SELECT id, name FROM schema_migrations ORDER BY id")
    assert rows == [(i, name) for i, (name, _) in enumerate(MIGRATIONS, start=1)]


def test_an_older_store_is_upgraded_in_place(tmp_db):
    con = store_before(tmp_db, 3)
    con.execute(
        "INSERT INTO runs (run_id, source_format, source_path, content_hash, run_name, model, dataset, "
        "n_predictions, n_failures, n_infra_errors, record_schema_version, ingested_at) "
        "VALUES ('r', 'jsonl', '/x', 'h', 'x', 'm', 'd', 0, 0, 0, 1, now())"
    )
    con.close()
    with write_session(tmp_db):
        pass
    assert q(tmp_db, "SELECT run_id, status FROM runs") == [("r", "complete")]
    assert [r[0] for r in q(tmp_db, "SELECT name FROM schema_migrations ORDER BY id")] == [n for n, _ in MIGRATIONS]


def test_a_store_from_a_newer_faultline_is_refused(tmp_db):
    con = duckdb.connect(str(tmp_db))
    migrate(con)
    con.execute("INSERT INTO schema_migrations VALUES (999, '999_from_the_future', now())")
    with pytest.raises(StoreError, match="999_from_the_future"):
        migrate(con)
    con.close()


def test_missing_store_says_how_to_load_data(tmp_path):
    with pytest.raises(StoreError, match=r"no database here yet; load logs with `python -m ingest PATH`"):
        with read_connection(tmp_path / "none.duckdb"):
            pass


def test_db_path_precedence(monkeypatch, tmp_path):
    monkeypatch.delenv("FAULTLINE_DB", raising=False)
    assert resolve_db_path() == ROOT / "data" / "faultline.duckdb"
    monkeypatch.setenv("FAULTLINE_DB", str(tmp_path / "env.duckdb"))
    assert resolve_db_path() == tmp_path / "env.duckdb"
    assert resolve_db_path(tmp_path / "flag.duckdb") == tmp_path / "flag.duckdb"


def test_lock_held_too_long_is_a_clear_error(tmp_db):
    with write_session(tmp_db):
        pass
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import duckdb, sys, time
            con = duckdb.connect({str(tmp_db)!r})
            print("held", flush=True)
            time.sleep(20)
        """)],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(StoreError, match="another process has held the database"):
            with read_connection(tmp_db, timeout=0.5):
                pass
    finally:
        holder.kill()
        holder.wait()
    with read_connection(tmp_db, timeout=5) as con:
        assert con.execute("SELECT count(*) FROM runs").fetchone() == (0,)


def test_failures_take_the_classification_of_their_own_analysts_classifier(safety_db):
    from store import write_session

    with write_session(safety_db) as con:
        run_id, instance_id = con.execute(
            "SELECT run_id, instance_id FROM predictions WHERE NOT is_correct ORDER BY run_id, instance_id LIMIT 1"
        ).fetchone()
        rows = [
            (run_id, instance_id, 0, "offline", "offline-v1", "h", "Refuses a safe request", "s", "[]", None, "2026-01-01 00:00:01"),
            (run_id, instance_id, 0, "openai/m", "stage1-v1", "h", "Refuses a safe request", "s", "[]", None, "2026-01-01 00:00:02"),
        ]
        con.executemany("INSERT INTO analyses (run_id, instance_id, train_trial_index, analyst, prompt_version,"
                        " pair_hash, error_title, error_summary, required_criteria, cache_key, created_at)"
                        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
        classes = [
            ("Refuses a safe request", "erroratlas-v1", "offline/clf@1", "Refusal", False, None, "2026-01-01 00:00:03"),
            ("Refuses a safe request", "erroratlas-v1", "openai/m", "Policy Violation", False, None, "2026-01-01 00:00:04"),
        ]
        con.executemany("INSERT INTO classifications VALUES (?, ?, ?, ?, ?, ?, ?)", classes)
        refresh_labels(con)
    got = q(safety_db, "SELECT analyst, category, classifier FROM failures ORDER BY analyst")
    assert got == [("offline", "Refusal", "offline/clf@1"), ("openai/m", "Policy Violation", "openai/m")]
    # an analyst whose own classifier never saw the title takes the title's latest classification
    with write_session(safety_db) as con:
        con.execute("UPDATE analyses SET analyst = 'anthropic/x' WHERE analyst = 'openai/m'")
        refresh_labels(con)
    assert q(safety_db, "SELECT category FROM failures WHERE analyst = 'anthropic/x'") == [("Policy Violation",)]


def _write_in_subprocess(db, timeout: float, announce: bool = True) -> subprocess.CompletedProcess:
    """A CLI-like writer in another process: Faultline's write_session (which announces itself),
    or a bare read-write DuckDB connection (a `duckdb` shell, which does not) that gives up at once."""
    body = (f"""
        import sys, time
        sys.path.insert(0, {str(ROOT)!r})
        from store import write_session
        start = time.monotonic()
        with write_session({str(db)!r}, timeout={timeout}) as con:
            con.execute("INSERT INTO taxonomies VALUES ('v-new', 'n', 's', '[]', now())")
        print(f"{{time.monotonic() - start:.3f}}")
    """ if announce else f"""
        import duckdb
        duckdb.connect({str(db)!r}).close()
        print("opened")
    """)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(body)], capture_output=True,
                          text=True, timeout=60)


def test_a_lingering_reader_keeps_the_file_briefly_and_lets_an_announced_writer_in_at_once(tmp_db):
    from store import release_read_connections

    with write_session(tmp_db):
        pass
    try:
        with read_connection(tmp_db, linger=30) as con:
            assert con.execute("SELECT count(*) FROM taxonomies").fetchone() == (0,)
        # idle but lingering: the file stays open, so a writer that does not announce itself
        # (a duckdb shell) is refused ...
        bare = _write_in_subprocess(tmp_db, 0, announce=False)
        assert bare.returncode != 0 and "lock" in bare.stderr.lower()
        # ... while Faultline's writers announce themselves and the reader lets go within its
        # poll interval, far sooner than the 30 s linger
        writer = _write_in_subprocess(tmp_db, timeout=10)
        assert writer.returncode == 0, writer.stderr
        assert float(writer.stdout) < 5
        # the next lingering read opens the file afresh and sees the write
        with read_connection(tmp_db, linger=30) as con:
            assert con.execute("SELECT taxonomy_version FROM taxonomies").fetchall() == [("v-new",)]
        # and this process's own write session (the app's review) closes it first
        with write_session(tmp_db, timeout=5) as con:
            con.execute("DELETE FROM taxonomies")
        with read_connection(tmp_db, linger=30) as con:
            assert con.execute("SELECT count(*) FROM taxonomies").fetchone() == (0,)
    finally:
        release_read_connections()


def test_a_lingering_reader_closes_the_file_when_idle(tmp_db):
    with write_session(tmp_db):
        pass
    with read_connection(tmp_db, linger=0.2) as con:
        con.execute("SELECT count(*) FROM runs").fetchall()
    import time
    time.sleep(0.6)
    bare = _write_in_subprocess(tmp_db, 0, announce=False)
    assert bare.returncode == 0 and bare.stdout.strip() == "opened", bare.stderr


def test_labels_kept_at_write_time_equal_the_rule_recomputed(tmp_db):
    """failure_labels after each batch the pipeline writes (new analyses, re-analyses, new
    classifications of old titles) equals the label rule recomputed over everything."""
    from store.analysis import Batch, save_batch
    from tests.seed_store import seed

    seed(tmp_db, [dict(model="m", dataset="d", instance_id=f"q{i}", is_correct=False) for i in range(6)])
    run = "r1:m:d:None"

    def analysis(i, analyst, title, no_model_error=None):
        return (run, f"q{i}", 0, analyst, "p1", "h", title, f"why {title}", "[]", None, no_model_error, None)

    def labels(con):
        return con.execute("SELECT * EXCLUDE (analysed_at) FROM failure_labels ORDER BY ALL").fetchall()

    batches = [
        Batch(analyses=[analysis(i, "llm", f"t{i % 3}") for i in range(6)],
              classifications=[("t0", "v1", "llm", "Factual Error", False, None)]),
        # another classifier files t0 and t1: t1 takes it, t0 keeps the analyst's own
        Batch(classifications=[("t1", "v1", "other", "Reasoning Error", False, None),
                               ("t0", "v1", "other", "Refusal", False, None)]),
        # q0 analysed again (its latest title wins); the offline analyst on q1 with an offline
        # classifier of t0
        Batch(analyses=[analysis(0, "llm", "t9"), analysis(1, "offline", "t0")],
              classifications=[("t0", "v1", "offline/clf@1", "Formatting Error", False, None)]),
        # q4's new analysis finds no model error: its label is No Model Error, whatever t1 is filed under
        Batch(analyses=[analysis(4, "llm", "t1", "the output matches a reference once normalised")]),
    ]
    for batch in batches:
        with write_session(tmp_db) as con:
            save_batch(con, batch)
            kept = labels(con)
            con.execute("BEGIN")
            refresh_labels(con)
            assert labels(con) == kept
            con.execute("ROLLBACK")
    got = q(tmp_db, "SELECT instance_id, analyst, error_title, category, classifier FROM failure_labels"
                    " ORDER BY instance_id, analyst")
    assert got == [
        ("q0", "llm", "t9", None, None),
        ("q1", "llm", "t1", "Reasoning Error", "other"),
        ("q1", "offline", "t0", "Formatting Error", "offline/clf@1"),
        ("q2", "llm", "t2", None, None),
        ("q3", "llm", "t0", "Factual Error", "llm"),
        ("q4", "llm", "t1", "No Model Error", "other"),
        ("q5", "llm", "t2", None, None),
    ]


def test_a_store_from_before_008_keeps_its_labels(tmp_db):
    """Upgrading a store whose labels were a view (007) fills the table with the same labels."""
    con = store_before(tmp_db, 7)
    con.execute("INSERT INTO analyses (run_id, instance_id, train_trial_index, analyst, prompt_version,"
                " pair_hash, error_title, error_summary, required_criteria, created_at) VALUES"
                " ('r', 'q1', 0, 'offline', 'p', 'h', 'old title', 's', '[]', '2026-01-01'),"
                " ('r', 'q1', 0, 'offline', 'p', 'h', 'new title', 's', '[]', '2026-01-02')")
    con.execute("INSERT INTO classifications (error_title, taxonomy_version, classifier, category,"
                " is_fallback, created_at) VALUES ('new title', 'v1', 'offline/clf', 'Refusal', false, '2026-01-03')")
    before = con.execute("SELECT * FROM failure_labels").fetchall()
    con.close()
    with write_session(tmp_db):
        pass
    assert before == [("r", "q1", 0, "offline", "new title", "s", datetime(2026, 1, 2),
                       "Refusal", "v1", "offline/clf")]
    assert q(tmp_db, "SELECT * EXCLUDE (no_model_error) FROM failure_labels") == before
    assert q(tmp_db, "SELECT table_type FROM information_schema.tables WHERE table_name = 'failure_labels'") == [("BASE TABLE",)]


def test_a_lingering_reader_serves_many_threads_at_once(tmp_db):
    """Streamlit runs each session in its own thread: each query gets its own cursor on the one
    open database, and the answers are each query's own."""
    from concurrent.futures import ThreadPoolExecutor

    from store import release_read_connections

    with write_session(tmp_db) as con:
        # a Faultline table: a store's schema must be Faultline's own (store/trust.py)
        con.execute("INSERT INTO llm_calls (model, purpose, status, latency_ms, created_at) "
                    "SELECT 'm', 'test', 'ok', range, now() FROM range(10000)")

    def query(i: int) -> int:
        with read_connection(tmp_db, linger=5) as con:
            return int(con.execute("SELECT sum(latency_ms) FROM llm_calls WHERE latency_ms % 8 = ?",
                                   [i % 8]).fetchone()[0])

    try:
        with ThreadPoolExecutor(8) as pool:
            got = list(pool.map(query, range(400)))
    finally:
        release_read_connections()
    expected = [sum(n for n in range(10000) if n % 8 == i % 8) for i in range(8)]
    assert got == [expected[i % 8] for i in range(400)]


def test_a_lingering_reader_notices_its_file_replaced(tmp_path):
    """A store rebuilt and renamed into place (as the demo store is) is read afresh, not from the
    file the reader still has open."""
    from store import release_read_connections

    db = tmp_path / "store.duckdb"
    for name, value in ((db, 1), (tmp_path / "next.duckdb", 2)):
        with write_session(name) as con:
            con.execute("INSERT INTO llm_calls (model, purpose, status, latency_ms, created_at) "
                        "VALUES ('marker', 'test', 'ok', ?, now())", [value])
    try:
        with read_connection(db, linger=30) as con:
            assert con.execute("SELECT latency_ms FROM llm_calls").fetchone() == (1,)
        (tmp_path / "next.duckdb").rename(db)
        with read_connection(db, linger=30) as con:
            assert con.execute("SELECT latency_ms FROM llm_calls").fetchone() == (2,)
    finally:
        release_read_connections()
