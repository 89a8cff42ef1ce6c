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
from .migrations import MIGRATIONS, SCHEMA_MIGRATIONS_DDL, refuse_newer

# The restrictions every store is opened with, in DuckDB's configuration at connect time: no
# query runs before them, so nothing the store defines (a macro named `current_setting`, say) can
# make Faultline skip one. External access off means no file but the store (and its own temp
# folder), no network, no extension loaded or installed, no persistent secret. Tests and tools
# that read a store alongside the app in one process pass this same config (DuckDB shares one
# database per file within a process and refuses a second connection with another one).
OPEN_CONFIG = {
    "enable_external_access": False,
    "autoload_known_extensions": False,
    "autoinstall_known_extensions": False,
    "allow_persistent_secrets": False,
    "allow_community_extensions": False,
    "python_enable_replacements": False,
}
# A connection that must read named files besides the store (stores to ATTACH in a merge or a
# download's verification) starts with external access on, because DuckDB takes allow-lists only
# then; they are set by parameter (a list literal would call `list_value`, which the store's
# macro could shadow), then access is turned off, and the result is read back by DuckDB's own
# system-qualified functions before the store is used.
_ALLOW_LIST_CONFIG = {k: v for k, v in OPEN_CONFIG.items() if k != "enable_external_access"}
# what a connection must read back once configured, by system-qualified names (store macros
# cannot shadow them)
_LOCKED = {"enable_external_access": False, "lock_configuration": True, "autoload_known_extensions": False,
           "autoinstall_known_extensions": False, "allow_persistent_secrets": False,
           "allow_community_extensions": False}
# Connections of one process to one file share a database: configuring it (its first SETs, then
# the lock) must not interleave with another thread's look at it
_connect_lock = threading.Lock()


class UntrustedStoreError(StoreError):
    """A store whose schema objects are not the ones Faultline's migrations create."""


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def setting(con: duckdb.DuckDBPyConnection, name: str):
    """A DuckDB setting read by DuckDB's own function (system-qualified: a store's macro named
    `current_setting` cannot answer instead)."""
    return con.execute("SELECT system.main.current_setting(?)", [name]).fetchall()[0][0]


def connect(path: str, read_only: bool, settings: dict[str, object] | None = None,
            allowed_paths: Iterable[str] = ()) -> duckdb.DuckDBPyConnection:
    """A connection to the store at `path` that can reach nothing outside it.

    The restrictions are in the configuration DuckDB opens the file with (OPEN_CONFIG);
    `settings` (memory_limit, threads: how fast, not what it may reach) are set before the
    configuration is locked. `allowed_paths` (stores to ATTACH, with their .wal) are the only
    other files it may read. Every restriction is read back before the connection is returned."""
    paths = [str(p) for p in allowed_paths]
    with _connect_lock:
        con = duckdb.connect(path, read_only=read_only, config=_ALLOW_LIST_CONFIG if paths else OPEN_CONFIG)
        try:
            if setting(con, "lock_configuration"):
                # DuckDB hands a process one database per file: another connection here set it up
                _check_shared(con, settings, paths)
                return con
            # constants only (SET evaluates its value as an expression, and a store's macro could
            # shadow a function it calls)
            con.execute("SET enable_progress_bar = false")  # DuckDB draws one on stdout; CLI output is ours
            for name, value in (settings or {}).items():
                con.execute(f"SET {name} = {_literal(str(value))}")
            if paths:
                con.execute("SET allowed_paths = ?", [paths])
                con.execute("SET enable_external_access = false")
            con.execute("SET lock_configuration = true")
            _check_locked(con, paths)
        except BaseException:
            con.close()
            raise
    return con


def _check_locked(con: duckdb.DuckDBPyConnection, paths: list[str]) -> None:
    """Read back what makes the connection safe; anything else is refused, never used."""
    wrong = [name for name, value in _LOCKED.items() if setting(con, name) != value]
    if not _allows_only(con, paths):
        wrong.append("allowed_paths")
    if wrong:
        raise StoreError(f"could not restrict the connection to the store ({', '.join(wrong)}); it was not used")


