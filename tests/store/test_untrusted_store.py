"""A store is untrusted input (issue 27): a store file whose views, macros, tables and column
defaults read a canary file and a canary environment variable of the machine reading it is
opened locally, at a URL and as a merge source, and the canaries appear nowhere — not on any
page (AppTest here, Chromium in test_untrusted_store_browser below), not in any command's output,
not in a report, not in a merged store. Each is refused, naming what differs."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import duckdb
import pytest

from store import trust
from tests.conftest import run_module
from tests.hostile_store import A, B, CANARY_ENV, CANARY_TEXT, CANARY_VALUE, canary_file, make_hostile, rows
from tests.seed_store import seed
from tests.store_server import StoreServer

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted(p.name for p in (ROOT / "pages").glob("*.py"))
REFUSED_OBJECTS = ("macro coalesce_title (not Faultline's); macro lower (not Faultline's); table analyses (missing); "
                   "table analyses_real (not Faultline's); table latest_labels (missing); table latest_labels_real "
                   "(not Faultline's); table reviews (changed); view analyses (not Faultline's); view failures "
                   "(changed); view host_env (not Faultline's); view latest_labels (not Faultline's); view outcomes "
                   "(changed)")


def _leaks(text: str) -> list[str]:
    return [c for c in (CANARY_TEXT, CANARY_VALUE) if c in text]


@pytest.fixture
def hostile(tmp_path) -> Path:
    return make_hostile(tmp_path / "published.duckdb", canary_file(tmp_path))


@pytest.fixture
def canary_env(monkeypatch) -> dict:
    monkeypatch.setenv(CANARY_ENV, CANARY_VALUE)
    return {**os.environ, CANARY_ENV: CANARY_VALUE}


def _store_text(db: Path) -> str:
    """Every value of every table of a store, as text (read with external access off)."""
    con = trust.connect(str(db), read_only=True)
    try:
        out = []
        for (table,) in con.execute("SELECT table_name FROM duckdb_tables() WHERE database_name = current_database()"
                                    ).fetchall():
            out.append(repr(con.execute(f'SELECT * FROM "{table}"').fetchall()))
        out.append(repr(con.execute("SELECT sql FROM duckdb_views() WHERE NOT internal").fetchall()))
        return "\n".join(out)
    finally:
        con.close()


# ------------------------------------------------------------------ the connection itself


def test_a_store_connection_reaches_no_file_and_cannot_be_unlocked(hostile, tmp_path):
    """The first wall, without the schema check: every view and macro that reads the host fails."""
    con = trust.connect(str(hostile), read_only=True)
    try:
        for sql in ("SELECT output_text FROM outcomes", "SELECT error_title FROM failures",
                    "SELECT error_title FROM latest_labels", "SELECT lower('x')",
                    f"SELECT * FROM read_text('{tmp_path / 'host-secret.txt'}')"):
            with pytest.raises(duckdb.PermissionException, match="file system operations are disabled") as err:
                con.execute(sql).fetchall()
            assert not _leaks(str(err.value))
        for sql in ("SET enable_external_access = true", "SET lock_configuration = false",
                    "SET allowed_directories = ['/']", "RESET enable_external_access"):
            with pytest.raises(duckdb.Error, match="locked|Cannot enable external access"):
                con.execute(sql)
        with pytest.raises(duckdb.Error):
            con.execute(f"ATTACH '{tmp_path / 'other.duckdb'}' AS other")
        with pytest.raises(duckdb.Error):
            con.execute("INSTALL httpfs")
        with pytest.raises(duckdb.Error):
            con.execute("LOAD httpfs")
        assert con.execute("SELECT current_setting('enable_external_access')").fetchone() == (False,)
    finally:
        con.close()


def _every_page_refuses_it(at) -> None:
    """Every page of the app `at` opens says the store is refused, with no leak and no exception."""
    at.run()
    for page in [None, *PAGES]:
        if page is not None:
            at.switch_page(f"pages/{page}")
            at.run()
        assert not _leaks(_page_text(at)), page
        assert not at.exception, page
        assert any("refused: this store" in e.value for e in at.error), page


def _refusals(path) -> list[str]:
    """What reading and writing the store at `path` refuse it with (each must refuse it)."""
    from store import UntrustedStoreError, read_connection, write_session

    said = []
    for opener in (read_connection, write_session):
        with pytest.raises(UntrustedStoreError) as err:
            with opener(path):
                pass
        said.append(str(err.value))
    return said


def test_a_hostile_store_is_refused_naming_each_object(hostile):
    for said in _refusals(hostile):
        assert f"{hostile}: refused: this store's schema is not the one Faultline creates ({REFUSED_OBJECTS})" in said
        assert not _leaks(said)


def test_an_untouched_store_of_every_vintage_is_accepted(tmp_path):
    """What the migrations themselves write, at each step, passes (the check follows the code)."""
    from store.migrations import MIGRATIONS
    from store.trust import SCHEMA_MIGRATIONS_DDL

    for n in range(1, len(MIGRATIONS) + 1):
        db = tmp_path / f"v{n}.duckdb"
        con = duckdb.connect(str(db))
        con.execute(SCHEMA_MIGRATIONS_DDL)
        finish = []
        for i, (name, step) in enumerate(MIGRATIONS[:n], start=1):
            # a step is SQL or a function of the connection (which may leave work for the end)
            if isinstance(step, str):
                con.execute(step)
            elif (then := step(con)) is not None:
                finish.append(then)
            con.execute("INSERT INTO schema_migrations VALUES (?, ?, now())", [i, name])
        for then in finish:
            then(con)
        con.close()
        con = trust.connect(str(db), read_only=True)
        try:
            trust.check_catalog(con, str(db), [name for name, _ in MIGRATIONS[:n]])
        finally:
            con.close()


def test_a_store_no_migration_touched_must_hold_nothing(tmp_path):
    """The reference for a store recording no migration is taken as empty without building it
    (an ingest into a new store pays nothing for it): it is what an empty database holds, and a
    file that records no migration but holds an object of its own is still refused."""
    con = duckdb.connect(":memory:", config=trust.OPEN_CONFIG)
    try:
        assert trust.catalog(con, con.execute("SELECT current_database()").fetchone()[0]) == {}
    finally:
        con.close()
    assert trust.reference([]) == {}

    from store import UntrustedStoreError, write_session

    db = tmp_path / "bare.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE MACRO lower(x) AS 'owned'")
    con.close()
    with pytest.raises(UntrustedStoreError, match=r"\(macro lower \(not Faultline's\)\)"):
        with write_session(db):
            pass


def test_object_names_the_store_chose_are_repeated_only_when_plain(tmp_path):
    """A refusal is shown on pages as Markdown: a name like a link is not repeated."""
    from store import UntrustedStoreError, read_connection

    db = tmp_path / "s.duckdb"
    seed(db, rows())
    con = duckdb.connect(str(db))
    con.execute('CREATE VIEW "[click](http://127.0.0.1:9/x)" AS SELECT 1 AS x')
    con.close()
    with pytest.raises(UntrustedStoreError) as err:
        with read_connection(db):
            pass
    shown = f"(view <a name of {len('[click](http://127.0.0.1:9/x)')} characters, not a plain identifier> (not Faultline's))"
    assert shown in str(err.value)
    assert "127.0.0.1" not in str(err.value)


def test_one_changed_view_is_refused(tmp_path):
    """The smallest change: the outcomes view filtering out a model's failures."""
    from store import UntrustedStoreError, read_connection

    db = tmp_path / "s.duckdb"
    seed(db, rows())
    con = duckdb.connect(str(db))
    sql = con.execute("SELECT sql FROM duckdb_views() WHERE view_name = 'outcomes'").fetchone()[0]
    con.execute(sql.replace("CREATE VIEW", "CREATE OR REPLACE VIEW").rstrip(";") + " WHERE p.is_correct")
    con.close()
    with pytest.raises(UntrustedStoreError, match=r"\(view outcomes \(changed\)\)"):
        with read_connection(db):
            pass


