"""The DuckDB store: where it lives, how to open it, its schema and every SQL statement."""

from .db import (data_version, db_spec, is_remote_db, read_connection, release_read_connections,
                 resolve_db_path, upgrade_store, writable_db_path, write_session)
from .errors import EmptyStoreError, FaultlineError, OutdatedStoreError, StoreError
from .migrations import MIGRATIONS, migrate
from .trust import UntrustedStoreError

__all__ = [
    "EmptyStoreError",
    "FaultlineError",
    "MIGRATIONS",
    "OutdatedStoreError",
    "StoreError",
    "UntrustedStoreError",
    "data_version",
    "db_spec",
    "is_remote_db",
    "migrate",
    "read_connection",
    "release_read_connections",
    "resolve_db_path",
    "upgrade_store",
    "writable_db_path",
    "write_session",
]
