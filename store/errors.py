"""The store's errors (the base class, FaultlineError, is core's)."""

from core.errors import FaultlineError


class StoreError(FaultlineError):
    """The database cannot be opened, is locked for too long, or is from a newer Faultline."""


class EmptyStoreError(StoreError):
    """No data yet: the file is missing, empty (0 bytes) or was never set up (no tables), as an
    ingest killed right after creating it leaves it. Read paths show their empty state."""


class OutdatedStoreError(StoreError):
    """The store was written by an older Faultline (migrations missing) and this reader may not
    upgrade it (read-only mode, or a file it cannot write)."""

    def __init__(self, path, missing: list[str]):
        super().__init__(
            f"{path}: this store was written by an older Faultline (it lacks {len(missing)} schema "
            f"migration{'s' * (len(missing) != 1)}, from {missing[0]}); run `python -m ingest --migrate {path}`")
        self.missing = missing
