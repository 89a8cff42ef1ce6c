"""One analysis of a store at a time.

Two runs on one store would both see the same failures unanalysed and pay for each prompt twice
(and store each analysis twice), so a run holds a lock file, with its pid in it, for as long as
it works. The lock is an flock: the kernel releases it when the holder exits, however it exits,
so a file left behind by a killed run (its pid dead) is taken over by the next run without anyone
deleting it.

The lock is keyed on the store file's identity (device and inode), not on the name it was given:
a symbolic link and a hard link reach the same file, so they must take the same lock. It lives
in the folder of the store's real path, named by that identity, and a second one in a folder of
this machine's temporary directory (a hard link in another folder reaches the same inode, never
the same folder).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Iterator

from store import FaultlineError

SUFFIX = ".analysis.lock"


class RunLocked(FaultlineError):
    """Another analysis is working on this store."""


def _identity(db: Path) -> str:
    st = os.stat(db)
    return f"{st.st_dev:x}-{st.st_ino}"


def lock_path(db: Path) -> Path:
    """The lock beside the store: in its real folder, named by the file's identity."""
    real = Path(os.path.realpath(db))
    return real.with_name(f".{real.name}.{_identity(real)}{SUFFIX}")


def machine_lock_path(db: Path) -> Path | None:
    """The lock every name of the store on this machine shares, or None where the shared folder
    cannot be made (it is then the lock beside the store alone)."""
    folder = Path(tempfile.gettempdir()) / "faultline-analysis-locks"
    try:
        folder.mkdir(exist_ok=True)
        if folder.stat().st_uid == os.getuid():
            folder.chmod(0o1777)  # like /tmp: every user may lock, none may remove another's file
    except OSError:
        return None
    return folder / f"{_identity(db)}{SUFFIX}"


@contextlib.contextmanager
def _held(path: Path, db: Path) -> Iterator[None]:
    # imported here: fcntl is POSIX-only, and importing the package must work everywhere
    import fcntl

    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode("ascii", "replace").strip() or "unknown"
            os.close(fd)
            raise RunLocked(
                f"{db}: another analysis is running on this store (pid {holder}; lock file {path}); "
                "wait for it to finish: two at once would pay for the same prompts twice"
            ) from None
        # the previous holder unlinks the file as it releases it: a lock taken on an unlinked
        # file guards nothing, so take it again on the file now at the path
        try:
            current = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            current = False
        if current:
            break
        os.close(fd)
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode("ascii"))
    try:
        yield
    finally:
        path.unlink(missing_ok=True)
        os.close(fd)


@contextlib.contextmanager
def run_lock(db: Path) -> Iterator[None]:
    """Hold the store's analysis locks (RunLocked when another run holds either)."""
    with contextlib.ExitStack() as stack:
        stack.enter_context(_held(lock_path(db), db))
        shared = machine_lock_path(db)
        if shared is not None:
            try:
                stack.enter_context(_held(shared, db))
            except PermissionError:
                pass  # a file another user left without write permission: the lock beside the store holds
        yield