def _allows_only(con: duckdb.DuckDBPyConnection, paths: list[str]) -> bool:
    """Whether the files the connection may read are `paths`, the store's own files (DuckDB
    allows its database file, WAL and their recovery files, and its temp folder, itself)."""
    stores = [r[0] for r in con.execute("SELECT path FROM system.main.duckdb_databases() "
                                         "WHERE database_name = system.main.current_database()").fetchall()]
    own = {f"{db}{suffix}" for db in stores if db for suffix in ("", ".wal", ".wal.recovery", ".wal.checkpoint")}
    temp = str(setting(con, "temp_directory") or "").rstrip("/")
    folders = {str(d).rstrip("/") for d in setting(con, "allowed_directories") or []}
    return set(setting(con, "allowed_paths") or []) <= own | set(paths) and folders <= {temp}


def _check_shared(con: duckdb.DuckDBPyConnection, settings: dict | None, paths: list[str]) -> None:
    """A connection to a database another connection of this process configured: it must be
    locked as `connect` locks one, and allow what this caller needs; else it is refused as a
    configuration conflict (store/db.py waits for the other connection to close)."""
    allowed = set(setting(con, "allowed_paths") or [])
    wanted = (set(paths) <= allowed and _allows_only(con, paths)
              and all(str(setting(con, k)).lower() == str(v).lower() for k, v in (settings or {}).items()
                      if k not in ("memory_limit", "threads")))  # how fast, not what it may reach
    if any(setting(con, name) != value for name, value in _LOCKED.items()) or not wanted:
        con.close()
        raise duckdb.ConnectionException(
            "the store is open in this process with a different configuration (another connection holds it)")


# ------------------------------------------------------------------ the catalog check

