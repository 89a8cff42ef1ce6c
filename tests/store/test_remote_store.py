"""A store at a URL (store/remote.py): `python -m stats accuracy` and the app read a store served
by a real HTTP server on 127.0.0.1 (and a local S3 endpoint, moto's server) and give the figures
of the local file; the copy is revalidated by ETag, refreshed when the file changes, used with a
note when the server is down, refused when there is none; write commands refuse a URL."""

from __future__ import annotations

import json
import os
from pathlib import Path

import duckdb
import pytest
from remote_kit import accuracy_of, graded_rows, remote_env, store_of

from store import remote
from tests.conftest import requires_fixtures, run_module
from tests.s3_server import SETUP_KEYS, reader_key, s3_endpoint
from tests.store_server import StoreServer

ROOT = Path(__file__).resolve().parents[2]


def _cache_files(tmp_path: Path) -> list[str]:
    folder = tmp_path / "cache"
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


@requires_fixtures
def test_accuracy_over_http_equals_the_local_file_and_revalidates_by_etag(mmlu_db, tmp_path):
    env = remote_env(tmp_path)
    local = accuracy_of(str(mmlu_db), env)
    assert local.returncode == 0, local.stderr
    with StoreServer({"/stores/mmlu.duckdb": mmlu_db.read_bytes()}) as srv:
        url = srv.url("/stores/mmlu.duckdb")
        first = accuracy_of(url, env)
        assert first.returncode == 0, first.stderr
        assert json.loads(first.stdout) == json.loads(local.stdout)
        assert len(json.loads(first.stdout)) == 5
        second = accuracy_of(url, env)
        assert json.loads(second.stdout) == json.loads(local.stdout)
        # downloaded once; the second run asked with the ETag and kept its copy
        assert srv.statuses() == [200, 304]
        assert srv.log[1]["headers"]["If-None-Match"] == srv.files["/stores/mmlu.duckdb"][1]
    assert "note:" not in second.stderr


def test_a_changed_file_is_fetched_again(tmp_path):
    v1 = store_of(tmp_path / "v1.duckdb", graded_rows(9, 3))
    v2 = store_of(tmp_path / "v2.duckdb", graded_rows(10, 2))
    env = remote_env(tmp_path)
    with StoreServer({"/s.duckdb": v1}) as srv:
        before = json.loads(accuracy_of(srv.url("/s.duckdb"), env).stdout)
        srv.put("/s.duckdb", v2)
        after = json.loads(accuracy_of(srv.url("/s.duckdb"), env).stdout)
        assert srv.statuses() == [200, 200]
    assert [(r["n"], r["correct"]) for r in before] == [(9, 3)]
    assert [(r["n"], r["correct"]) for r in after] == [(10, 5)]
    # one copy and its record; no part-file left behind
    assert len([f for f in _cache_files(tmp_path) if f.endswith(".duckdb")]) == 1
    assert not [f for f in _cache_files(tmp_path) if f.startswith(".part-")]


