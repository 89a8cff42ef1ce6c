"""Finding logs below a folder the user pointed at, the same way for every reader.

Folders are searched at any depth. Hidden folders (a name starting with a dot, `..foo` too) are
not entered, and named in the summary; tool folders (`.git`, `__pycache__`, virtual environments)
are passed over without a word. Symbolic links to folders are followed once: a folder already
visited (by device and inode) is not entered again, so a link loop ends. The kernel's virtual
file systems are never entered, so `ingest /` does not read /proc. Only regular files are offered
to the readers (a FIFO would block them, a device never end), and under `files.confine` only
files and folders whose resolved path lies under a root; `every_file_below` still lists the
others, so that the summary names them.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Callable, Iterator

from . import files as _files
from . import scan as _scan
from .errors import IngestError

# folders of tools, never logs: passed over without a word (other hidden folders are named)
_SKIP = {".git", "__pycache__", "node_modules", ".venv", "venv", ".ipynb_checkpoints", ".pytest_cache",
         ".mypy_cache", ".ruff_cache", ".idea", ".vscode"}
HIDDEN = "hidden folder (its name starts with a dot): not searched; name it to read it"
# Faultline's own staging beside a store (store.staging.staging_folder: `.<db name>.ingest-<pid>`):
# not the user's folder, so not named as one left unread
_STAGING = re.compile(r"\..+\.ingest-\d+")
_VIRTUAL = {Path("/proc"), Path("/sys"), Path("/dev")}
HELM_RUN_MARKER = "run_spec.json"


def _enterable(folder: Path, seen: set[tuple[int, int]]) -> bool:
    if _files.outside_roots(folder):
        return False
    try:
        resolved = folder.resolve()
        if any(resolved == v or v in resolved.parents for v in _VIRTUAL):
            return False
        st = folder.stat()
    except OSError:
        return False
    key = (st.st_dev, st.st_ino)
    if key in seen:
        return False
    seen.add(key)
    return True


def _unreadable(exc: OSError) -> None:
    # os.walk skips a folder it cannot list; a run missing from the store must not go unnoticed
    raise IngestError(f"{exc.filename}: cannot read this folder: {exc.strerror or exc}")


def _folders(path: Path, refused: list[tuple[Path, str]] | None = None) -> Iterator[tuple[Path, list[str]]]:
    """(folder, its file names) at any depth below `path`, in a stable order, skipping tool
    folders; a HELM run folder is a leaf (its subfolders are never logs of their own).
    Hidden folders and folders outside the data roots are not entered; `refused` collects them,
    each with the reason."""
    scan = _scan.current()
    if scan is None:
        return _walk(path, refused)
    key = (str(path), _files.roots())
    if key not in scan.listings:
        found: list[tuple[Path, str]] = []
        scan.listings[key] = (list(_walk(path, found)), found)
    listing, outside = scan.listings[key]
    if refused is not None:
        refused.extend(outside)
    return iter(listing)


def total_size(path: Path) -> int:
    """Bytes of the regular files a folder search reads below `path` (or of `path` itself)."""
    if path.is_file():
        return path.stat().st_size
    total = 0
    for here, names in _folders(path):
        for name in names:
            try:
                total += os.stat(here / name).st_size
            except OSError:
                pass
    return total


def _walk(path: Path, refused: list[tuple[Path, str]] | None = None) -> Iterator[tuple[Path, list[str]]]:
    seen: set[tuple[int, int]] = set()
    if not _enterable(path, seen):
        return
    for root, dirs, files in os.walk(path, followlinks=True, onerror=_unreadable):
        here = Path(root)
        if HELM_RUN_MARKER in files:
            dirs.clear()
        else:
            keep = []
            for d in sorted(dirs):
                if d in _SKIP or _STAGING.fullmatch(d):
                    continue
                why = HIDDEN if d.startswith(".") else _files.OUTSIDE if _files.outside_roots(here / d) else None
                if why:
                    if refused is not None:
                        refused.append((here / d, why))
                elif _enterable(here / d, seen):
                    keep.append(d)
            dirs[:] = keep
        yield here, files


def files_below(path: Path, wanted: Callable[[Path], bool]) -> list[Path]:
    """Files below `path` for which `wanted` is true, in a stable order."""
    found = []
    for here, files in _folders(path):
        if HELM_RUN_MARKER in files and here != path:
            continue  # a HELM run folder holds HELM's files only: no need to open each of them
        found.extend(p for name in sorted(files) if _readable(p := here / name) and wanted(p))
    return found


def _readable(file: Path) -> bool:
    """A regular file inside the roots: the only kind a reader may be offered."""
    return _files.refusal(file) is None


def matching_files(path: Path, wanted: Callable[[Path], bool]) -> list[Path]:
    """`path` itself when it is a file `wanted` claims, else the files below it that it claims
    (none for a file it does not)."""
    if path.is_dir():
        return files_below(path, wanted)
    return [path] if path.is_file() and _readable(path) and wanted(path) else []


def files_by_folder(path: Path, wanted: Callable[[Path], bool],
                    folder_of: Callable[[Path], Path] = lambda file: file.parent) -> dict[Path, list[Path]]:
    """The files `wanted` claims below the folder `path` (or `path` itself, a file named on the
    command line), grouped by `folder_of` each — its folder unless a format says otherwise (one
    run per folder of logs), in the walk's order."""
    groups: dict[Path, list[Path]] = {}
    for file in files_below(path, wanted) if path.is_dir() else [path]:
        groups.setdefault(folder_of(file), []).append(file)
    return groups


