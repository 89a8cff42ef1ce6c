"""`latest_labels` (migration 014): the labels of the failed latest outcomes, kept by every writer
that changes labels or latest outcomes, always equal to the join recomputed from scratch."""

from __future__ import annotations

from datetime import datetime, timedelta

import duckdb

from conftest import q
from seed_store import seed
from store import MIGRATIONS, write_session
from store.analysis import Batch, refresh_latest_labels, save_batch


def _kept_equals_recomputed(db) -> list[tuple]:
    with write_session(db) as con:
        kept = con.execute("SELECT * FROM latest_labels ORDER BY ALL").fetchall()
        con.execute("BEGIN")
        refresh_latest_labels(con)
        assert con.execute("SELECT * FROM latest_labels ORDER BY ALL").fetchall() == kept
        con.execute("ROLLBACK")
    return kept


def _analysis(run, i, analyst, title):
    return (run, f"q{i}", 0, analyst, "p1", "h", title, f"why {title}", "[]", None, None, None)


def test_latest_labels_follow_every_write_of_labels_and_outcomes(tmp_db):
    rows = [dict(model=m, dataset="d", instance_id=f"q{i}", is_correct=i % 2 == 0) for m in ("a", "b") for i in range(6)]
    seed(tmp_db, rows)
    run_a, run_b = "r1:a:d:None", "r1:b:d:None"
    steps = [
        Batch(analyses=[_analysis(run, i, "llm", f"t{i % 3}") for run in (run_a, run_b) for i in (1, 3, 5)],
              classifications=[("t1", "v1", "llm", "Factual Error", False, None)]),
        Batch(classifications=[("t0", "v1", "llm", "Refusal", False, None)]),
        Batch(analyses=[_analysis(run_a, 1, "llm", "t2"), _analysis(run_a, 3, "offline", "t0")]),
    ]
    for batch in steps:
        with write_session(tmp_db) as con:
            save_batch(con, batch)
        _kept_equals_recomputed(tmp_db)
    assert q(tmp_db, "SELECT model, instance_id, analyst, error_title, category FROM latest_labels ORDER BY ALL") == [
        ("a", "q1", "llm", "t2", None),
        ("a", "q3", "llm", "t0", "Refusal"),
        ("a", "q3", "offline", "t0", "Refusal"),
        ("a", "q5", "llm", "t2", None),
        ("b", "q1", "llm", "t1", "Factual Error"),
        ("b", "q3", "llm", "t0", "Refusal"),
        ("b", "q5", "llm", "t2", None),
    ]
    # model a's log re-ingested, now answering everything correctly: its labels are no longer of a
    # latest failure, while b's stay
    seed(tmp_db, [dict(model="a", dataset="d", instance_id=f"q{i}", is_correct=True) for i in range(6)],
         ingested_at=datetime(2026, 1, 1) + timedelta(days=1))
    kept = _kept_equals_recomputed(tmp_db)
    assert {row[0] for row in kept} == {"b"}
    assert len(kept) == 3


def test_a_store_from_before_014_gets_its_latest_labels(tmp_db):
    seed(tmp_db, [dict(model="a", dataset="d", instance_id=f"q{i}", is_correct=False, title=f"t{i}",
                       category="Refusal") for i in range(3)])
    expected = q(tmp_db, "SELECT * FROM latest_labels ORDER BY ALL")
    assert len(expected) == 3
    con = duckdb.connect(str(tmp_db))
    con.execute("DROP TABLE latest_labels")
    # a store from before 014 lacks every later migration too (018 adds latest_labels.score)
    con.execute("ALTER TABLE latest_outcomes DROP COLUMN score")
    con.execute("DELETE FROM schema_migrations WHERE name IN ('014_latest_labels', '018_scores_in_latest')")
    con.close()
    with write_session(tmp_db):
        pass  # the upgrade
    assert q(tmp_db, "SELECT * FROM latest_labels ORDER BY ALL") == expected
    assert q(tmp_db, "SELECT name FROM schema_migrations ORDER BY id")[-1] == (MIGRATIONS[-1][0],)
