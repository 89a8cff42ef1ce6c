"""First-run setup in the app: the demo first, then loading one's own logs from a path under the
data roots and analysing them offline; read-only hides it all."""

from __future__ import annotations

import json
import time

import pytest
from streamlit.testing.v1 import AppTest

from conftest import ROOT, q
from ui.text import md


def app(page: str | None = None) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    if page:
        at.switch_page(page)
    return at


def button(at: AppTest, label: str):
    return next(b for b in at.button if b.label == label)


def wait_for_jobs(timeout: float = 120) -> None:
    from ui import jobs

    deadline = time.monotonic() + timeout
    while jobs.running():
        assert time.monotonic() < deadline, "job did not finish"
        time.sleep(0.2)
    failed = [j for j in jobs.jobs() if j.returncode != 0]
    assert not failed, [(j.label, j.log.read_text()) for j in failed]


@pytest.fixture
def logs(tmp_path, monkeypatch):
    """A store path that does not exist yet and a data root holding a small JSONL log."""
    root = tmp_path / "logs"
    root.mkdir()
    rows = [{"model": "m/one", "dataset": "arith", "instance_id": str(i), "input": f"What is {i} + {i}?",
             "output": f"{i} + {i} = {2 * i + (1 if i % 3 == 0 else 0)}", "reference": str(2 * i),
             "correct": i % 3 != 0} for i in range(1, 13)]
    (root / "preds.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    monkeypatch.setenv("FAULTLINE_DB", str(tmp_path / "first.duckdb"))
    monkeypatch.setenv("FAULTLINE_DATA_ROOTS", str(root))
    monkeypatch.delenv("FAULTLINE_READ_ONLY", raising=False)
    return tmp_path


def test_first_run_shows_the_demo_then_loads_own_logs_and_analyses_them(logs):
    db = logs / "first.duckdb"
    at = app()
    at.run()
    assert not at.exception
    assert "DEMO DATA" in at.warning[0].value
    at.text_input[0].input("preds.jsonl")  # relative to the first data root
    button(at, "Load").click()
    at.run()
    assert not at.exception and not at.error
    wait_for_jobs()
    assert q(db, "SELECT count(*), count(*) FILTER (WHERE NOT is_correct) FROM outcomes") == [(12, 4)]

    at = app()
    at.run()
    assert not at.exception
    assert not any("DEMO DATA" in w.value for w in at.warning)
    metrics = {m.label: m.value for m in at.metric}
    assert (metrics["Runs"], metrics["Loaded predictions"], metrics["Failures as loaded"]) == ("1", "12", "4")
    # the empty state of the analysis offers the button where it says to analyse
    button(at, "Analyse failures offline").click()
    at.run()
    wait_for_jobs()
    assert q(db, "SELECT count(*), count(category) FROM failures") == [(4, 4)]
    assert q(db, "SELECT DISTINCT category FROM failures") == [("Calculation Error",)]


def test_missing_path_is_reported_and_nothing_starts(logs):
    from ui import jobs

    before = len(jobs.jobs())
    at = app()
    at.run()
    at.text_input[0].input(str(logs / "logs" / "nowhere.jsonl"))
    button(at, "Load").click()
    at.run()
    # shown as text: the typed path is the user's, and never Markdown
    assert [e.value for e in at.error] == [
        md(f"{logs / 'logs' / 'nowhere.jsonl'}: no such file or folder under the allowed folders", 2000)]
    assert len(jobs.jobs()) == before and not (logs / "first.duckdb").exists()


def test_read_only_app_offers_no_loading(logs, monkeypatch):
    monkeypatch.setenv("FAULTLINE_READ_ONLY", "1")
    at = app()
    at.run()
    assert not at.exception
    assert "DEMO DATA" in at.warning[0].value
    assert not at.text_input and not at.button