# ------------------------------------------------------------------ commands


def test_commands_on_a_hostile_store_leak_nothing(hostile, tmp_path, canary_env):
    report = tmp_path / "report.html"
    runs = {
        "stats accuracy": run_module("stats", "accuracy", "--json", "--db", hostile, env=canary_env),
        "stats compare": run_module("stats", "compare", A, B, "--db", hostile, env=canary_env),
        "stats report": run_module("stats", "report", "--db", hostile, "--out", report, env=canary_env),
        "ingest export": run_module("ingest", "export", "--format", "eee", "--out", tmp_path / "eee", "--db", hostile,
                                    env=canary_env),
        "taxonomy analyze": run_module("taxonomy", "analyze", "--db", hostile, "--analyst", "offline", env=canary_env),
        "ingest --migrate": run_module("ingest", "--migrate", hostile, env=canary_env),
    }
    assert {name: _leaks(r.stdout + r.stderr) for name, r in runs.items()} == {name: [] for name in runs}
    for name, r in runs.items():
        assert r.returncode == 2, (name, r.stdout, r.stderr)
        assert "Traceback" not in r.stderr, name
        assert f"refused: this store's schema is not the one Faultline creates ({REFUSED_OBJECTS})" in r.stderr, name
    assert not report.exists()
    assert not (tmp_path / "eee").exists() or not _leaks(
        "".join(p.read_text(errors="replace") for p in (tmp_path / "eee").rglob("*") if p.is_file()))


