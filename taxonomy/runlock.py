"""One analysis of a store at a time.

Two runs on one store would both see the same failures unanalysed and pay for each prompt twice
(and store each analysis twice), so a run holds a lock file, with its pid in it, for as long as
it works. The lock is an flock: the kernel releases it when the holder exits, however it exits,
so a file left behind by a killed run (its pid dead) is taken over by the next run without anyone
deleting it.

The lock is keyed on the store file's identity (device and inode), not on the name it was given:
a symbolic link and a hard link reach the same file, so they must take the same lock. It is taken
twice. Beside the store, in the folder of its real path, named by that identity (what every name
of the store on one machine *and* over a network file system reaches); and in a folder every
process on this machine shares whatever its environment says (`machine_folder`): a hard link in
another folder reaches the same inode, never the same folder, and `$TMPDIR` differs between
users, services and shells, so it cannot hold a lock meant for all of them.
"""

from __future__ import annotations

import contextlib
import os
import sys
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


# Where the machine-wide lock goes, first usable wins; never $TMPDIR (see the module docstring).
# /dev/shm: a RAM-backed folder every Linux process sees, world-writable with the sticky bit,
# outside TMPDIR, and not made private by systemd's PrivateTmp= (which gives a service its own
# /tmp and /var/tmp, so a dashboard service and a shell user would lock in different folders).
# A lock needs no persistence: the kernel holds flocks, and the file is only their handle.
# /var/tmp, then /tmp (both as named, never through TMPDIR) where there is no /dev/shm (macOS).
SHARED_FOLDERS = ("/dev/shm", "/var/tmp", "/tmp")
FOLDER_NAME = "faultline-locks"


def machine_folder() -> Path | None:
    """The folder every process on this machine shares for Faultline's locks, or None when no
    candidate can hold it (a note says so where it matters)."""
    for base in SHARED_FOLDERS:
        root = Path(base)
        if not root.is_dir() or not os.access(root, os.W_OK | os.X_OK):
            continue
        folder = root / FOLDER_NAME
        try:
            folder.mkdir(exist_ok=True)
            if folder.stat().st_uid == os.getuid():
                folder.chmod(0o1777)  # like /tmp: every user may lock, none may remove another's file
        except OSError:
            continue
        if folder.is_dir() and not folder.is_symlink():
            return folder
    return None


def machine_lock_path(db: Path) -> Path | None:
    """The lock every name of the store on this machine shares, or None where no shared folder
    can be made (it is then the lock beside the store alone, and the run says so)."""
    folder = machine_folder()
    return None if folder is None else folder / f"{_identity(db)}{SUFFIX}"


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
        why = None if shared is not None else f"none of {', '.join(SHARED_FOLDERS)} can hold {FOLDER_NAME}/"
        if shared is not None:
            try:
                stack.enter_context(_held(shared, db))
            except PermissionError:
                why = f"{shared} belongs to another user and may not be written"
        if why is not None:
            print(f"note: the machine-wide analysis lock could not be taken ({why}); only the lock beside "
                  f"the store guards this run: a second analysis of it through a hard link in another folder "
                  "would not be refused", file=sys.stderr)
        yield
