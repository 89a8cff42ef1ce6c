"""What a log format is to the load: one `Source` per format, declared in the format's own module
(`ingest/sources/NAME.py`, or a folder for a format with several parts), and put in the order
`--format auto` tries them in `ingest/registry.py`. docs/architecture.md says how to add one."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from core.records import ParsedRun, Skipped

from .options import ReadOptions


@dataclass(frozen=True)
class Source:
    name: str  # the --format name
    looks_like: Callable[[Path], bool]  # from the file's head, or the files below a folder
    read: Callable[[Path, ReadOptions], Iterator[ParsedRun | Skipped]]
    count_runs: Callable[[Path], int]  # for the progress bar
    # What it recognises, for the message when nothing does
    expects: str = ""
    # Parts of an input that can be read independently (in parallel); None: read as a whole.
    parts: Callable[[Path], list[Path]] | None = None
    # The bytes of an input whose parsing is worth sharing among worker processes, weighed against
    # the load's threshold; None: all of its bytes
    work_bytes: Callable[[Path], int] | None = None
    # First-line keys of this format's JSONL that the generic jsonl source would misread as a
    # table of predictions, and what to say instead: (keys, what the file is)
    jsonl_lookalikes: tuple[tuple[frozenset[str], str], ...] = ()
