"""docs/store.md documents every table and view of the store, column for column."""

from __future__ import annotations

import re

import duckdb

from conftest import ROOT
from store import write_session

HEADING = re.compile(r"^## `(\w+)` \((table|view)\)\s*$")
ROW = re.compile(r"^\| `(\w+)` \| (\w+) \|")


def documented() -> dict[str, dict[str, str]]:
    tables: dict[str, dict[str, str]] = {}
    current = None
    for line in (ROOT / "docs" / "store.md").read_text().splitlines():
        if m := HEADING.match(line):
            current = tables.setdefault(m.group(1), {})
        elif current is not None and (m := ROW.match(line)):
            current[m.group(1)] = m.group(2)
        elif line.startswith("# "):
            current = None
    return tables


def test_store_docs_match_schema(tmp_db):
    with write_session(tmp_db):
        pass
    con = duckdb.connect(str(tmp_db), read_only=True)
    actual: dict[str, dict[str, str]] = {}
    for table, column, dtype in con.execute(
        "SELECT table_name, column_name, data_type FROM information_schema.columns "
        "WHERE table_schema = 'main' ORDER BY table_name, ordinal_position"
    ).fetchall():
        actual.setdefault(table, {})[column] = dtype
    con.close()
    docs = documented()
    assert set(docs) == set(actual), "tables documented vs in the database"
    for table, columns in actual.items():
        assert docs[table] == columns, table


def test_core_schema_declares_the_migrated_tables_columns(tmp_db):
    """core/schema.py is the one declaration of the loaded tables' columns: the migrations create
    exactly these columns (in this order where the
    order is used), with the Arrow types' DuckDB equivalents."""
    from core import schema

    with write_session(tmp_db):
        pass
    con = duckdb.connect(str(tmp_db), read_only=True)
    try:
        def columns(table: str) -> list[tuple[str, str]]:
            return con.execute("SELECT column_name, data_type FROM information_schema.columns "
                               "WHERE table_schema = 'main' AND table_name = ? ORDER BY ordinal_position",
                               [table]).fetchall()

        # runs gained columns after ingested_at (inserts name their columns, so only the set
        # counts), and superseded_by, which a later load sets, is no column a load writes
        assert sorted(c for c, _ in columns("runs")) == sorted((*schema.RUN_COLUMNS, "superseded_by"))
        assert tuple(c for c, _ in columns("instances")) == schema.INSTANCE_COLUMNS
        assert tuple(c for c, _ in columns("predictions")) == schema.PREDICTION_COLUMNS
        duck = {"string": "VARCHAR", "int32": "INTEGER", "int64": "BIGINT", "double": "DOUBLE",
                "bool": "BOOLEAN", "timestamp[us]": "TIMESTAMP"}
        assert columns("transcript_steps") == [(f.name, duck[str(f.type)]) for f in schema.TRANSCRIPT_STEPS_SCHEMA]
        # the runs counts are staged as int64 and stored as INTEGER (DuckDB says so of a count
        # past 2^31 on insert, as it would of any other value a column cannot hold)
        run_types = {c: t.replace("INTEGER", "BIGINT") for c, t in columns("runs")}
        assert {c: run_types[c] for c in schema.RUN_TYPES} == {c: duck[str(t)] for c, t in schema.RUN_TYPES.items()}
    finally:
        con.close()


# Each table the analysis, reviews and calibration write: the columns core/schema.py declares its
# inserts name, and those the table fills itself or that are set apart from the declared row.
WRITTEN = {
    "taxonomies": ("TAXONOMY_COLUMNS", ()),
    "llm_cache": ("LLM_CACHE_COLUMNS", ("created_at",)),
    "llm_calls": ("LLM_CALL_COLUMNS", ("call_id", "batch_id")),
    "llm_batches": ("LLM_BATCH_COLUMNS", ("batch_id", "provider_status", "collected_at", "cost_usd")),
    "analyses": (("ANALYSIS_COLUMNS", "ANALYSIS_STEP_COLUMNS"), ("created_at",)),
    "classifications": ("CLASSIFICATION_COLUMNS", ("created_at",)),
    "verifications": ("VERIFICATION_COLUMNS", ("created_at",)),
    "failure_labels": ("FAILURE_LABEL_COLUMNS", ()),
    "latest_outcomes": ("LATEST_OUTCOME_COLUMNS", ()),
    "latest_labels": ("LATEST_LABEL_COLUMNS", ()),
    "reviews": ("REVIEW_COLUMNS", ("review_id",)),
    "review_samples": ("REVIEW_SAMPLE_COLUMNS", ()),
    "calibrations": ("CALIBRATION_COLUMNS", ()),
}


def test_core_schema_declares_the_columns_every_write_names(tmp_db):
    """Every column tuple core/schema.py declares for a written table names columns the migrated
    table has, each once, and with the columns the table fills itself, all of them."""
    from core import schema

    with write_session(tmp_db):
        pass
    con = duckdb.connect(str(tmp_db), read_only=True)
    try:
        for table, (names, rest) in WRITTEN.items():
            declared = [c for name in ((names,) if isinstance(names, str) else names) for c in getattr(schema, name)]
            actual = [r[0] for r in con.execute("SELECT column_name FROM information_schema.columns "
                                                "WHERE table_schema = 'main' AND table_name = ?", [table]).fetchall()]
            assert len(declared) == len(set(declared)), table
            assert sorted(actual) == sorted([*declared, *rest]), table
    finally:
        con.close()
    # every declared tuple of a written table is held to its table here
    tuples = {n for n in vars(schema) if n.endswith("_COLUMNS")} - {"INSTANCE_COLUMNS", "PREDICTION_COLUMNS", "RUN_COLUMNS",
                                                                     "STEP_COLUMNS"}
    assert tuples == {n for names, _ in WRITTEN.values() for n in ((names,) if isinstance(names, str) else names)}