def test_a_hostile_store_as_a_merge_source_leaks_nothing_into_the_merged_store(hostile, tmp_path, canary_env):
    good = tmp_path / "good.duckdb"
    seed(good, rows(), run_tag="g")
    target = tmp_path / "merged.duckdb"
    seed(target, rows(), run_tag="t")
    before = hashlib.sha256(target.read_bytes()).hexdigest()
    r = run_module("ingest", "merge", good, hostile, "--db", target, env=canary_env)
    assert not _leaks(_store_text(target))  # the unchecked merge copied the host's file into every analysis
    assert r.returncode == 2, r.stdout + r.stderr
    assert f"{hostile}: refused: this store's schema is not the one Faultline creates ({REFUSED_OBJECTS})" in r.stderr
    assert not _leaks(r.stdout + r.stderr) and "Traceback" not in r.stderr
    assert hashlib.sha256(target.read_bytes()).hexdigest() == before  # all or nothing: untouched
    # into a new store: none is left behind
    fresh = tmp_path / "new.duckdb"
    r = run_module("ingest", "merge", hostile, "--db", fresh, env=canary_env)
    assert r.returncode == 2 and not fresh.exists() and not _leaks(r.stdout + r.stderr)
    # the good store alone merges
    r = run_module("ingest", "merge", good, "--db", target, env=canary_env)
    assert r.returncode == 0, r.stderr
    assert not _leaks(_store_text(target))


def test_a_merge_never_reads_a_source_it_did_not_check(hostile, tmp_path, monkeypatch, canary_env):
    """The second wall: with the schema check of the sources taken away, the merge's connection
    still reads no file, so nothing of the host can reach the merged store."""
    from store import merge

    target = tmp_path / "merged.duckdb"
    seed(target, rows(), run_tag="t")
    monkeypatch.setattr(merge.trust, "check_catalog", lambda *a, **k: None)
    try:
        merge.merge_stores([hostile], db=target)
    except Exception as exc:  # whatever it says, it says nothing of the host
        assert not _leaks(str(exc))
    assert not _leaks(_store_text(target))


# ------------------------------------------------------------------ pages (AppTest)


def _page_text(at) -> str:
    """Everything an AppTest run put on the page: every element's protobuf, as text."""
    out = []

    def walk(node):
        proto = getattr(node, "proto", None)
        if proto is not None:
            out.append(str(proto))
        for child in getattr(node, "children", {}).values():
            walk(child)

    walk(at._tree)
    for frame in at.dataframe:
        out.append(frame.value.to_csv())
    return "\n".join(out)


