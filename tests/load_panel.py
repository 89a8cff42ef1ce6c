"""The app's load panel under AppTest (on the fixture `data_root` of conftest.py: an empty store
and a data root): a load of a path typed into the panel, the wait for the job it starts, and
averaged 1-3 ratings, a table a load must be told the scale of."""

from __future__ import annotations

from conftest import ROOT
from streamlit.testing.v1 import AppTest

RATINGS = [{"model": m, "dataset": "rated", "instance_id": str(i), "output": "x", "score": s}
           for m, scores in (("a", [1.0, 4 / 3, 2.0, 3.0]), ("b", [5 / 3, 7 / 3, 8 / 3, 3.0]))
           for i, s in enumerate(scores)]


def load(path: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.run()
    next(t for t in at.text_input if t.label == "Path on this machine").input(path)
    next(b for b in at.button if b.label == "Load").click()
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def finished_jobs(expect_failure: bool) -> None:
    """Wait for the app's jobs; the latest one failed or succeeded as expected."""
    import time

    from ui import jobs

    deadline = time.monotonic() + 120
    while jobs.running():
        assert time.monotonic() < deadline, "job did not finish"
        time.sleep(0.2)
    latest = jobs.jobs()[-1]
    assert (latest.returncode != 0) == expect_failure, latest.log.read_text()