# DuckDB's own catalog functions, called by their system-qualified names: a store may define a
# table macro named `duckdb_tables` that hides its objects from an unqualified call
_KIND_QUERIES = (
    # (kind, query returning (schema, name, definition) for one database)
    ("schema", "SELECT schema_name, schema_name, '' FROM system.main.duckdb_schemas() "
               "WHERE database_name = ? AND NOT internal"),
    ("table", "SELECT schema_name, table_name, sql FROM system.main.duckdb_tables() WHERE database_name = ?"),
    ("view", "SELECT schema_name, view_name, sql FROM system.main.duckdb_views() "
             "WHERE database_name = ? AND NOT internal"),
    ("macro", "SELECT schema_name, function_name, function_type || ':' || coalesce(macro_definition, '') "
              "|| ':' || coalesce(system.main.array_to_string(parameters, ','), '') "
              "FROM system.main.duckdb_functions() WHERE database_name = ?"),
    # not its start value: a store writes the next value there as it draws from the sequence
    ("sequence", "SELECT schema_name, sequence_name, "
                 "system.main.concat_ws(':', min_value, max_value, increment_by, cycle) "
                 "FROM system.main.duckdb_sequences() WHERE database_name = ?"),
    ("index", "SELECT schema_name, index_name, coalesce(sql, expressions) FROM system.main.duckdb_indexes() "
              "WHERE database_name = ?"),
    ("type", "SELECT schema_name, type_name, logical_type FROM system.main.duckdb_types() "
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
    done = set(applied)
    names = tuple(name for name, _ in MIGRATIONS if name in done)
    if not names:
        # a store no migration has touched (one this command is creating) must hold nothing:
        # an empty database's catalog is empty (tests/store/test_untrusted_store.py builds it to check),
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
            found = catalog(con, current_database(con))
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


def current_database(con: duckdb.DuckDBPyConnection) -> str:
    """The connection's own database, by DuckDB's system-qualified function."""
    return con.execute("SELECT system.main.current_database()").fetchall()[0][0]


def _refuse(where: str, wrong: list[str]) -> None:
    shown = "; ".join(wrong[:12]) + (f"; and {len(wrong) - 12} more" if len(wrong) > 12 else "")
    raise UntrustedStoreError(
        f"{where}: refused: this store's schema is not the one Faultline creates ({shown}). "
        "A store is read as untrusted input: its views, macros and column definitions run as SQL "
        "when it is read, so only Faultline's own are accepted (docs/reliability.md#a-store-is-untrusted-input). "
        "Rebuild it with `python -m ingest`, or export the runs you need and ingest them.")


def check_catalog(con: duckdb.DuckDBPyConnection, where: str, applied: Iterable[str],
                  database: str | None = None) -> None:
    """Refuse a store whose schema objects are not what its `applied` migrations create.

    `where` names the store in the message; `database` is its name on `con` (default: the
    connection's own database). Only names are reported: a refused store's SQL is never shown."""
    wrong = differences(catalog(con, database or current_database(con)), reference(applied))
    if wrong:
        _refuse(where, wrong)


def trusted_migrations(con: duckdb.DuckDBPyConnection, where: str, database: str | None = None) -> list[str]:
    """The migrations a store records, read only once nothing of the store can run when read.

    In this order: its catalog is read (definitions as text: DuckDB's own functions, system-
    qualified, evaluate none of them); the `schema_migrations` table must be exactly Faultline's
    (a generated column there would run when read); only then are its rows read (a query that
    calls no function a macro could shadow); a newer Faultline's store is refused; and every
    object must be what those migrations create (Faultline's migrations define no function or
    macro, so a store defining one is refused). Raises UntrustedStoreError or StoreError."""
    database = database or current_database(con)
    found = {k: v for k, v in catalog(con, database).items() if k not in _LEFTOVERS}
    key = ("table", "main", "schema_migrations")
    if key not in found:
        applied: list[str] = []
    else:
        if found[key] != _migrations_table(SCHEMA_MIGRATIONS_DDL):
            _refuse(where, differences({key: found[key]}, {key: ""}))
        applied = [r[0] for r in con.execute(
            f'SELECT name FROM "{database.replace(chr(34), chr(34) * 2)}".main.schema_migrations ORDER BY id').fetchall()]
    refuse_newer(applied, where)
    expected = reference(applied)
    if not applied and key in found:  # set up, its first migrations not committed (killed): nothing else
        expected = {key: found[key]}
    if wrong := differences(found, expected):
        _refuse(where, wrong)
    return applied


# The views an ingest of an earlier Faultline created in the store while it committed, and left
# there when it was killed at that moment: inert (nothing of Faultline's reads them, and every
# view that could name them is checked to be Faultline's own), removed by the next writer
_LEFTOVERS = frozenset(("view", "main", f"_staged_{t}") for t in ("runs", "instances", "predictions", "transcript_steps"))


def staging_leftovers(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The names of the staging views a killed ingest left in the store (see _LEFTOVERS)."""
    rows = con.execute("SELECT view_name FROM system.main.duckdb_views() WHERE database_name = "
                       "system.main.current_database() AND schema_name = 'main' AND NOT internal").fetchall()
    return sorted(name for (name,) in rows if ("view", "main", name) in _LEFTOVERS)


_migrations_tables: dict[str, str] = {}


def _migrations_table(ddl: str) -> str:
    """`schema_migrations` as DuckDB describes the table Faultline creates."""
    if ddl not in _migrations_tables:
        con = duckdb.connect(":memory:", config=OPEN_CONFIG)
        try:
            con.execute(ddl)
            _migrations_tables[ddl] = con.execute(
                "SELECT sql FROM system.main.duckdb_tables() WHERE table_name = 'schema_migrations'").fetchall()[0][0]
        finally:
            con.close()
    return _migrations_tables[ddl]
