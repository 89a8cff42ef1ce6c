"""A Faultline store turned against whoever opens it: its views, a macro shadowing a built-in,
a table replaced by a view and a column default read a canary file and a canary environment
variable of the machine that reads the store. Used by tests/store/test_untrusted_store.py.

The canary values are not in the store: only the *path* of the canary file and the *name* of
the variable are, so any occurrence of a value in a page, a command's output, a report or a
merged store means the store read the host."""

from __future__ import annotations

from pathlib import Path

import duckdb

from tests.seed_store import seed

CANARY_TEXT = "CANARY-FILE-c0ffee91d"
CANARY_ENV = "FAULTLINE_TEST_CANARY"
CANARY_VALUE = "CANARY-ENV-deadbeef17"
A, B = "model-a", "model-b"


def canary_file(folder: Path) -> Path:
    path = folder / "host-secret.txt"
    path.write_text(CANARY_TEXT + "\n", encoding="utf-8")
    return path


def rows() -> list[dict]:
    out = []
    for i in range(12):
        for model, fails in ((A, i % 2 == 0), (B, i % 3 == 0)):
            out.append({"model": model, "dataset": "ds", "domain": "dom", "instance_id": f"q{i}",
                        "is_correct": not fails, "output": f"answer {i}",
                        **({"title": f"wrong step {i % 3}", "category": "Reasoning Error"} if fails else {})})
    return out


def _leak(secret: Path) -> str:
    """SQL text that reads the canary file and the process environment (where the canary
    variable is) when it runs: what a published store can hide in its views."""
    return (f"((SELECT content FROM read_text('{secret}')) || "
            "(SELECT replace(content, chr(0), ' ') FROM read_text('/proc/self/environ')))")


def make_hostile(db: Path, secret: Path) -> Path:
    """A real store (runs, failures, labels), then rewritten with a plain DuckDB connection, as
    anyone can do to a file they publish."""
    seed(db, rows())
    leak = _leak(secret)
    con = duckdb.connect(str(db))
    try:
        # outcomes: every output is the host's secrets
        con.execute(f"""
            CREATE OR REPLACE VIEW outcomes AS
            SELECT p.run_id, r.source_format, r.model, r.dataset, r.domain, i.split, p.instance_id,
                   p.score, p.is_correct, {leak} AS output_text,
                   i.raw_instance_id, i.perturbation, p.train_trial_index, p.infra_error, r.ingested_at,
                   r.variant, true AS is_main_split
            FROM predictions p JOIN runs r USING (run_id)
            JOIN instances i ON i.run_id = p.run_id AND i.instance_id = p.instance_id""")
        # failures: every error title is the host's secrets
        con.execute(f"""
            CREATE OR REPLACE VIEW failures AS
            SELECT r.model, r.dataset, r.domain, p.instance_id, l.analyst, {leak} AS error_title,
                   l.error_summary, l.category, l.taxonomy_version,
                   p.run_id, p.train_trial_index, l.classifier, l.analysed_at
            FROM predictions p JOIN runs r USING (run_id)
            JOIN failure_labels l ON l.run_id = p.run_id AND l.instance_id = p.instance_id
             AND l.train_trial_index = p.train_trial_index
            WHERE p.is_correct = false""")
        # a table the pages count from, replaced by a view of the same shape
        con.execute("CREATE TABLE latest_labels_real AS SELECT * FROM latest_labels")
        con.execute("DROP TABLE latest_labels")
        con.execute(f"CREATE VIEW latest_labels AS SELECT * REPLACE ({leak} AS error_title) FROM latest_labels_real")
        # a table a merge copies, replaced by a view: every merged analysis would carry the host's secrets
        con.execute("CREATE TABLE analyses_real AS SELECT * FROM analyses")
        con.execute("DROP TABLE analyses")
        con.execute(f"CREATE VIEW analyses AS SELECT * REPLACE ({leak} AS error_summary) FROM analyses_real")
        # getenv() is the DuckDB shell's; a view naming it can be written through a stand-in macro
        con.execute("CREATE MACRO getenv(x) AS 'stand-in'")
        con.execute(f"CREATE VIEW host_env AS SELECT getenv('{CANARY_ENV}') AS value")
        con.execute("DROP MACRO getenv")
        # a column default that reads a setting of the host (where DuckDB keeps its secrets)
        con.execute("ALTER TABLE reviews ALTER COLUMN note SET DEFAULT current_setting('secret_directory')")
        # a macro shadowing a built-in function every query may call
        con.execute(f"CREATE MACRO lower(x) AS {leak}")
        con.execute(f"CREATE MACRO coalesce_title(x) AS {leak}")
    finally:
        con.close()
    return db


def make_unlocking(db: Path, secret: Path) -> Path:
    """The store of issue 38: each defence defeated on its own, all at once.

    - `current_setting` answers true for `lock_configuration` (and NULL otherwise), so a check
      asking whether its connection is already locked believes it is;
    - `duckdb_tables()`, `duckdb_views()` and `duckdb_functions()` are table macros that answer
      what the store held before it was rewritten, so a catalog check through them sees
      Faultline's schema;
    - its tables are renamed and replaced by views that append the canary file and the process
      environment to every text a page, a command or MCP shows.
    """
    seed(db, rows())
    leak = _leak(secret)
    con = duckdb.connect(str(db))
    try:
        # what the catalog looked like before: the hiding macros answer with it
        con.execute("CREATE TABLE zz_tables AS SELECT * FROM duckdb_tables()")
        con.execute("CREATE TABLE zz_views AS SELECT * FROM duckdb_views() WHERE NOT internal")
        for table, column in (("runs", "model"), ("predictions", "output_text"), ("latest_labels", "error_title"),
                              ("analyses", "error_summary")):
            names = [r[0] for r in con.execute(
                "SELECT column_name FROM duckdb_columns() WHERE table_name = ? ORDER BY column_index", [table]).fetchall()]
            if column not in names:
                continue
            con.execute(f"ALTER TABLE {table} RENAME TO zz_{table}")
            con.execute(f"CREATE VIEW {table} AS SELECT * REPLACE ({column} || {leak} AS {column}) FROM zz_{table}")
        con.execute("CREATE MACRO current_setting(x) AS CASE WHEN x = 'lock_configuration' THEN true ELSE NULL END")
        con.execute("CREATE MACRO duckdb_tables() AS TABLE SELECT * FROM zz_tables")
        con.execute("CREATE MACRO duckdb_views() AS TABLE SELECT * FROM zz_views "
                    "UNION ALL SELECT * FROM system.main.duckdb_views() WHERE internal")
        con.execute("CREATE MACRO duckdb_functions() AS TABLE SELECT * FROM system.main.duckdb_functions() "
                    "WHERE internal")
    finally:
        con.close()
    return db


def make_generated_migrations(db: Path) -> Path:
    """A store whose `schema_migrations.name` is a generated column reading a host setting (its
    temp folder's path): a check that reads the table before the catalog runs it, and a
    refusal that repeats the names would show the path."""
    seed(db, rows())
    con = duckdb.connect(str(db))
    try:
        con.execute("ALTER TABLE schema_migrations RENAME TO zz_migrations")
        con.execute("CREATE TABLE schema_migrations (id INTEGER PRIMARY KEY, stem VARCHAR, "
                    "name VARCHAR AS (stem || current_setting('temp_directory')), applied_at TIMESTAMP NOT NULL)")
        con.execute("INSERT INTO schema_migrations (id, stem, applied_at) SELECT id, name, applied_at FROM zz_migrations")
        con.execute("DROP TABLE zz_migrations")
    finally:
        con.close()
    return db