@pytest.mark.parametrize("read_only", [False, True])
def test_pages_on_a_hostile_store_leak_nothing_and_say_why(hostile, monkeypatch, canary_env, read_only):
    monkeypatch.setenv("FAULTLINE_READ_ONLY", "1" if read_only else "0")
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("FAULTLINE_DB", str(hostile))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.query_params.update({"a": A, "b": B, "instance": "ds:q0", "category": "Reasoning Error"})
    at.run()
    seen = {}
    for page in [None, *PAGES]:
        if page is not None:
            at.switch_page(f"pages/{page}")
            at.run()
        seen[page] = (_page_text(at), [e.value for e in at.error], bool(at.exception),
                      bool(at.dataframe or at.metric))
    assert {page: _leaks(text) for page, (text, *_) in seen.items()} == {page: [] for page in seen}
    for page, (_, errors, exception, data) in seen.items():
        assert not exception, page
        assert len(errors) == 1 and "refused: this store's schema is not the one Faultline creates" in errors[0], page
        assert REFUSED_OBJECTS.replace("'", "\u2019") in errors[0] or REFUSED_OBJECTS in errors[0], page
        assert (str(hostile.parent) in errors[0]) is not read_only, page  # no server path on a public page
        assert not data, page


# ------------------------------------------------------------------ a store at a URL


def _env(tmp_path: Path, canary_env: dict, **extra) -> dict:
    env = {k: v for k, v in canary_env.items() if not k.startswith(("AWS_", "HF_", "FAULTLINE_"))}
    return {**env, "FAULTLINE_CACHE_DIR": str(tmp_path / "cache"), CANARY_ENV: CANARY_VALUE, **extra}


def test_a_hostile_store_at_a_url_is_refused_and_never_replaces_the_verified_copy(hostile, tmp_path, canary_env):
    good = tmp_path / "good.duckdb"
    seed(good, rows())
    env = _env(tmp_path, canary_env, FAULTLINE_REMOTE_TTL="0")
    with StoreServer({"/s.duckdb": hostile.read_bytes()}) as srv:
        url = srv.url("/s.duckdb")
        first = run_module("stats", "accuracy", "--json", "--db", url, env=env)
        assert first.returncode == 2
        assert first.stderr == (f"error: {url}: refused: this store's schema is not the one Faultline creates "
                                f"({REFUSED_OBJECTS}). A store is read as untrusted input: its views, macros and "
                                "column definitions run as SQL when it is read, so only Faultline's own are accepted "
                                "(docs/reliability.md#a-store-is-untrusted-input). Rebuild it with `python -m ingest`, "
                                "or export the runs you need and ingest them.\n")
        assert not [p for p in (tmp_path / "cache").iterdir() if p.suffix in (".duckdb", ".wal")]
        # a good store, then the hostile one published in its place: the verified copy stays
        srv.put("/s.duckdb", good.read_bytes())
        ok = run_module("stats", "accuracy", "--json", "--db", url, env=env)
        assert ok.returncode == 0, ok.stderr
        copy = next(p for p in (tmp_path / "cache").iterdir() if p.suffix == ".duckdb")
        kept = hashlib.sha256(copy.read_bytes()).hexdigest()
        srv.put("/s.duckdb", hostile.read_bytes())
        again = run_module("stats", "accuracy", "--json", "--db", url, env=env)
        assert again.returncode == 0, again.stderr
        assert again.stdout == ok.stdout
        assert f"note: {url}: the file now published was refused (refused: this store's schema" in again.stderr
        assert hashlib.sha256(copy.read_bytes()).hexdigest() == kept
        assert not _leaks(first.stdout + first.stderr + ok.stdout + again.stdout + again.stderr)
        assert not _leaks(_store_text(copy))


def test_pages_on_a_hostile_store_at_a_url_leak_nothing(hostile, tmp_path, monkeypatch, canary_env):
    from streamlit.testing.v1 import AppTest

    from store import remote

    remote._memo.clear()
    monkeypatch.setenv("FAULTLINE_CACHE_DIR", str(tmp_path / "cache"))
    with StoreServer({"/s.duckdb": hostile.read_bytes()}) as srv:
        monkeypatch.setenv("FAULTLINE_DB", srv.url("/s.duckdb"))
        _every_page_refuses_it(AppTest.from_file(str(ROOT / "app.py"), default_timeout=60))
    remote._memo.clear()


# ------------------------------------------------------------------ pages in a real browser


@pytest.mark.browser
@pytest.mark.skipif(not Path("/usr/bin/chromium").exists() and os.environ.get("CI") != "true",
                    reason="Debian chromium is not installed (apt-get install chromium)")
