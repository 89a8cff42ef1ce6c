"""A store at a URL whose server misbehaves (issue 27): it trickles bytes, never answers, cuts
the body short, answers with a web page, redirects in a loop, or publishes a damaged file. A
download has a total deadline, runs outside anything a page waits on, is verified in full (and
against a published checksum), and one that fails never replaces the verified copy; pages show
that copy and how old it is."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from pathlib import Path

import pytest

from store import remote
from tests.store_server import StoreServer
from tests.test_remote_store import _accuracy, _env, _rows, _store

ROOT = Path(__file__).resolve().parent.parent


def trickle(data: bytes, every: float, size: int = 1):
    """200 with the full Content-Length, then `size` bytes every `every` seconds."""
    def answer(h):
        h.send_response(200)
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        for i in range(0, len(data), size):
            h.wfile.write(data[i:i + size])
            h.wfile.flush()
            time.sleep(every)
    return answer


def silent(h):
    time.sleep(30)  # accepts, reads the request, never answers


def cut_short(data: bytes):
    def answer(h):
        h.send_response(200)
        h.send_header("Connection", "close")  # no Content-Length: the end of the body is the close
        h.end_headers()
        h.wfile.write(data[: len(data) // 2])
        h.close_connection = True
    return answer


def served(data: bytes, headers: dict):
    def answer(h):
        h.send_response(200)
        h.send_header("Content-Length", str(len(data)))
        for k, v in headers.items():
            h.send_header(k, v)
        h.end_headers()
        h.wfile.write(data)
    return answer


def loop(h):
    h.send_response(302)
    h.send_header("Location", h.path)
    h.send_header("Content-Length", "0")
    h.end_headers()


def _copies(tmp_path: Path) -> list[Path]:
    folder = tmp_path / "cache"
    return sorted(p for p in folder.iterdir() if p.suffix == ".duckdb") if folder.exists() else []


def _damaged(good: bytes) -> bytes:
    """The store with one byte flipped in a data block (every block carries a checksum)."""
    data = bytearray(good)
    offset = 3 * 4096 + 2 * 262144 + 1000  # inside the third block after the headers
    assert len(data) > offset
    data[offset] ^= 0xFF
    return bytes(data)


@pytest.fixture
def store_bytes(tmp_path) -> bytes:
    return _store(tmp_path / "published.duckdb", _rows(3000, 3))


def test_a_trickling_server_cannot_hold_a_command_past_the_deadline(tmp_path, store_bytes):
    env = _env(tmp_path, FAULTLINE_REMOTE_DEADLINE="3", FAULTLINE_REMOTE_TIMEOUT="60")
    with StoreServer() as srv:
        srv.special["/s.duckdb"] = trickle(store_bytes, 0.2)
        url = srv.url("/s.duckdb")
        started = time.monotonic()
        r = _accuracy(url, env)
        took = time.monotonic() - started
    assert r.returncode == 2 and took < 20, (took, r.stderr)
    assert r.stderr.startswith(f"error: {url}: cannot read the store: the download took longer than 3 s "
                               "(FAULTLINE_REMOTE_DEADLINE) and was stopped after ")
    assert f"of {len(store_bytes):,} bytes, and there is no earlier verified copy" in r.stderr
    assert "Traceback" not in r.stderr and _copies(tmp_path) == []
    assert not [p for p in (tmp_path / "cache").iterdir() if p.name.startswith(".part-")]


def test_a_stalled_download_stops_and_the_verified_copy_is_used(tmp_path, store_bytes):
    env = _env(tmp_path, FAULTLINE_REMOTE_TIMEOUT="1", FAULTLINE_REMOTE_TTL="0")
    with StoreServer({"/s.duckdb": store_bytes}) as srv:
        url = srv.url("/s.duckdb")
        good = _accuracy(url, env)
        assert good.returncode == 0, good.stderr
        srv.special["/s.duckdb"] = trickle(store_bytes, 0.1)
        started = time.monotonic()
        r = _accuracy(url, env)
        took = time.monotonic() - started
    assert r.returncode == 0 and took < 15, (took, r.stderr)
    assert r.stdout == good.stdout
    assert f"note: {url}: the download stalled: " in r.stderr
    assert "FAULTLINE_REMOTE_TIMEOUT); showing the copy fetched" in r.stderr


def test_a_trickling_server_cannot_hold_a_page_past_the_query_deadline(tmp_path, monkeypatch, store_bytes):
    """No copy yet: the page says the store is still downloading once its query deadline has
    passed; with a verified copy: the page shows it at once, says how old it is, and that a
    newer one has been downloading for a while (slow or stuck)."""
    from streamlit.testing.v1 import AppTest

    remote._memo.clear()
    monkeypatch.setenv("FAULTLINE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("FAULTLINE_QUERY_TIMEOUT", "3")
    monkeypatch.setenv("FAULTLINE_REMOTE_TIMEOUT", "60")
    monkeypatch.setenv("FAULTLINE_REMOTE_DEADLINE", "60")
    with StoreServer() as srv:
        srv.special["/s.duckdb"] = trickle(store_bytes, 0.05)
        monkeypatch.setenv("FAULTLINE_DB", srv.url("/s.duckdb"))
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
        started = time.monotonic()
        at.run()
        took = time.monotonic() - started
        assert took < 3 + 10, took
        assert not at.exception
        errors = [e.value for e in at.error]
        assert len(errors) == 1 and "the store is still being downloaded (running for " in errors[0], errors
        assert "reload this page in a moment" in errors[0]
    remote._memo.clear()
    remote._running.clear()


def test_pages_show_the_verified_copy_and_its_age_while_a_newer_one_trickles(tmp_path, monkeypatch, store_bytes):
    from streamlit.testing.v1 import AppTest

    remote._memo.clear()
    monkeypatch.setenv("FAULTLINE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("FAULTLINE_REMOTE_TTL", "0")
    monkeypatch.setenv("FAULTLINE_REMOTE_TIMEOUT", "1")  # past this a running fetch is called slow or stuck
    monkeypatch.setenv("FAULTLINE_REMOTE_DEADLINE", "60")
    with StoreServer({"/s.duckdb": store_bytes}) as srv:
        url = srv.url("/s.duckdb")
        good = _accuracy(url, _env(tmp_path))
        assert good.returncode == 0, good.stderr
        # fast enough not to count as stalled (64 KiB a second), slow enough to take a while
        srv.special["/s.duckdb"] = trickle(store_bytes, 0.5, size=48 * 1024)
        monkeypatch.setenv("FAULTLINE_DB", url)
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
        started = time.monotonic()
        at.run()
        assert time.monotonic() - started < 15
        assert not at.exception and not at.error
        assert {m.label: m.value for m in at.metric}["Predictions"] == "3,000"
        time.sleep(1.5)
        at.run()
        # as the page shows it (Markdown escapes taken out)
        warning = " ".join(w.value for w in at.warning).replace("\\", "").replace("\u200b", "")
        assert f"{url}: checking for a newer copy (running for" in warning
        assert "slow or stuck: it is stopped at 60 s (FAULTLINE_REMOTE_DEADLINE)" in warning
        assert "showing the verified copy fetched" in warning and "s ago" in warning
        assert {m.label: m.value for m in at.metric}["Predictions"] == "3,000"
    remote._memo.clear()
    remote._running.clear()


def test_a_server_that_never_answers_does_not_hold_a_page(tmp_path, monkeypatch, store_bytes):
    from streamlit.testing.v1 import AppTest

    remote._memo.clear()
    monkeypatch.setenv("FAULTLINE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("FAULTLINE_REMOTE_TTL", "0")
    with StoreServer({"/s.duckdb": store_bytes}) as srv:
        url = srv.url("/s.duckdb")
        assert _accuracy(url, _env(tmp_path)).returncode == 0
        srv.special["/s.duckdb"] = silent
        monkeypatch.setenv("FAULTLINE_DB", url)
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
        started = time.monotonic()
        at.run()
        assert time.monotonic() - started < 10  # the unfixed page waited the 30 s socket timeout
        assert not at.exception and {m.label: m.value for m in at.metric}["Predictions"] == "3,000"
    remote._memo.clear()
    remote._running.clear()


@pytest.mark.parametrize("answer", ["damaged", "cut short", "web page", "wrong checksum", "wrong digest header"])
def test_a_bad_download_never_replaces_the_verified_copy(tmp_path, store_bytes, answer):
    env = _env(tmp_path, FAULTLINE_REMOTE_TTL="0")
    other = _store(tmp_path / "other.duckdb", _rows(3000, 2))
    bad = {"damaged": lambda: served(_damaged(other), {}),
           "cut short": lambda: cut_short(other),
           "web page": lambda: served(b"<!DOCTYPE html><html>sign in</html>", {"Content-Type": "text/html; charset=utf-8"}),
           "wrong checksum": lambda: served(other, {}),
           "wrong digest header": lambda: served(other, {"Repr-Digest": "sha-256=:" + "A" * 43 + "=:"})}[answer]
    with StoreServer({"/s.duckdb": store_bytes}) as srv:
        url = srv.url("/s.duckdb")
        pinned = url + "#sha256=" + hashlib.sha256(store_bytes).hexdigest() if answer == "wrong checksum" else url
        good = _accuracy(pinned, env)
        assert good.returncode == 0, good.stderr
        (copy,) = _copies(tmp_path)
        kept = hashlib.sha256(copy.read_bytes()).hexdigest()
        srv.special["/s.duckdb"] = bad()
        r = _accuracy(pinned, env)
        assert r.returncode == 0, r.stderr
        assert r.stdout == good.stdout  # the verified copy's numbers, not the bad file's
        assert hashlib.sha256(copy.read_bytes()).hexdigest() == kept and _copies(tmp_path) == [copy]
        note = r.stderr.splitlines()[0]
        expected = {
            "damaged": "the file now published was refused (the file is damaged: DuckDB cannot read all of it (",
            "cut short": "the file now published was refused (",
            "web page": "the server answered with a web page (text/html), not the store file",
            "wrong checksum": "the file now published was refused (the downloaded file does not match the sha256 "
                              "checksum given by the URL's #sha256=",
            "wrong digest header": "the file now published was refused (the downloaded file does not match the sha256 "
                                   "checksum given by the server's Repr-Digest header",
        }[answer]
        assert note.startswith(f"note: {url}: {expected}"), note
        assert "Traceback" not in r.stderr and "showing the" in note
        # without a verified copy, the same answer is refused with the same reason
        shutil.rmtree(tmp_path / "cache")
        fresh = _accuracy(pinned, env)
    assert fresh.returncode == 2 and "Traceback" not in fresh.stderr and _copies(tmp_path) == []
    assert not [p for p in (tmp_path / "cache").iterdir() if p.name.startswith(".part-")]


def test_a_published_checksum_that_matches_is_accepted(tmp_path, store_bytes):
    import base64

    digest = hashlib.sha256(store_bytes).digest()
    with StoreServer() as srv:
        srv.special["/s.duckdb"] = served(store_bytes, {"x-amz-checksum-sha256": base64.b64encode(digest).decode(),
                                                        "Repr-Digest": f"sha-256=:{base64.b64encode(digest).decode()}:"})
        r = _accuracy(srv.url("/s.duckdb") + "#sha256=" + digest.hex(), _env(tmp_path))
    assert r.returncode == 0, r.stderr
    meta = json.loads(next((tmp_path / "cache").glob("*.source.json")).read_text())
    assert meta["sha256"] == digest.hex()


def test_a_redirect_loop_answers_in_one_line(tmp_path):
    with StoreServer() as srv:
        srv.special["/s.duckdb"] = loop
        r = _accuracy(srv.url("/s.duckdb"), _env(tmp_path))
    assert r.returncode == 2
    assert r.stderr == (f"error: {srv.url('/s.duckdb')}: cannot read the store: the server redirects in a loop or "
                        "nowhere (HTTP 302), and there is no earlier verified copy\n")


def test_parts_of_killed_downloads_are_removed(tmp_path, store_bytes):
    cache = tmp_path / "cache"
    cache.mkdir()
    import subprocess

    proc = subprocess.Popen(["true"])  # its pid is gone once reaped
    proc.wait()
    leftovers = [cache / f".part-{proc.pid}-abc.duckdb", cache / f".part-{proc.pid}-abc.verified.duckdb"]
    for p in leftovers:
        p.write_bytes(b"x" * 1000)
    mine = cache / f".part-{os.getpid()}-live.duckdb"  # a download of a live process stays
    mine.write_bytes(b"y")
    old = cache / ".part-abcd1234.duckdb"  # an unnamed part of an older Faultline, two days old
    old.write_bytes(b"z")
    os.utime(old, (time.time() - 2 * 86400, time.time() - 2 * 86400))
    with StoreServer({"/s.duckdb": store_bytes}) as srv:
        assert _accuracy(srv.url("/s.duckdb"), _env(tmp_path)).returncode == 0
    assert not any(p.exists() for p in leftovers) and not old.exists()
    assert mine.exists()  # removed only by its own process (here: this test's)
    mine.unlink()