def test_in_process_revalidation_waits_for_the_ttl(tmp_path, monkeypatch):
    monkeypatch.setenv("FAULTLINE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("FAULTLINE_REMOTE_TTL", "3600")
    data = store_of(tmp_path / "v1.duckdb", graded_rows(4, 2))
    with StoreServer({"/s.duckdb": data}) as srv:
        url = srv.url("/s.duckdb")
        remote._memo.clear()
        first = remote.local_copy(url)
        assert remote.local_copy(url) == first
        assert srv.statuses() == [200]  # within the TTL no request at all
        monkeypatch.setenv("FAULTLINE_REMOTE_TTL", "0")
        remote.local_copy(url)
        assert srv.statuses() == [200, 304]
    remote._memo.clear()


def test_server_down_uses_the_verified_copy_with_a_note(tmp_path):
    env = remote_env(tmp_path)
    data = store_of(tmp_path / "v1.duckdb", graded_rows(9, 3))
    with StoreServer({"/s.duckdb": data}) as srv:
        url = srv.url("/s.duckdb")
        fresh = accuracy_of(url, env)
    down = accuracy_of(url, env)
    assert down.returncode == 0, down.stderr
    assert json.loads(down.stdout) == json.loads(fresh.stdout)
    assert "could not be reached" in down.stderr and "may be out of date" in down.stderr


def test_server_down_without_a_copy_is_refused(tmp_path):
    with StoreServer({}) as srv:
        url = srv.url("/s.duckdb")
    r = accuracy_of(url, remote_env(tmp_path))
    assert r.returncode == 2
    assert r.stderr.startswith(f"error: {url}: cannot read the store: the server could not be reached")
    assert "no earlier verified copy" in r.stderr and "Traceback" not in r.stderr


def test_refuses_what_is_not_a_faultline_store(tmp_path):
    plain = tmp_path / "plain.duckdb"
    with duckdb.connect(str(plain)) as con:
        con.execute("CREATE TABLE t AS SELECT 1 AS x")
    store_bytes = store_of(tmp_path / "s.duckdb", graded_rows(9, 3))
    files = {"/junk.duckdb": b"<html>not a database</html>" * 10, "/plain.duckdb": plain.read_bytes(),
             "/big.duckdb": store_bytes}
    env = remote_env(tmp_path)
    with StoreServer(files) as srv:
        junk = accuracy_of(srv.url("/junk.duckdb"), env)
        bare = accuracy_of(srv.url("/plain.duckdb"), env)
        big = accuracy_of(srv.url("/big.duckdb"), {**env, "FAULTLINE_REMOTE_MAX_BYTES": "100000"})
        missing = accuracy_of(srv.url("/gone.duckdb"), env)
    assert junk.returncode == bare.returncode == big.returncode == missing.returncode == 2
    assert junk.stderr == (f"error: {srv.url('/junk.duckdb')}: the server sent a web page or XML document, not a "
                           "store file (a login page, an error page or a wrong link?)\n")
    assert "a DuckDB file, but not a Faultline store (no runs, instances, predictions, schema_migrations table)" in bare.stderr
    assert f"the store is {len(store_bytes):,} bytes, over the 100,000-byte limit" in big.stderr
    assert "HTTP 404" in missing.stderr
    for r in (junk, bare, big, missing):
        assert "Traceback" not in r.stderr
    assert [f for f in _cache_files(tmp_path) if f.endswith(".duckdb")] == []


def test_write_commands_refuse_a_url_before_any_download(tmp_path):
    data = store_of(tmp_path / "s.duckdb", graded_rows(9, 3))
    env = remote_env(tmp_path)
    with StoreServer({"/s.duckdb": data}) as srv:
        url = srv.url("/s.duckdb")
        ingest = run_module("ingest", str(tmp_path), "--db", url, env=env)
        analyse = run_module("taxonomy", "analyze", "--analyst", "offline", "--db", url, env=env)
        assert srv.log == []
    for r in (ingest, analyse):
        assert r.returncode == 2, r.stderr
        assert f"{url}: a store at a URL is read-only" in r.stderr and "Traceback" not in r.stderr


def test_a_copy_is_never_written(tmp_path, monkeypatch):
    """The backstop: a write session on the cached copy itself is refused."""
    import store

    monkeypatch.setenv("FAULTLINE_CACHE_DIR", str(tmp_path / "cache"))
    data = store_of(tmp_path / "s.duckdb", graded_rows(3, 2))
    with StoreServer({"/s.duckdb": data}) as srv:
        remote._memo.clear()
        copy = remote.local_copy(srv.url("/s.duckdb"))
    with pytest.raises(remote.RemoteStoreError, match="read-only"):
        with store.write_session(copy):
            pass
    remote._memo.clear()


def test_hf_and_gs_addresses_and_tokens(tmp_path):
    data = store_of(tmp_path / "s.duckdb", graded_rows(9, 3))
    token = "hf_abcdefghijklmnop123456"
    with StoreServer({"/datasets/org/evals/resolve/v2/stores/s.duckdb": data}, auth=f"Bearer {token}") as srv:
        ok = accuracy_of("hf://datasets/org/evals@v2/stores/s.duckdb", remote_env(tmp_path, HF_ENDPOINT=srv.base, HF_TOKEN=token))
        wrong = accuracy_of("hf://datasets/org/evals@v2/stores/s.duckdb",
                          remote_env(tmp_path / "other", HF_ENDPOINT=srv.base, HF_TOKEN="hf_wrongwrongwrong"))
    assert ok.returncode == 0, ok.stderr
    assert [(r["n"], r["correct"]) for r in json.loads(ok.stdout)] == [(9, 3)]
    assert srv.log[0]["path"] == "/datasets/org/evals/resolve/v2/stores/s.duckdb"
    assert wrong.returncode == 2 and "HTTP 401" in wrong.stderr
    assert "hf_wrongwrongwrong" not in wrong.stderr and token not in wrong.stderr

    with StoreServer({"/my-bucket/runs/s.duckdb": data}, auth="Bearer ya29.gcs-token") as srv:
        gs = accuracy_of("gs://my-bucket/runs/s.duckdb",
                       remote_env(tmp_path / "gs", STORAGE_EMULATOR_HOST=srv.base, GOOGLE_OAUTH_ACCESS_TOKEN="ya29.gcs-token"))
    assert gs.returncode == 0, gs.stderr
    assert [(r["n"], r["correct"]) for r in json.loads(gs.stdout)] == [(9, 3)]


def test_address_mapping():
    env = {"HF_ENDPOINT": "", "AWS_ENDPOINT_URL_S3": "", "AWS_ENDPOINT_URL": ""}
    saved = {k: os.environ.pop(k, None) for k in [*env, "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID",
                                                 "AWS_SECRET_ACCESS_KEY", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"]}
    try:
        assert remote.http_request("hf://datasets/o/r/a b/s.duckdb").url == \
            "https://huggingface.co/datasets/o/r/resolve/main/a%20b/s.duckdb"
        assert remote.http_request("hf://o/model/s.duckdb").url == "https://huggingface.co/o/model/resolve/main/s.duckdb"
        assert remote.http_request("s3://bucket/k/s.duckdb").url == "https://bucket.s3.us-east-1.amazonaws.com/k/s.duckdb"
        assert remote.http_request("s3://my.bucket/s.duckdb").url == "https://s3.us-east-1.amazonaws.com/my.bucket/s.duckdb"
        assert remote.http_request("gs://b/k.duckdb").url == "https://storage.googleapis.com/b/k.duckdb"
        with pytest.raises(remote.RemoteStoreError, match="expected s3://BUCKET/KEY"):
            remote.http_request("s3://bucket")
        assert remote.display("https://u:p@host:8/x.duckdb?X-Amz-Signature=abc") == "https://host:8/x.duckdb"
    finally:
        for k, v in saved.items():
            if v is not None:
                os.environ[k] = v


def test_sigv4_signature_equals_botocores():
    from datetime import datetime

    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    url = "http://127.0.0.1:9000/my-bucket/stores/a%20b.duckdb"
    for token in (None, "session-token"):
        req = AWSRequest(method="GET", url=url)
        S3SigV4Auth(Credentials("AKIDEXAMPLE", "SECRETEXAMPLE", token), "s3", "eu-west-1").add_auth(req)
        when = datetime.strptime(req.headers["X-Amz-Date"], "%Y%m%dT%H%M%SZ")
        ours = remote.sigv4_headers("GET", url, "AKIDEXAMPLE", "SECRETEXAMPLE", token, "eu-west-1", when)
        assert ours["Authorization"] == req.headers["Authorization"]


@pytest.fixture
def moto_s3(tmp_path):
    """A bucket holding a store, and a key that may only read it: (endpoint, access key, secret)."""
    import boto3

    with s3_endpoint(tmp_path, unauthenticated=5) as endpoint:
        s3 = boto3.client("s3", endpoint_url=endpoint, **SETUP_KEYS)
        s3.create_bucket(Bucket="faultline")
        s3.put_object(Bucket="faultline", Key="stores/s.duckdb", Body=store_of(tmp_path / "s.duckdb", graded_rows(9, 3)))
        yield (endpoint, *reader_key(endpoint))


def test_s3_endpoint_with_sigv4(moto_s3, tmp_path):
    endpoint, access, secret = moto_s3
    local = accuracy_of(str(tmp_path / "s.duckdb"), remote_env(tmp_path))
    env = remote_env(tmp_path, AWS_ENDPOINT_URL_S3=endpoint, AWS_ACCESS_KEY_ID=access, AWS_SECRET_ACCESS_KEY=secret,
               AWS_REGION="us-east-1")
    ok = accuracy_of("s3://faultline/stores/s.duckdb", env)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout) == json.loads(local.stdout)
    again = accuracy_of("s3://faultline/stores/s.duckdb", env)  # revalidated: moto answers 304
    assert again.returncode == 0 and json.loads(again.stdout) == json.loads(local.stdout)
    bad = accuracy_of("s3://faultline/stores/s.duckdb",
                    remote_env(tmp_path / "bad", AWS_ENDPOINT_URL_S3=endpoint, AWS_ACCESS_KEY_ID=access,
                         AWS_SECRET_ACCESS_KEY="not-the-secret-key-at-all", AWS_REGION="us-east-1"))
    assert bad.returncode == 2 and "HTTP 403" in bad.stderr
    assert "not-the-secret-key-at-all" not in bad.stderr and "Traceback" not in bad.stderr


def test_motherduck_without_its_extension_is_refused(tmp_path):
    r = accuracy_of("md:faultline", remote_env(tmp_path, motherduck_token="secret-md-token"))
    assert r.returncode == 2
    assert r.stderr.startswith("error: md:faultline: a MotherDuck store needs DuckDB's motherduck extension, "
                               "which cannot load here (")
    assert "Traceback" not in r.stderr and "secret-md-token" not in r.stderr


def test_snapshot_copies_an_attached_database(tmp_path):
    """What an md: store does once its extension loads: copy the attached database and verify it
    (shown here with a local file, the one database this machine can attach)."""
    src = tmp_path / "src.duckdb"
    store_of(src, graded_rows(9, 3))
    target = tmp_path / "copy.duckdb"
    remote.snapshot(str(src), target, "md:test")
    with duckdb.connect(str(target), read_only=True) as con:
        assert con.execute("SELECT count(*), count(*) FILTER (is_correct) FROM outcomes").fetchone() == (9, 3)


def _app(monkeypatch, tmp_path, url: str):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("FAULTLINE_DB", url)
    monkeypatch.setenv("FAULTLINE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("FAULTLINE_REMOTE_TTL", "0")
    monkeypatch.delenv("FAULTLINE_READ_ONLY", raising=False)
    remote._memo.clear()
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.run()
    return at


def _metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


@requires_fixtures
def test_app_reads_a_store_at_a_url_read_only(mmlu_db, tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from ui.text import md

    monkeypatch.setenv("FAULTLINE_DB", str(mmlu_db))
    monkeypatch.delenv("FAULTLINE_READ_ONLY", raising=False)
    local = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    local.run()
    with StoreServer({"/mmlu.duckdb": mmlu_db.read_bytes()}) as srv:
        url = srv.url("/mmlu.duckdb")
        at = _app(monkeypatch, tmp_path, url)
        assert not at.exception
        assert _metrics(at) == _metrics(local) and _metrics(at)["Loaded predictions"] == "1,000"
        assert at.dataframe[0].value.equals(local.dataframe[0].value)
        caption = next(c.value for c in at.caption if "Read-only" in c.value)
        assert caption.startswith(":material/cloud_download: Read-only: " + md(f"data from {url} (read-only copy fetched "))
        # read-only: no loader, no analyse button; the local store offers them
        assert not [b for b in at.button if "nalyse" in b.label]
        assert not at.warning
        for page in sorted((ROOT / "pages").glob("*.py")):
            at.switch_page(f"pages/{page.name}")
            at.run()
            assert not at.exception, page.name
            assert any(c.value.startswith(caption[:caption.index("fetched")]) for c in at.caption), page.name
    at = _app(monkeypatch, tmp_path, url)  # the server is down now: the copy, with a warning
    assert not at.exception and _metrics(at) == _metrics(local)
    assert any("could not be reached" in w.value for w in at.warning)


def test_app_without_a_copy_says_why(tmp_path, monkeypatch):
    with StoreServer({}) as srv:
        url = srv.url("/s.duckdb")
    at = _app(monkeypatch, tmp_path, url)
    assert not at.exception
    assert [e.value for e in at.error][0].startswith(f"The store could not be read: {url}: cannot read the store")
    assert not at.metric
