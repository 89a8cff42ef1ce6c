"""Two real processes: a reader keeps querying while a writer re-ingests the same store, with
one connection per query (the CLIs) or a lingering one that never goes idle (the app under
steady use), which only the writer's announcement makes let go."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time

import pytest

from conftest import MMLU_SUITE, ROOT, requires_fixtures

pytestmark = requires_fixtures  # reads the shared real logs

WRITER = textwrap.dedent(
    """
    import sys, time
    from ingest import ingest_paths
    db, suite, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
    t = time.perf_counter()
    for _ in range(rounds):
        ingest_paths([suite], db=db)
    print(time.perf_counter() - t)
    """
)

READER = textwrap.dedent(
    """
    import json, sys, time
    from store import read_connection
    db, seconds, linger = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
    seen, errors, waits = [], [], []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        t = time.perf_counter()
        try:
            with read_connection(db, timeout=30, linger=linger) as con:
                seen.append(con.execute(
                    "SELECT count(*), count(DISTINCT run_id), sum(is_correct::INT) FROM outcomes").fetchone())
        except Exception as exc:
            errors.append(repr(exc))
        waits.append(time.perf_counter() - t)
    print(json.dumps({"seen": seen, "errors": errors, "max_wait": max(waits)}))
    """
)


@pytest.mark.parametrize("linger", [0, 1.0], ids=["per-query", "lingering"])
def test_reader_keeps_reading_consistent_data_while_writer_ingests(mmlu_db, linger):
    reader = subprocess.Popen(
        [sys.executable, "-c", READER, str(mmlu_db), "16", str(linger)], cwd=ROOT,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    time.sleep(1.5)
    writer = subprocess.run(
        [sys.executable, "-c", WRITER, str(mmlu_db), str(MMLU_SUITE), "4"], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    out, err = reader.communicate(timeout=120)
    assert writer.returncode == 0, writer.stderr
    # four ingests of the suite (1.4 s here), each waiting at most for the reader's query in
    # flight; a reader that ignored the announcement would hold the file for its whole 16 s
    assert float(writer.stdout) < 8
    assert reader.returncode == 0, err
    result = json.loads(out)
    assert result["errors"] == []
    # every read saw a whole store: never a run half-replaced, never an empty or doubled table
    assert len(result["seen"]) > 20
    assert {tuple(s) for s in result["seen"]} == {(1000, 50, 468)}
    # the reader was never blocked for long while the writer held the file
    assert result["max_wait"] < 10
