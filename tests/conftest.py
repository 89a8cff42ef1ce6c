"""Shared fixtures: paths to the real logs in ../shared/fixtures and fresh DuckDB files."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import duckdb
import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(os.environ.get("FAULTLINE_FIXTURES") or ROOT.parent / "shared" / "fixtures")
HAVE_FIXTURES = FIXTURES.is_dir()
# Tests that read the real logs of other projects: they run wherever ../shared/fixtures (or
# $FAULTLINE_FIXTURES) is present and are skipped, naming what is missing, in a user's clone.
MISSING_FIXTURES = f"needs the shared real logs at {FIXTURES} (absent; set FAULTLINE_FIXTURES to their folder)"
requires_fixtures = pytest.mark.skipif(not HAVE_FIXTURES, reason=MISSING_FIXTURES)
HELM = FIXTURES / "helm"
MMLU_SUITE = HELM / "mmlu-v1" / "benchmark_output" / "runs" / "v1"
SAFETY = HELM / "safety-v4"
STATE_ONLY = HELM / "scenario-state-only"

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def pytest_configure(config):
    # .ci/run sets this: there the real-log tests must run, never be skipped
    if os.environ.get("FAULTLINE_REQUIRE_FIXTURES") and not HAVE_FIXTURES:
        raise pytest.UsageError(f"FAULTLINE_REQUIRE_FIXTURES is set but {FIXTURES} is missing")


@pytest.fixture
def tmp_db(tmp_path) -> Path:
    return tmp_path / "faultline.duckdb"


@pytest.fixture(scope="session")
def _demo_built(tmp_path_factory) -> Path:
    """The demo store, built once for the whole session (ingest and offline analysis: seconds):
    every test on the demo store reads a copy of it (`demo_db`)."""
    from demo import build_demo

    db = tmp_path_factory.mktemp("demo-built") / "demo.duckdb"
    build_demo(db)
    return db


@pytest.fixture(scope="module")
def demo_db(_demo_built, tmp_path_factory) -> Path:
    """A copy of the demo store of the module's own: what one module writes, another never sees."""
    db = tmp_path_factory.mktemp("demo") / "demo.duckdb"
    for suffix in ("", ".wal"):
        if (built := _demo_built.with_name(_demo_built.name + suffix)).exists():
            shutil.copyfile(built, db.with_name(db.name + suffix))
    return db


def run_module(*args, input: str | None = None, env: dict | None = None, timeout: float = 300):
    """`python -m ARGS...` from the project root, as a user runs it; output captured as text."""
    return subprocess.run(
        [sys.executable, "-m", *map(str, args)], cwd=ROOT, input=input, env=env,
        capture_output=True, text=True, timeout=timeout,
    )


def reader_skips(summary) -> list[tuple[str, str]]:
    """(path, reason) for what readers found but cannot analyse, sorted (the folder walk's own
    reasons — format not read, unreadable, … — left out)."""
    from ingest.report import SKIP_REASONS

    return sorted((p, r) for r, paths in summary.skipped.items() if r not in SKIP_REASONS for p in paths)


def connect(db, read_only: bool = True) -> duckdb.DuckDBPyConnection:
    """A plain connection to a store, opened as Faultline opens one (store/trust.py OPEN_CONFIG):
    DuckDB refuses a second connection to a file with another opening configuration while the
    app (AppTest) in this process still holds it."""
    from store.trust import OPEN_CONFIG

    return duckdb.connect(str(db), read_only=read_only, config=OPEN_CONFIG)


def q(db, sql, params=None):
    """Run one query on a store through a read-only connection of its own."""
    con = connect(db)
    try:
        return con.execute(sql, params or []).fetchall()
    finally:
        con.close()


def _ingested_once(name: str, *paths: Path):
    """A session-wide store holding `paths`, and a fixture handing each test a private copy."""

    @pytest.fixture(scope="session")
    def master(tmp_path_factory) -> Path:
        from ingest import ingest_paths

        if not HAVE_FIXTURES:  # every test built on a real-log store skips, saying why
            pytest.skip(MISSING_FIXTURES)

        db = tmp_path_factory.mktemp(name) / f"{name}.duckdb"
        ingest_paths(list(paths), db=db)
        return db

    @pytest.fixture
    def copy(request, tmp_path) -> Path:
        db = tmp_path / f"{name}.duckdb"
        shutil.copy(request.getfixturevalue(f"_{name}_db_master"), db)
        return db

    return master, copy


_mmlu_db_master, mmlu_db = _ingested_once("mmlu", MMLU_SUITE)
_safety_db_master, safety_db = _ingested_once("safety", SAFETY)


@pytest.fixture
def data_root(tmp_path, monkeypatch) -> Iterator[Path]:
    """An empty store and a data root: the app opens on its load panel. The jobs it starts leave
    the registry afterwards: it is the process's, and other tests expect no failed job in it."""
    import store
    from ui import jobs

    logs = tmp_path / "logs"
    logs.mkdir()
    db = tmp_path / "store.duckdb"
    with store.write_session(db):
        pass
    monkeypatch.setenv("FAULTLINE_DB", str(db))
    monkeypatch.setenv("FAULTLINE_DATA_ROOTS", str(logs))
    monkeypatch.delenv("FAULTLINE_READ_ONLY", raising=False)
    before = jobs.jobs()
    yield logs
    for job in jobs.jobs():
        if job not in before:
            jobs._registry().remove(job)


@pytest.fixture
def llm_env(monkeypatch):
    """A test key for litellm (never sent beyond the loopback server) and its local price map."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")


@pytest.fixture
def fake_llm(llm_env):
    """The loopback OpenAI-compatible server of llm_server.py, for the test's duration."""
    from llm_server import FakeLLMServer

    with FakeLLMServer() as srv:
        yield srv
