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
