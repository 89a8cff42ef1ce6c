"""A store file is untrusted input: opening one must not let it read the host.

A DuckDB file carries more than data. Its views, macros, column defaults and generated columns
are SQL that runs whenever Faultline reads the names it expects (`outcomes`, `failures`,
`runs`, even a built-in function such as `lower`, which a macro of the same name shadows). A
store someone publishes, sends or merges could make `outcomes` read `/proc/self/environ` or a
key file of whoever opens it, and show it on a page. So every connection to a store:

- runs with DuckDB's external access off (no file but the store itself and the paths a caller
  names, no network, no extension loaded or installed, no persistent secrets, no Python
  replacement scans), with its configuration locked, so nothing later on it can turn that back
  on (`connect`);
- is checked, before anything reads it, against the schema Faultline's own migrations create:
  every table (columns, types, defaults, constraints), view, macro, sequence, index, type and
  schema of the store must be exactly what the migrations it records produce on an empty
  database here, and a store with anything else is refused, naming each object
  (`check_catalog`, UntrustedStoreError). Nothing from the store's SQL is ever shown: only the
  kind and name of what differs.

The reference is built once per process and per list of applied migrations, from MIGRATIONS on
an in-memory database, so it follows the code (a new migration needs nothing here). Each state
of a store file (device, inode, size, times) is checked once per process (`file_state`).
"""

from __future__ import annotations

import os
import re
import threading
from typing import Iterable

import duckdb

from .errors import StoreError

# Set as the database is opened: a store whose catalog names an extension's type must not make
# DuckDB download or load that extension while reading it. The rest is set right after (`connect`),
# since DuckDB shares one database per file within a process and refuses a second connection
# with another opening configuration: tests and tools that read a store alongside the app pass
# this same config (duckdb.connect(path, config=OPEN_CONFIG)).
OPEN_CONFIG = {
    "autoload_known_extensions": False,
    "autoinstall_known_extensions": False,
}
SCHEMA_MIGRATIONS_DDL = (
    "CREATE TABLE schema_migrations ("
    " id INTEGER PRIMARY KEY, name VARCHAR NOT NULL, applied_at TIMESTAMP NOT NULL)"
)


class UntrustedStoreError(StoreError):
    """A store whose schema objects are not the ones Faultline's migrations create."""


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _list(items: Iterable[str]) -> str:
    return "[" + ", ".join(_literal(i) for i in items) + "]"


def connect(path: str, read_only: bool, settings: dict[str, object] | None = None,
            allowed_paths: Iterable[str] = (), allowed_directories: Iterable[str] = ()) -> duckdb.DuckDBPyConnection:
    """A connection to the store at `path` that can reach nothing outside it.

    `settings` are applied before the configuration is locked (memory_limit, ...);
    `allowed_paths` (files, e.g. stores to ATTACH, with their .wal) and `allowed_directories`
    (e.g. an ingest's own staging folder) are the only other files it may read. DuckDB takes the
    allow-lists only while external access is still on, so they are set first, then external
    access is turned off and the configuration locked, before any query touches the store."""
    con = duckdb.connect(path, read_only=read_only, config=OPEN_CONFIG)
    try:
        if con.execute("SELECT current_setting('lock_configuration')").fetchone()[0]:
            # DuckDB hands a process one database per file: another connection here set it up
            _check_shared(con, settings, allowed_paths, allowed_directories)
            return con
        con.execute("SET enable_progress_bar = false")  # DuckDB draws one on stdout; CLI output is ours
        con.execute("SET allow_persistent_secrets = false")
        con.execute("SET allow_community_extensions = false")
        con.execute("SET python_enable_replacements = false")
        for name, value in (settings or {}).items():
            con.execute(f"SET {name} = {_literal(str(value))}")
        paths, folders = list(allowed_paths), list(allowed_directories)
        if paths:
            con.execute(f"SET allowed_paths = {_list(paths)}")
        if folders:
            con.execute(f"SET allowed_directories = {_list(folders)}")
        con.execute("SET enable_external_access = false")
        con.execute("SET lock_configuration = true")
    except BaseException:
        con.close()
        raise
    return con


def _check_shared(con: duckdb.DuckDBPyConnection, settings: dict | None, allowed_paths: Iterable[str],
                  allowed_directories: Iterable[str]) -> None:
    """A connection to a database another connection of this process configured: it must be
    locked with external access off, and allow what this caller needs; else it is refused as a
    configuration conflict (store/db.py waits for the other connection to close)."""
    def setting(name: str):
        return con.execute(f"SELECT current_setting('{name}')").fetchone()[0]

    wanted = (all(p in (setting("allowed_paths") or []) for p in allowed_paths)
              and all(d in (setting("allowed_directories") or []) for d in allowed_directories)
              and all(str(setting(k)).lower() == str(v).lower() for k, v in (settings or {}).items()
                      if k not in ("memory_limit", "threads")))  # how fast, not what it may reach
    if setting("enable_external_access") or not wanted:
        con.close()
        raise duckdb.ConnectionException(
            "the store is open in this process with a different configuration (another connection holds it)")


# ------------------------------------------------------------------ the catalog check

