"""Stores an older Faultline wrote: only the first migrations applied, each table holding the
columns it had then; empty, or holding a current store's rows."""

from __future__ import annotations

from pathlib import Path

import duckdb

from store import MIGRATIONS

BEFORE = 6  # a store from before 007: no latest_outcomes, no failure_labels, no evidence columns


def store_before(db, applied: int) -> duckdb.DuckDBPyConnection:
    """A connection on a store made by an older Faultline: only the first `applied` migrations."""
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE schema_migrations (id INTEGER PRIMARY KEY, name VARCHAR NOT NULL, applied_at TIMESTAMP NOT NULL)")
    for i, (name, sql) in enumerate(MIGRATIONS[:applied], start=1):
        con.execute(sql)
        con.execute("INSERT INTO schema_migrations VALUES (?, ?, now())", [i, name])
    return con


def older_copy(current: Path, old: Path, applied: int = BEFORE) -> Path:
    """`current`'s rows in a store an older Faultline wrote: the first `applied` migrations only,
    each of their tables holding the columns it had then."""
    con = store_before(old, applied)
    try:
        con.execute("ATTACH ? AS newer (READ_ONLY)", [str(current)])
        tables = [t for (t,) in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() "
            "AND table_name <> 'schema_migrations'").fetchall()]
        for table in tables:
            cols = ", ".join(c for (c,) in con.execute(
                "SELECT column_name FROM duckdb_columns() WHERE database_name = current_database() "
                "AND table_name = ? ORDER BY column_index", [table]).fetchall())
            con.execute(f"INSERT INTO {table} ({cols}) SELECT {cols} FROM newer.{table}")
        con.execute("DETACH newer")
    finally:
        con.close()
    return old
