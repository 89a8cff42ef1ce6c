"""Reading whole stores back for comparison: every table's rows, in a canonical order."""

from __future__ import annotations

from pathlib import Path

import duckdb


def table_names(db: Path) -> list[str]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return [r[0] for r in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() ORDER BY 1").fetchall()]
    finally:
        con.close()


def table_rows(db: Path, table: str, drop: tuple[str, ...] = ()) -> tuple[list[str], list[tuple]]:
    """(columns, rows) of one table without the `drop` columns, rows sorted (NULLs first)."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        columns = [r[0] for r in con.execute(
            "SELECT column_name FROM duckdb_columns() WHERE table_name = ? AND database_name = current_database() "
            "ORDER BY column_index", [table]).fetchall() if r[0] not in drop]
        rows = con.execute(f"SELECT {', '.join(columns)} FROM {table}").fetchall()
    finally:
        con.close()
    return columns, sorted(rows, key=lambda row: tuple((v is not None, repr(v)) for v in row))


def differing_tables(a: Path, b: Path, drop: dict[str, tuple[str, ...]]) -> dict[str, str]:
    """Tables whose rows differ between two stores (`drop`: columns left out, per table), with a
    short description of the first difference; every table of either store is compared."""
    out = {}
    for table in sorted(set(table_names(a)) | set(table_names(b))):
        cols_a, rows_a = table_rows(a, table, drop.get(table, ()))
        cols_b, rows_b = table_rows(b, table, drop.get(table, ()))
        if cols_a != cols_b:
            out[table] = f"columns {cols_a} != {cols_b}"
        elif rows_a != rows_b:
            only_a = [r for r in rows_a if r not in rows_b][:1]
            only_b = [r for r in rows_b if r not in rows_a][:1]
            out[table] = f"{len(rows_a)} vs {len(rows_b)} rows; e.g. {only_a} vs {only_b}"
    return out