def test_untrusted_store_browser(hostile, tmp_path, canary_env):
    """`streamlit run` on the hostile store, with the canary in the server's environment (so in
    its /proc/self/environ): no page shows either canary; each says the store was refused."""
    from urllib.parse import urlencode

    from browser_kit import chromium, settled, streamlit_app

    env = {**canary_env, "FAULTLINE_DB": str(hostile), "FAULTLINE_READ_ONLY": "1"}
    params = urlencode({"a": A, "b": B, "instance": "ds:q0", "category": "Reasoning Error"})
    with streamlit_app(ROOT, env, tmp_path / "streamlit.log") as base, chromium() as browser:
        page = browser.new_page()
        seen = {}
        for path in ["/", *(f"/{p[:-3]}" for p in PAGES)]:
            page.goto(f"{base}{path}?{params}")
            settled(page)
            seen[path] = (page.content(), page.inner_text("[data-testid='stMain']"),
                          page.locator("[data-testid='stException']").count())
    assert {path: _leaks(html) for path, (html, *_) in seen.items()} == {path: [] for path in seen}
    for path, (_, body, exceptions) in seen.items():
        assert exceptions == 0, path
        assert "refused: this store\u2019s schema is not the one Faultline creates" in body.replace("'", "\u2019"), path
        assert str(tmp_path) not in body, path  # read-only: no server path
    assert not _leaks((tmp_path / "streamlit.log").read_text())


# ------------------------------------------------------------------ a store that unlocks its own connection (issue 38)

UNLOCKING_OBJECTS = ("macro current_setting (not Faultline's); macro duckdb_functions (not Faultline's); "
                     "macro duckdb_tables (not Faultline's); macro duckdb_views (not Faultline's)")


@pytest.fixture
def unlocking(tmp_path) -> Path:
    from tests.hostile_store import make_unlocking

    return make_unlocking(tmp_path / "unlocking.duckdb", canary_file(tmp_path))


def test_the_unlocking_store_fools_checks_made_through_its_own_names(unlocking, canary_env):
    """What the store does to a connection that asks it (the fixture is as hostile as issue 38
    says): it claims the configuration is locked, hides its objects from the catalog functions
    called by their plain names, and its views read the host once external access is on."""
    con = duckdb.connect(str(unlocking), read_only=True)
    try:
        assert con.execute("SELECT current_setting('lock_configuration')").fetchall() == [(True,)]
        assert con.execute("SELECT current_setting('enable_external_access')").fetchall() == [(None,)]
        assert con.execute("SELECT count(*) FROM duckdb_functions() WHERE NOT internal").fetchall() == [(0,)]
        hidden = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        assert "zz_runs" not in hidden and "runs" in hidden
        assert _leaks(" ".join(r[0] for r in con.execute("SELECT model FROM runs").fetchall()))
    finally:
        con.close()


def test_the_unlocking_store_is_refused_naming_its_macros(unlocking):
    for said in _refusals(unlocking):
        assert UNLOCKING_OBJECTS in said
        assert ("table runs (missing); table zz_analyses (not Faultline's); table zz_latest_labels (not Faultline's); "
                "table zz_predictions (not Faultline's); table zz_runs (not Faultline's); and 6 more)") in said
        assert not _leaks(said)


def test_a_store_connection_is_locked_whatever_the_store_answers(unlocking, tmp_path):
    """The first wall alone: the restrictions are in the connection's configuration from the
    start and read back by DuckDB's own functions, so a store's `current_setting` changes nothing."""
    con = trust.connect(str(unlocking), read_only=True)
    try:
        assert trust.setting(con, "enable_external_access") is False
        assert trust.setting(con, "lock_configuration") is True
        assert con.execute("SELECT current_setting('lock_configuration')").fetchall() == [(True,)]  # the store's
        for sql in ("SELECT model FROM runs", "SELECT output_text FROM outcomes",
                    f"SELECT * FROM read_text('{tmp_path / 'host-secret.txt'}')"):
            with pytest.raises(duckdb.PermissionException, match="file system operations are disabled") as err:
                con.execute(sql).fetchall()
            assert not _leaks(str(err.value))
        with pytest.raises(duckdb.Error, match="locked"):
            con.execute("SET enable_external_access = true")
    finally:
        con.close()
    # a second connection of the process to the same file shares the locked database
    first, second = trust.connect(str(unlocking), read_only=True), trust.connect(str(unlocking), read_only=True)
    try:
        assert trust.setting(second, "enable_external_access") is False
    finally:
        first.close()
        second.close()


