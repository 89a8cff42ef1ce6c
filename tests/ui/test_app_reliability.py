"""Issue 19, items 1 and 2, in the code itself: no Python callback runs inside polars' thread pool
(a thread in `to_pandas` holding the GIL waited on pool threads that waited on the GIL: the
server deadlocked under concurrent sessions), every page imports the heavy libraries through one
module first, and every query has a deadline. The browser-level proof is tests/ui/test_load.py."""

from __future__ import annotations

import re
import time

import pytest

from conftest import ROOT

APP_CODE = [ROOT / "app.py", *sorted(f for p in ("pages", "ui", "stats", "store") for f in (ROOT / p).rglob("*.py"))]
CALLBACK = re.compile(r"\.(map_elements|map_batches|map_groups|map_rows)\(")


def test_no_python_callback_runs_in_polars_thread_pool():
    found = [f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
             for path in APP_CODE for n, line in enumerate(path.read_text().splitlines(), start=1)
             if CALLBACK.search(line)]
    assert found == [], "plain Python after collection, or a polars expression, instead of:\n" + "\n".join(found)


def test_every_page_imports_the_heavy_libraries_first():
    scripts = [ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py"))]
    for script in scripts:
        code = [ln for ln in script.read_text().split('"""', 2)[2].splitlines() if ln.strip()]
        assert code[0].startswith("import ui.preload"), f"{script.name}: first import is {code[0]!r}"


def test_a_query_past_its_deadline_is_interrupted_and_frees_the_page(tmp_db, monkeypatch):
    import store
    from ui.data import run_bounded

    with store.write_session(tmp_db) as con:
        con.execute("INSERT INTO runs (run_id, source_format, source_path, content_hash, run_name, model, dataset, "
                    "n_predictions, n_failures, n_infra_errors, record_schema_version, ingested_at) "
                    "VALUES ('r', 'jsonl', '/x', 'h', 'x', 'm', 'd', 0, 0, 0, 1, now())")
    monkeypatch.setenv("FAULTLINE_QUERY_TIMEOUT", "1")

    def endless(con):  # a cross join of 10^12 rows: minutes of work
        return con.execute("SELECT count(*) FROM range(1000000) a, range(1000000) b WHERE a.range + b.range = -1").fetchall()

    started = time.monotonic()
    with pytest.raises(store.StoreError) as err:
        run_bounded(tmp_db, endless)
    assert time.monotonic() - started < 5
    assert err.value.message == ("this view took longer than 1 s to compute and was stopped; narrow the filters, "
                                 "or raise FAULTLINE_QUERY_TIMEOUT")
    # the interrupted query let go of its connection: the next query runs at once
    assert run_bounded(tmp_db, lambda con: con.execute("SELECT count(*) FROM runs").fetchall()) == [(1,)]
