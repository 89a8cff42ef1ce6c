"""latest_outcomes: decided when runs are written, equal to the old read-time window, and filled
for stores written before it existed."""

from __future__ import annotations

import duckdb

from conftest import q
from store import MIGRATIONS, write_session
from store.runs import refresh_groups
from tests.seed_store import seed

# what every query computed at read time before the table existed, with the model key and the
# rerun that counts first (runs.superseded_by)
WINDOW = """
    SELECT CASE WHEN o.variant IS NULL THEN o.model ELSE o.model || ' · ' || o.variant END AS key,
           o.dataset, o.instance_id, o.run_id, o.train_trial_index, o.split, o.is_main_split, o.is_correct
    FROM outcomes o JOIN runs r USING (run_id) WHERE o.is_correct IS NOT NULL
    QUALIFY row_number() OVER (
        PARTITION BY key, o.dataset, o.instance_id
        ORDER BY r.superseded_by IS NOT NULL, o.ingested_at DESC, o.run_id DESC, o.perturbation NULLS FIRST,
                 o.train_trial_index) = 1
    ORDER BY ALL
"""
TABLE = """
    SELECT model, dataset, instance_id, run_id, train_trial_index, split, is_main_split, is_correct
    FROM latest_outcomes ORDER BY ALL
"""


def test_the_table_equals_the_read_time_window_after_every_write(tmp_db):
    seed(tmp_db, [dict(model="A", dataset="ds", domain=d, instance_id=f"{d}/q{i}", is_correct=i % 3 > 0,
                       split="test" if i < 8 else "valid", main_split="test")
                  for d in ("d1", "d2") for i in range(10)])
    seed(tmp_db, [dict(model="B", dataset="ds", domain="d1", instance_id=f"d1/q{i}", is_correct=i < 5)
                  for i in range(10)] + [dict(model="B", dataset="ds", domain="d1", instance_id="d1/q10",
                                              is_correct=None)])
    assert len(q(tmp_db, TABLE)) == 30 and q(tmp_db, TABLE) == q(tmp_db, WINDOW)
    # another log of A (other folder, same settings) is a rerun: still one model A, whose later
    # log counts on d1 (10 questions), the earlier one still on d2
    seed(tmp_db, [dict(model="A", dataset="ds", domain="d1", instance_id=f"d1/q{i}", is_correct=True)
                  for i in range(10)], run_tag="r2")
    assert q(tmp_db, "SELECT DISTINCT model FROM latest_outcomes ORDER BY 1") == [("A",), ("B",)]
    assert q(tmp_db, "SELECT run_id, superseded_by FROM runs WHERE model = 'A' ORDER BY 1") == [
        ("r1:A:ds:d1", "r2:A:ds:d1"), ("r1:A:ds:d2", None), ("r2:A:ds:d1", None)]
    assert q(tmp_db, "SELECT run_id, count(*) FROM latest_outcomes WHERE model = 'A' GROUP BY 1 ORDER BY 1") == [
        ("r1:A:ds:d2", 10), ("r2:A:ds:d1", 10)]
    assert len(q(tmp_db, TABLE)) == 30 and q(tmp_db, TABLE) == q(tmp_db, WINDOW)
    # re-writing B's log replaces its rows only
    seed(tmp_db, [dict(model="B", dataset="ds", domain="d1", instance_id=f"d1/q{i}", is_correct=False)
                  for i in range(4)])
    assert q(tmp_db, "SELECT count(*), count(*) FILTER (WHERE is_correct) FROM latest_outcomes"
                     " WHERE model = 'B'") == [(4, 0)]
    assert q(tmp_db, TABLE) == q(tmp_db, WINDOW)


def test_refresh_of_one_group_leaves_the_others(tmp_db):
    seed(tmp_db, [dict(model=m, dataset=d, instance_id="q", is_correct=True)
                  for m in ("A", "B") for d in ("x", "y")])
    with write_session(tmp_db) as con:
        con.execute("UPDATE predictions SET is_correct = false")
        con.execute("BEGIN")
        refresh_groups(con, {("A", "x")})
        con.execute("COMMIT")
    assert q(tmp_db, "SELECT model, dataset, is_correct FROM latest_outcomes ORDER BY ALL") == [
        ("A", "x", False), ("A", "y", True), ("B", "x", True), ("B", "y", True)]


def test_an_older_store_gets_its_latest_outcomes_from_the_migration(tmp_db):
    con = duckdb.connect(str(tmp_db))
    con.execute("CREATE TABLE schema_migrations (id INTEGER PRIMARY KEY, name VARCHAR NOT NULL, applied_at TIMESTAMP NOT NULL)")
    names = [n for n, _ in MIGRATIONS]
    for i, (name, sql) in enumerate(MIGRATIONS[:names.index("007_latest_outcomes")], start=1):
        con.execute(sql)
        con.execute("INSERT INTO schema_migrations VALUES (?, ?, now())", [i, name])
    for run_id, at in (("old", "2026-01-01"), ("new", "2026-02-01")):
        con.execute(
            "INSERT INTO runs (run_id, source_format, source_path, content_hash, run_name, model, dataset,"
            " main_split, n_predictions, n_failures, n_infra_errors, record_schema_version, ingested_at)"
            " VALUES (?, 'jsonl', '/x', 'h', 'x', 'm', 'd', 'test', 2, 0, 0, 1, ?)", [run_id, at])
        for iid, split in (("q1", "test"), ("q2", "valid")):
            con.execute("INSERT INTO instances (run_id, instance_id, raw_instance_id, split)"
                        " VALUES (?, ?, ?, ?)", [run_id, iid, iid, split])
            con.execute("INSERT INTO predictions (run_id, instance_id, train_trial_index, is_correct,"
                        " infra_error) VALUES (?, ?, 0, ?, false)", [run_id, iid, run_id == "new"])
    con.close()
    with write_session(tmp_db):
        pass
    # before variants existed the latest-ingested run won, as the read-time window decided
    assert q(tmp_db, "SELECT model, instance_id, run_id, is_main_split, is_correct FROM latest_outcomes"
                     " ORDER BY ALL") == [("m", "q1", "new", True, True), ("m", "q2", "new", False, True)]