def test_allow_lists_are_set_without_calling_anything_the_store_defines(tmp_path):
    """`SET allowed_paths = [...]` evaluates its list through `list_value`, which a store's macro
    can shadow (to allow '/'): the paths are given as a parameter and read back."""
    db = tmp_path / "lists.duckdb"
    seed(db, rows())
    con = duckdb.connect(str(db))
    con.execute("CREATE MACRO list_value(a) AS ['/'], (a, b) AS ['/']")
    con.close()
    other = tmp_path / "other.duckdb"
    con = trust.connect(str(db), read_only=True, allowed_paths=[str(other), f"{other}.wal"])
    try:
        assert set(trust.setting(con, "allowed_paths")) >= {str(other), f"{other}.wal"}
        assert "/" not in trust.setting(con, "allowed_paths")
        assert not [d for d in trust.setting(con, "allowed_directories") if d.rstrip("/") in ("", str(tmp_path))]
        with pytest.raises(duckdb.PermissionException):
            con.execute(f"SELECT * FROM read_text('{tmp_path / 'host-secret.txt'}')").fetchall()
    finally:
        con.close()


def test_commands_mcp_and_pages_on_the_unlocking_store_leak_nothing(unlocking, tmp_path, monkeypatch, canary_env):
    from mcp_session import session
    from streamlit.testing.v1 import AppTest

    from mcp_server.answers import Settings
    from mcp_server.server import build_server

    report = tmp_path / "report.html"
    runs = {
        "stats accuracy": run_module("stats", "accuracy", "--json", "--db", unlocking, env=canary_env),
        "stats compare": run_module("stats", "compare", A, B, "--json", "--db", unlocking, env=canary_env),
        "stats report": run_module("stats", "report", "--db", unlocking, "--out", report, env=canary_env),
        "taxonomy analyze": run_module("taxonomy", "analyze", "--db", unlocking, "--analyst", "offline", env=canary_env),
        "ingest --migrate": run_module("ingest", "--migrate", unlocking, env=canary_env),
    }
    assert {name: _leaks(r.stdout + r.stderr) for name, r in runs.items()} == {name: [] for name in runs}
    for name, r in runs.items():
        assert r.returncode == 2 and "Traceback" not in r.stderr, (name, r.stderr)
        assert UNLOCKING_OBJECTS in r.stderr, name
    assert not report.exists()
    # MCP: every tool answers with the refusal, nothing of the host
    calls = [("loaded", {}), ("results", {}), ("compare", {"a": A, "b": B}), ("failures", {}),
             ("question", {"dataset": "ds", "instance_id": "q0"}), ("suspects", {})]
    answers = session(build_server(Settings(db=str(unlocking), base_url="http://localhost:8501")), calls)
    assert [_leaks(text) for text, _ in answers] == [[]] * len(calls)
    assert all(is_error and "refused: this store" in text for text, is_error in answers), answers
    # the pages of a read-only hosted dashboard
    monkeypatch.setenv("FAULTLINE_READ_ONLY", "1")
    monkeypatch.setenv("FAULTLINE_DB", str(unlocking))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.query_params.update({"a": A, "b": B})
    _every_page_refuses_it(at)


def test_a_generated_column_in_the_migrations_table_never_runs(tmp_path, canary_env):
    """schema_migrations is the first table read: its definition is checked before its rows are,
    so its generated `name` (the host's temp folder) is never computed nor shown."""
    from tests.hostile_store import make_generated_migrations

    db = make_generated_migrations(tmp_path / "generated.duckdb")
    temp_folder = f"{db}.tmp"
    for args in (("stats", "accuracy", "--json", "--db", db), ("ingest", "--migrate", db),
                 ("ingest", "merge", db, "--db", tmp_path / "merged.duckdb")):
        r = run_module(*args, env=canary_env)
        assert r.returncode == 2 and "Traceback" not in r.stderr, (args, r.stderr)
        assert "table schema_migrations (changed)" in r.stderr, (args, r.stderr)
        assert temp_folder not in r.stdout + r.stderr and ".tmp" not in r.stderr.replace(str(db), ""), r.stderr
    assert not (tmp_path / "merged.duckdb").exists()
