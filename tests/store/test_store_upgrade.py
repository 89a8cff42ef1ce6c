"""Issue 19, items 4, 5 and 7: every command and page opens every store it can read — a store an
older Faultline wrote is upgraded when it may be written, else the reader says how to upgrade it;
read-only writes nothing; a disk or folder that refuses a write says so. The old stores are real:
the demo store's rows copied into a store built by the first migrations only."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from streamlit.testing.v1 import AppTest

from child_runs import run_unprivileged
from conftest import ROOT, q, run_module
from older_stores import BEFORE, older_copy
from store import MIGRATIONS

MISSING = len(MIGRATIONS) - BEFORE
PAGES = ["app.py", "pages/signatures.py", "pages/compare.py", "pages/slices.py", "pages/instances.py",
         "pages/taxonomy.py", "pages/data.py"]
DEMO_A, DEMO_B = "demo/atlas-7b", "demo/atlas-70b"


@pytest.fixture(scope="module")
def current(demo_db) -> Path:
    """The demo logs ingested and analysed offline by this Faultline (this module's copy of the
    demo store), without the findings an older Faultline could not have stored (No Model Error,
    migration 009), so that an older store holding its rows can show the same pages."""
    from store import write_session
    from store.analysis import refresh_labels

    with write_session(demo_db) as con:
        con.execute("DELETE FROM analyses WHERE no_model_error IS NOT NULL")
        refresh_labels(con)
    return demo_db


def migrations_in(db: Path) -> int:
    return q(db, "SELECT count(*) FROM schema_migrations")[0][0]


def stats_json(db: Path, *args) -> object:
    out = run_module("stats", *args, "--db", db, "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_stats_reads_a_store_an_older_faultline_wrote(current, tmp_path):
    old = older_copy(current, tmp_path / "old.duckdb")
    with pytest.raises(duckdb.CatalogException):  # what the unfixed `stats` met: "latest_outcomes does not exist"
        q(old, "SELECT count(*) FROM latest_outcomes")
    assert stats_json(old, "accuracy") == stats_json(current, "accuracy")
    assert migrations_in(old) == len(MIGRATIONS)  # upgraded in place, as a write would have
    assert stats_json(old, "compare", DEMO_A, DEMO_B) == stats_json(current, "compare", DEMO_A, DEMO_B)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="drops file-permission capabilities on Linux")
def test_an_older_store_that_cannot_be_written_says_how_to_upgrade_it(current, tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    old = older_copy(current, folder / "old.duckdb")
    old.chmod(0o444)
    folder.chmod(0o555)
    try:
        result = run_unprivileged("stats", "accuracy", "--db", old)
    finally:
        folder.chmod(0o755)
        old.chmod(0o644)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr and "Catalog Error" not in result.stderr
    assert result.stderr == (
        f"error: {old}: this store was written by an older Faultline (it lacks {MISSING} schema migrations, from "
        f"007_latest_outcomes); run `python -m ingest --migrate {old}`\n")
    assert migrations_in(old) == BEFORE

    upgraded = run_module("ingest", "--migrate", old)
    assert upgraded.returncode == 0, upgraded.stderr
    names = [n for n, _ in MIGRATIONS[BEFORE:]]
    assert upgraded.stdout == f"{old}: applied {MISSING} migration(s): {', '.join(names)}\n"
    assert run_module("ingest", "--migrate", old).stdout == f"{old}: already up to date\n"
    assert stats_json(old, "accuracy") == stats_json(current, "accuracy")


def run(page: str, **params) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90)
    if page != "app.py":
        at.switch_page(page)
    at.query_params.update(params)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_every_page_reads_a_store_an_older_faultline_wrote(current, tmp_path, monkeypatch):
    old = older_copy(current, tmp_path / "old.duckdb")
    monkeypatch.delenv("FAULTLINE_READ_ONLY", raising=False)
    params = {"pages/compare.py": {"a": DEMO_A, "b": DEMO_B}, "pages/instances.py": {"instance": "demo_math:arithmetic/id1"}}
    shown = {}
    for db in (old, current):
        monkeypatch.setenv("FAULTLINE_DB", str(db))
        for page in PAGES:
            at = run(page, **params.get(page, {}))
            assert not at.error, (db.name, page, [e.value for e in at.error])
            shown[db.name, page] = ([m.value for m in at.metric], len(at.get("vega_lite_chart")), len(at.dataframe))
    assert migrations_in(old) == len(MIGRATIONS)
    for page in PAGES:
        assert shown["old.duckdb", page] == shown["demo.duckdb", page], page
    assert shown["old.duckdb", "app.py"][0][:6] == ["44", "4", "4", "10", "488", "144"]


def test_a_read_only_app_on_an_older_store_says_how_to_upgrade_it_and_writes_nothing(current, tmp_path, monkeypatch):
    old = older_copy(current, tmp_path / "old.duckdb")
    before = old.read_bytes()
    monkeypatch.setenv("FAULTLINE_DB", str(old))
    monkeypatch.setenv("FAULTLINE_READ_ONLY", "1")
    for page in PAGES:
        at = run(page)
        # the unfixed pages ended in a traceback ("latest_outcomes does not exist")
        assert [e.value for e in at.error] == [
            f"old.duckdb: this store was written by an older Faultline (it lacks {MISSING} schema migrations, from "
            "007_latest_outcomes); run `python -m ingest --migrate old.duckdb`"], page
    assert old.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["old.duckdb"]


def test_read_only_with_no_store_builds_nothing_and_says_so(tmp_path, monkeypatch):
    import demo

    data = tmp_path / "data"
    data.mkdir()
    monkeypatch.setattr(demo, "DEMO_DB", data / "demo.duckdb")
    monkeypatch.setenv("FAULTLINE_DB", str(data / "faultline.duckdb"))
    monkeypatch.setenv("FAULTLINE_READ_ONLY", "1")
    for page in PAGES:
        at = run(page)
        assert not at.error, page
        assert [i.value for i in at.info] == [
            "**There is no store to show.** faultline.duckdb does not exist, and this dashboard is read-only: it "
            "builds and loads nothing. Whoever runs it loads logs with `python -m ingest PATH`."], page
        assert str(tmp_path) not in " ".join(str(x.value) for x in [*at.markdown, *at.info, *at.caption])
    # the unfixed app built the demo store into data/ (a PermissionError traceback where it could not)
    assert list(data.iterdir()) == []


def test_a_demo_store_that_cannot_be_built_is_a_message_not_a_traceback(tmp_path, monkeypatch):
    import demo

    blocker = tmp_path / "data"
    blocker.write_text("a file where the data folder should be")
    monkeypatch.setattr(demo, "DEMO_DB", blocker / "demo.duckdb")
    monkeypatch.setenv("FAULTLINE_DB", str(tmp_path / "faultline.duckdb"))
    monkeypatch.delenv("FAULTLINE_READ_ONLY", raising=False)
    from ui.data import _demo_store

    _demo_store.clear()
    at = run("app.py")
    _demo_store.clear()
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and errors[0].startswith(f"{tmp_path / 'faultline.duckdb'} does not exist, and the demo "
                                                     "store could not be built: File exists. Load logs"), errors


# ---------------------------------------------------------------- writes the disk refuses


def _rows(n: int) -> str:
    return "".join(json.dumps({"model": "m", "instance_id": f"q{i}", "output": "x" * 1000 + str(i),
                               "correct": i % 2 == 0}) + "\n" for i in range(n))


def test_an_ingest_onto_a_full_disk_says_no_space_left(tmp_path):
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    probe = subprocess.run(["unshare", "-r", "-m", "sh", "-c", f"mount -t tmpfs -o size=64k tmpfs {mnt}"],
                           capture_output=True, timeout=30)
    if probe.returncode != 0:
        pytest.skip("cannot mount a tmpfs here (unshare -r -m: no user namespaces)")
    logs = tmp_path / "preds.jsonl"
    logs.write_text(_rows(3000))
    script = (f"mount -t tmpfs -o size=1m tmpfs {mnt} && {sys.executable} -m ingest {logs} --db {mnt}/x.duckdb; "
              f"echo \"exit=$?\"")
    result = subprocess.run(["unshare", "-r", "-m", "sh", "-c", script], cwd=ROOT, capture_output=True, text=True,
                            timeout=300)
    assert "exit=2" in result.stdout, (result.stdout, result.stderr)
    # the unfixed ingest ended in "cannot rollback - no transaction is active" and a traceback
    assert result.stderr == (f"error: no space left on the device holding {mnt} (writing x.duckdb); nothing of this "
                             "write was stored — free some space there, or give --db a store on another disk\n")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="drops file-permission capabilities on Linux")
@pytest.mark.parametrize("where", ["x.duckdb", "new/x.duckdb"])
def test_an_ingest_into_a_folder_that_cannot_be_written_says_so(tmp_path, where):
    logs = tmp_path / "preds.jsonl"
    logs.write_text(_rows(4))
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        result = run_unprivileged("ingest", logs, "--db", folder / where)
    finally:
        folder.chmod(0o755)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    assert result.stderr == (f"error: {(folder / where).parent}: cannot write the database here (Permission denied); "
                             "nothing was stored — give --db a store in a folder you can write\n")
