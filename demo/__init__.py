"""The demo store: the committed DEMO logs in data/demo (made-up models and answers, written by
data/demo/generate.py) ingested and analysed offline, for a first look without logs or API keys."""

from __future__ import annotations

import functools
import hashlib
import os
import tempfile
from pathlib import Path

from ingest import IngestSummary, ingest_paths
from store import writable_db_path

DEMO_DIR = Path(__file__).resolve().parent.parent / "data" / "demo"
DEMO_DB = DEMO_DIR.parent / "demo.duckdb"


@functools.cache
def fingerprint() -> str:
    """Changes when the demo logs or the code that builds the store from them (readers and verdict
    rules, the schema, the offline analyst, its detectors and data) change: a demo store built by
    another version is rebuilt rather than shown stale."""
    root = Path(__file__).resolve().parent.parent
    h = hashlib.sha256()
    for f in sorted(DEMO_DIR.rglob("*")):
        if f.is_file() and f.suffix in (".json", ".jsonl"):
            h.update(f.relative_to(DEMO_DIR).as_posix().encode() + f.read_bytes())
    for package in ("core", "store", "ingest", "taxonomy"):
        for f in sorted((root / package).rglob("*")):
            if f.is_file() and f.suffix in (".py", ".yaml", ".csv"):
                h.update(f.relative_to(root).as_posix().encode() + f.read_bytes())
    return h.hexdigest()[:16]


def ensure_demo() -> Path:
    """data/demo.duckdb, (re)built when missing or built from other logs or code."""
    stamp = DEMO_DB.with_name(DEMO_DB.name + ".fingerprint")
    current = fingerprint()
    if not DEMO_DB.exists() or not stamp.exists() or stamp.read_text().strip() != current:
        build_demo()
    return DEMO_DB


def demo_inputs() -> list[Path]:
    return [DEMO_DIR / "helm", DEMO_DIR / "jsonl" / "demo_summaries.jsonl",
            DEMO_DIR / "jsonl" / "demo_instructions.jsonl"]


def build_demo(db: str | Path | None = None) -> IngestSummary:
    """Ingest the demo logs into `db` (default data/demo.duckdb) and analyse them offline.

    Built in a temporary file beside the target and moved into place when complete, so a
    reader never sees a half-built demo store and a crash leaves no partial one behind.
    """
    from taxonomy import (
        analyze,  # imported when a demo is built: the app asks for the fingerprint first
    )

    target = writable_db_path(db) if db else DEMO_DB
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".demo-", suffix=".duckdb", dir=target.parent)
    os.close(fd)
    os.unlink(tmp)  # DuckDB creates the file itself
    try:
        summary = ingest_paths(demo_inputs(), db=tmp)
        analyze(tmp, "offline")
        os.replace(tmp, target)
        if target == DEMO_DB:
            DEMO_DB.with_name(DEMO_DB.name + ".fingerprint").write_text(fingerprint() + "\n")
    finally:
        for leftover in (Path(tmp), Path(tmp + ".wal")):
            leftover.unlink(missing_ok=True)
    summary.db = target
    return summary