def helm_runs_below(path: Path, limit: int | None = None) -> list[Path]:
    """HELM run folders at or below `path` (a run, a suite, runs/, benchmark_output/ or any
    folder holding those), in a stable order."""
    found = []
    for here, files in _folders(path):
        if HELM_RUN_MARKER in files:
            found.append(here)
            if limit and len(found) >= limit:
                break
    return found


def every_file_below(path: Path) -> Iterator[tuple[Path, bool, str | None]]:
    """(file, whether it lies in a HELM run folder, None) for every file a folder search visits,
    and (folder, False, why) for the folders it did not enter: hidden, or outside the data roots."""
    refused: list[tuple[Path, str]] = []
    for here, files in _folders(path, refused):
        in_run = HELM_RUN_MARKER in files
        for name in sorted(files):
            yield here / name, in_run, None
    for folder, why in refused:
        yield folder, False, why


# What helm-run and helm-summarize write beside a suite's run folders (helm/benchmark/runner.py,
# presentation/summarize.py): part of the suite, never a skipped file.
HELM_SUITE_FILES = {
    "schema.json", "summary.json", "costs.json", "runs.json", "run_specs.json",
    "runs_to_run_suites.json", "groups.json", "groups_metadata.json",
}
HELM_SUITE_FOLDERS = {"groups", "eval_cache"}
# ... and beside the suites, in benchmark_output/: downloaded scenario data and cached instances
HELM_OUTPUT_FOLDERS = {"scenarios", "scenario_instances"}


def helm_bookkeeping(file: Path, suites: set[Path]) -> bool:
    """Whether `file` is one HELM writes for a suite in `suites` (not a log of its own)."""
    for suite in suites:
        if file.parent == suite:
            return file.name in HELM_SUITE_FILES
        try:
            inside = file.relative_to(suite).parts
        except ValueError:
            inside = None
        if inside:
            return inside[0] in HELM_SUITE_FOLDERS
        output = suite.parent.parent  # benchmark_output/runs/<suite>
        if suite.parent.name == "runs":
            try:
                below = file.relative_to(output).parts
            except ValueError:
                continue
            if below[0] in HELM_OUTPUT_FOLDERS:
                return True
    return False