_KIND_QUERIES = (
    # (kind, query returning (schema, name, definition) for one database)
    ("schema", "SELECT schema_name, schema_name, '' FROM duckdb_schemas() "
               "WHERE database_name = ? AND NOT internal"),
    ("table", "SELECT schema_name, table_name, sql FROM duckdb_tables() WHERE database_name = ?"),
    ("view", "SELECT schema_name, view_name, sql FROM duckdb_views() WHERE database_name = ? AND NOT internal"),
    ("macro", "SELECT schema_name, function_name, function_type || ':' || coalesce(macro_definition, '') "
              "|| ':' || coalesce(array_to_string(parameters, ','), '') FROM duckdb_functions() "
              "WHERE database_name = ?"),
    # not its start value: a store writes the next value there as it draws from the sequence
    ("sequence", "SELECT schema_name, sequence_name, concat_ws(':', min_value, max_value, increment_by, cycle) "
                 "FROM duckdb_sequences() WHERE database_name = ?"),
    ("index", "SELECT schema_name, index_name, coalesce(sql, expressions) FROM duckdb_indexes() "
              "WHERE database_name = ?"),
    ("type", "SELECT schema_name, type_name, logical_type FROM duckdb_types() "
             "WHERE database_name = ? AND NOT internal"),
)


def catalog(con: duckdb.DuckDBPyConnection, database: str) -> dict[tuple[str, str, str], str]:
    """Every schema object of `database` on `con`: (kind, schema, name) → its definition."""
    out: dict[tuple[str, str, str], str] = {}
    for kind, sql in _KIND_QUERIES:
        for schema, name, definition in con.execute(sql, [database]).fetchall():
            out[kind, schema, name] = definition or ""
    return out


_references: dict[tuple[str, ...], dict[tuple[str, str, str], str]] = {}
_reference_lock = threading.Lock()


def reference(applied: Iterable[str]) -> dict[tuple[str, str, str], str]:
    """The catalog Faultline's migrations `applied` (names, in MIGRATIONS order) create."""
    from .migrations import MIGRATIONS

    done = set(applied)
    names = tuple(name for name, _ in MIGRATIONS if name in done)
    if not names:
        # a store no migration has touched (one this command is creating) must hold nothing:
        # an empty database's catalog is empty (tests/test_untrusted_store.py builds it to check),
        # so no in-memory database is opened to say so
        return {}
    with _reference_lock:
        found = _references.get(names)
        if found is not None:
            return found
        con = duckdb.connect(":memory:", config=OPEN_CONFIG)
        try:
            if names:
                con.execute(SCHEMA_MIGRATIONS_DDL)
            for name, step in MIGRATIONS:
                if name not in done:
                    continue
                if isinstance(step, str):
                    con.execute(step)
                else:  # a Python step: its schema changes count; what it would finish only moves rows
                    step(con)
            found = catalog(con, con.execute("SELECT current_database()").fetchone()[0])
        finally:
            con.close()
        _references[names] = found
        return found


_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")


def _shown(name: str) -> str:
    """An object's name as a message may carry it: the store chose it, and a message is shown on
    pages (Markdown) and terminals, so only a plain identifier is repeated."""
    return name if _PLAIN_NAME.fullmatch(name) else f"<a name of {len(name)} characters, not a plain identifier>"


def differences(found: dict[tuple[str, str, str], str], expected: dict[tuple[str, str, str], str]) -> list[str]:
    """What differs, as `kind name (how)` phrases, in a stable order."""
    out = []
    for key in sorted(set(found) | set(expected)):
        kind, schema, name = key
        label = f"{kind} {_shown(name)}" if schema == "main" else f"{kind} {_shown(schema)}.{_shown(name)}"
        if key not in expected:
            out.append(f"{label} (not Faultline's)")
        elif key not in found:
            out.append(f"{label} (missing)")
        elif found[key] != expected[key]:
            out.append(f"{label} (changed)")
    return out


# The file states (device, inode, size, times of the store and its WAL) this process has checked,
# or left by its own writes, with the migrations they record: a command that opens one store many
# times (an analysis commits as answers arrive) checks it once, while any change to the file by
# anyone else changes its state and is checked again.
_checked: dict[tuple, tuple[str, ...]] = {}
_checked_lock = threading.Lock()


def file_state(path) -> tuple | None:
    parts = []
    for p in (str(path), f"{path}.wal"):
        try:
            st = os.stat(p)
        except FileNotFoundError:
            parts.append(None)
            continue
        except OSError:
            return None
        parts.append((st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
    return tuple(parts)


def checked(state: tuple | None) -> tuple[str, ...] | None:
    """The migrations of a file state this process checked (None: not checked)."""
    if state is None:
        return None
    with _checked_lock:
        return _checked.get(state)


def remember(state: tuple | None, applied) -> None:
    if state is None:
        return
    with _checked_lock:
        if len(_checked) > 256:
            _checked.clear()
        _checked[state] = tuple(applied)


def check_catalog(con: duckdb.DuckDBPyConnection, where: str, applied: Iterable[str],
                  database: str | None = None) -> None:
    """Refuse a store whose schema objects are not what its `applied` migrations create.

    `where` names the store in the message; `database` is its name on `con` (default: the
    connection's own database). Only names are reported: a refused store's SQL is never shown."""
    if database is None:
        database = con.execute("SELECT current_database()").fetchone()[0]
    wrong = differences(catalog(con, database), reference(applied))
    if wrong:
        shown = "; ".join(wrong[:12]) + (f"; and {len(wrong) - 12} more" if len(wrong) > 12 else "")
        raise UntrustedStoreError(
            f"{where}: refused: this store's schema is not the one Faultline creates ({shown}). "
            "A store is read as untrusted input: its views, macros and column definitions run as SQL "
            "when it is read, so only Faultline's own are accepted (docs/reliability.md#a-store-is-untrusted-input). "
            "Rebuild it with `python -m ingest`, or export the runs you need and ingest them.")
