"""What `python -m ingest` imports (issue 25: a 283-run HELM suite ingests within 1.5x of a bare
reader, start-up included): none of the heavy libraries other commands use — not litellm,
streamlit, scipy, polars or scikit-learn, and not pandas, which pyarrow would import on its first
conversion of a list (ingest/__main__.py) — and the store it writes holds the same values."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT, q
from tests.helm_gen import Case, Run, write_run

NEVER_IMPORTED = ("pandas", "litellm", "streamlit", "scipy", "polars", "sklearn", "matplotlib", "altair")


def _suite(tmp_path):
    suite = tmp_path / "benchmark_output" / "runs" / "v1"
    for model in ("org/a", "org/b"):
        write_run(suite, Run("qa", model, ["qa"], [
            Case(f"q{i}", f"question {i}", f"answer {i}", {"exact_match": float(i % 3 == 0)}) for i in range(12)]))
    return suite


def test_ingest_imports_no_heavy_library(tmp_path):
    suite = _suite(tmp_path)
    db = tmp_path / "s.duckdb"
    # `python -m ingest SUITE --db DB`, listing the modules loaded when it exits
    code = ("import atexit, runpy, sys\n"
            "atexit.register(lambda: print('MODULES', *sorted({m.split('.')[0] for m in sys.modules}), file=sys.stderr))\n"
            "sys.argv = ['ingest', *sys.argv[1:]]\n"
            "runpy.run_module('ingest', run_name='__main__', alter_sys=True)\n")
    done = subprocess.run([sys.executable, "-c", code, str(suite), "--db", str(db)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "ingested 2 runs, 24 predictions, 16 failures" in done.stdout
    imported = set(next(line for line in done.stderr.splitlines() if line.startswith("MODULES ")).split()[1:])
    assert {"ingest", "store", "pyarrow", "duckdb", "pydantic"} <= imported  # the list is the real one
    assert sorted(imported & set(NEVER_IMPORTED)) == []
    # the rows are what pyarrow stores with pandas around: every value, typed as the table says
    assert q(db, "SELECT count(*), count(*) FILTER (WHERE NOT is_correct), sum(score) FROM predictions") == [(24, 16, 8.0)]
    assert q(db, "SELECT model, n_predictions, n_failures, pass_threshold, lower_is_better, record_schema_version "
                 "FROM runs ORDER BY model") == [("org/a", 12, 8, 0.7, False, 3), ("org/b", 12, 8, 0.7, False, 3)]


def test_pandas_still_works_after_the_probe_is_skipped():
    """The command's process may still import pandas and hand it to pyarrow, both ways."""
    code = (
        "import sys\n"
        "import pyarrow as pa\n"
        "from ingest.cli import skip_pyarrow_pandas_probe\n"
        "skip_pyarrow_pandas_probe()\n"
        "assert 'pandas' not in sys.modules\n"
        "assert pa.array(['a', None], pa.string()).null_count == 1\n"
        "import pandas as pd\n"
        "t = pa.Table.from_pandas(pd.DataFrame({'x': [1.0, None], 'c': pd.Categorical(['a', 'b'])}))\n"
        "assert t.column('x').null_count == 1 and str(t.schema.field('c').type).startswith('dictionary')\n"
        "assert t.to_pandas()['c'].tolist() == ['a', 'b']\n"
        "assert pa.array(pd.Series([1.0, None])).null_count == 1\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_a_suite_is_walked_once(tmp_path, monkeypatch):
    """Format detection, run discovery, the readers and the skipped-files list share one listing
    of the folder (issue 25: a suite used to be walked four times)."""
    import os

    from ingest import ingest_paths
    from ingest import walk

    suite = _suite(tmp_path)
    (suite / "notes.txt").write_text("not a log")  # a skipped file: the list of them reads the listing too
    walks = []
    real_walk = os.walk
    monkeypatch.setattr(walk.os, "walk", lambda *a, **k: walks.append(a[0]) or real_walk(*a, **k))
    summary = ingest_paths([tmp_path], db=tmp_path / "s.duckdb")
    assert summary.runs == 2 and any("notes.txt" in p for paths in summary.skipped.values() for p in paths)
    assert walks == [tmp_path]


def test_each_head_is_read_once_within_the_command_and_the_scan_ends_with_it(tmp_path, monkeypatch):
    """Each file's head is read once however many readers look at it; the scan belongs to the
    command's block (ingest/scan.py), not to the process: gone after it, and another thread
    running during it reads afresh."""
    import threading

    from ingest import files, ingest_paths, scan

    suite = _suite(tmp_path)
    (suite / "notes.txt").write_text("not a log")
    reads = []
    real_head = files._head
    monkeypatch.setattr(files, "_head", lambda path, size: reads.append(path.name) or real_head(path, size))
    ingest_paths([tmp_path], db=tmp_path / "s.duckdb")
    assert sorted(reads) == sorted(set(reads)) and "notes.txt" in reads
    assert scan.current() is None

    reads.clear()
    elsewhere = []
    with scan.scanning() as outer:
        with scan.scanning() as inner:
            assert inner is outer  # a block inside another shares its scan
        files.head(suite / "notes.txt", 4)
        files.head(suite / "notes.txt", 9)
        thread = threading.Thread(target=lambda: elsewhere.append((scan.current(), files.head(suite / "notes.txt", 4))))
        thread.start()
        thread.join()
    assert reads == ["notes.txt", "notes.txt"]  # the block's once, the other thread's once
    assert elsewhere == [(None, b"not ")]
    files.head(suite / "notes.txt", 4)
    assert reads == ["notes.txt"] * 3 and scan.current() is None
