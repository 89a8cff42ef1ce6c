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
from remote_kit import accuracy_of, cut_short, damaged_copy, graded_rows, loop, remote_env, served, silent, store_of, trickle

ROOT = Path(__file__).resolve().parents[2]


def _copies(tmp_path: Path) -> list[Path]:
    folder = tmp_path / "cache"
    return sorted(p for p in folder.iterdir() if p.suffix == ".duckdb") if folder.exists() else []


@pytest.fixture
def store_bytes(tmp_path) -> bytes:
    return store_of(tmp_path / "published.duckdb", graded_rows(3000, 3))


def test_a_trickling_server_cannot_hold_a_command_past_the_deadline(tmp_path, store_bytes):
    env = remote_env(tmp_path, FAULTLINE_REMOTE_DEADLINE="3", FAULTLINE_REMOTE_TIMEOUT="60")
    with StoreServer() as srv:
        srv.special["/s.duckdb"] = trickle(store_bytes, 0.2)
        url = srv.url("/s.duckdb")
        started = time.monotonic()
        r = accuracy_of(url, env)
        took = time.monotonic() - started
    assert r.returncode == 2 and took < 20, (took, r.stderr)
    assert r.stderr.startswith(f"error: {url}: cannot read the store: the download took longer than 3 s "
                               "(FAULTLINE_REMOTE_DEADLINE) and was stopped after ")
    assert f"of {len(store_bytes):,} bytes, and there is no earlier verified copy" in r.stderr
    assert "Traceback" not in r.stderr and _copies(tmp_path) == []
    assert not [p for p in (tmp_path / "cache").iterdir() if p.name.startswith(".part-")]


def test_a_stalled_download_stops_and_the_verified_copy_is_used(tmp_path, store_bytes):
    env = remote_env(tmp_path, FAULTLINE_REMOTE_TIMEOUT="1", FAULTLINE_REMOTE_TTL="0")
    with StoreServer({"/s.duckdb": store_bytes}) as srv:
        url = srv.url("/s.duckdb")
        good = accuracy_of(url, env)
        assert good.returncode == 0, good.stderr
        srv.special["/s.duckdb"] = trickle(store_bytes, 0.1)
        started = time.monotonic()
        r = accuracy_of(url, env)
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
        good = accuracy_of(url, remote_env(tmp_path))
        assert good.returncode == 0, good.stderr
        # fast enough not to count as stalled (64 KiB a second), slow enough to take a while
        srv.special["/s.duckdb"] = trickle(store_bytes, 0.5, size=48 * 1024)
        monkeypatch.setenv("FAULTLINE_DB", url)
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
        started = time.monotonic()
        at.run()
        assert time.monotonic() - started < 15
        assert not at.exception and not at.error
        assert {m.label: m.value for m in at.metric}["Loaded predictions"] == "3,000"
        time.sleep(1.5)
        at.run()
        # as the page shows it (Markdown escapes taken out)
        warning = " ".join(w.value for w in at.warning).replace("\\", "").replace("\u200b", "")
        assert f"{url}: checking for a newer copy (running for" in warning
        assert "slow or stuck: it is stopped at 60 s (FAULTLINE_REMOTE_DEADLINE)" in warning
        assert "showing the verified copy fetched" in warning and "s ago" in warning
        assert {m.label: m.value for m in at.metric}["Loaded predictions"] == "3,000"
    remote._memo.clear()
    remote._running.clear()


def test_a_server_that_never_answers_does_not_hold_a_page(tmp_path, monkeypatch, store_bytes):
    from streamlit.testing.v1 import AppTest

    remote._memo.clear()
    monkeypatch.setenv("FAULTLINE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("FAULTLINE_REMOTE_TTL", "0")
    with StoreServer({"/s.duckdb": store_bytes}) as srv:
        url = srv.url("/s.duckdb")
        assert accuracy_of(url, remote_env(tmp_path)).returncode == 0
        srv.special["/s.duckdb"] = silent
        monkeypatch.setenv("FAULTLINE_DB", url)
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
        started = time.monotonic()
        at.run()
        assert time.monotonic() - started < 10  # the unfixed page waited the 30 s socket timeout
        assert not at.exception and {m.label: m.value for m in at.metric}["Loaded predictions"] == "3,000"
    remote._memo.clear()
    remote._running.clear()


@pytest.mark.parametrize("answer", ["damaged", "cut short", "web page", "wrong checksum", "wrong digest header"])
def test_a_bad_download_never_replaces_the_verified_copy(tmp_path, store_bytes, answer):
    env = remote_env(tmp_path, FAULTLINE_REMOTE_TTL="0")
    other = store_of(tmp_path / "other.duckdb", graded_rows(3000, 2))
    bad = {"damaged": lambda: served(damaged_copy(other), {}),
           "cut short": lambda: cut_short(other),
           "web page": lambda: served(b"<!DOCTYPE html><html>sign in</html>", {"Content-Type": "text/html; charset=utf-8"}),
           "wrong checksum": lambda: served(other, {}),
           "wrong digest header": lambda: served(other, {"Repr-Digest": "sha-256=:" + "A" * 43 + "=:"})}[answer]
    with StoreServer({"/s.duckdb": store_bytes}) as srv:
        url = srv.url("/s.duckdb")
        pinned = url + "#sha256=" + hashlib.sha256(store_bytes).hexdigest() if answer == "wrong checksum" else url
        good = accuracy_of(pinned, env)
        assert good.returncode == 0, good.stderr
        (copy,) = _copies(tmp_path)
        kept = hashlib.sha256(copy.read_bytes()).hexdigest()
        srv.special["/s.duckdb"] = bad()
        r = accuracy_of(pinned, env)
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
        fresh = accuracy_of(pinned, env)
    assert fresh.returncode == 2 and "Traceback" not in fresh.stderr and _copies(tmp_path) == []
    assert not [p for p in (tmp_path / "cache").iterdir() if p.name.startswith(".part-")]


def test_a_published_checksum_that_matches_is_accepted(tmp_path, store_bytes):
    import base64

    digest = hashlib.sha256(store_bytes).digest()
    with StoreServer() as srv:
        srv.special["/s.duckdb"] = served(store_bytes, {"x-amz-checksum-sha256": base64.b64encode(digest).decode(),
                                                        "Repr-Digest": f"sha-256=:{base64.b64encode(digest).decode()}:"})
        r = accuracy_of(srv.url("/s.duckdb") + "#sha256=" + digest.hex(), remote_env(tmp_path))
    assert r.returncode == 0, r.stderr
    meta = json.loads(next((tmp_path / "cache").glob("*.source.json")).read_text())
    assert meta["sha256"] == digest.hex()


def test_a_redirect_loop_answers_in_one_line(tmp_path):
    with StoreServer() as srv:
        srv.special["/s.duckdb"] = loop
        r = accuracy_of(srv.url("/s.duckdb"), remote_env(tmp_path))
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
        assert accuracy_of(srv.url("/s.duckdb"), remote_env(tmp_path)).returncode == 0
    assert not any(p.exists() for p in leftovers) and not old.exists()
    assert mine.exists()  # removed only by its own process (here: this test's)
    mine.unlink()


# ------------------------------------------------------------------ redirects are confined (issue 27)

MARKERS = ("REFUSED-BODY-MARKER", "REFUSED-REASON-MARKER", "LOCATION-MARKER", "TARGET-BODY-MARKER")


def redirect(location: str, code: int = 302):
    """A redirect whose reason phrase, body and Location path carry markers no message may quote."""
    def answer(h):
        body = b"REFUSED-BODY-MARKER: the store moved"
        h.send_response(code, "REFUSED-REASON-MARKER")
        h.send_header("Location", location)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)
    return answer


def _quotes_nothing(text: str) -> bool:
    return not any(m in text for m in MARKERS)


def _refused_by_address(url: str, host: str, kind: str, how: str = "it is") -> str:
    return (f"{url}: cannot read the store: the redirect to host {host} was refused: {how} {kind}, which no "
            "redirect may reach (to read a store there, give its own URL), and there is no earlier verified copy")


@pytest.fixture
def in_process(tmp_path, monkeypatch):
    """remote.source in this process, as a command calls it (waiting for the fetch)."""
    for name in ("FAULTLINE_REDIRECT_HOSTS", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("FAULTLINE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(remote, "_page_wait", None)
    remote._memo.clear()
    remote._running.clear()
    yield
    remote._memo.clear()
    remote._running.clear()


@pytest.fixture
def connects(monkeypatch) -> list:
    """Every address a socket of this process connects to."""
    import socket

    seen = []
    real = socket.socket.connect

    def spy(self, address):
        seen.append(tuple(address[:2]))
        return real(self, address)

    monkeypatch.setattr(socket.socket, "connect", spy)
    return seen


@pytest.fixture
def resolving(monkeypatch):
    """`resolving({"name": "10.0.0.1"})`: those names resolve to those addresses (others as before)."""
    import socket

    real = socket.getaddrinfo
    names: dict[str, str] = {}

    def fake(host, port, *args, **kwargs):
        if host in names:
            return real(names[host], port, *args, **kwargs)
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", fake)
    return names.update


@pytest.mark.parametrize("allowed", [False, True])
def test_a_redirect_to_another_loopback_address_is_refused_without_connecting(tmp_path, store_bytes, allowed):
    """127.0.0.1 → 127.0.0.2: another host, and a loopback address that is not the store's own;
    listing it in FAULTLINE_REDIRECT_HOSTS does not make it reachable. Nothing connects to it,
    and no byte of the redirect (reason, body, Location's path) is quoted."""
    env = remote_env(tmp_path, **({"FAULTLINE_REDIRECT_HOSTS": "127.0.0.2"} if allowed else {}))
    other = b"TARGET-BODY-MARKER" + b"\x00" * 100
    with StoreServer() as srv, StoreServer({"/LOCATION-MARKER.duckdb": other}, host="127.0.0.2") as there:
        srv.special["/s.duckdb"] = redirect(there.url("/LOCATION-MARKER.duckdb?sig=LOCATION-MARKER"))
        url = srv.url("/s.duckdb")
        r = accuracy_of(url, env)
        assert there.connections == 0 and there.log == []
    assert r.returncode == 2
    assert r.stderr == "error: " + _refused_by_address(url, "127.0.0.2", "a loopback address other than the "
                                                                         "store host's own") + "\n"
    assert _quotes_nothing(r.stderr + r.stdout)


def test_a_refused_redirect_keeps_the_verified_copy_and_says_why(tmp_path, store_bytes):
    env = remote_env(tmp_path, FAULTLINE_REMOTE_TTL="0")
    with StoreServer({"/s.duckdb": store_bytes}) as srv, StoreServer(host="127.0.0.2") as there:
        url = srv.url("/s.duckdb")
        good = accuracy_of(url, env)
        assert good.returncode == 0, good.stderr
        srv.special["/s.duckdb"] = redirect(there.url("/LOCATION-MARKER.duckdb"), 307)
        r = accuracy_of(url, env)
        assert there.connections == 0
    assert r.returncode == 0 and r.stdout == good.stdout
    note = r.stderr.splitlines()[0]
    assert note.startswith(f"note: {url}: the redirect to host 127.0.0.2 was refused: it is a loopback address "
                           "other than the store host's own, which no redirect may reach (to read a store there, "
                           "give its own URL); showing the copy fetched ")
    assert _quotes_nothing(r.stderr)


@pytest.mark.parametrize("host, kind", [
    ("169.254.169.254", "a link-local address"), ("10.0.0.1", "a private address"),
    ("192.168.1.1", "a private address"), ("[fe80::1]", "a link-local address"), ("[fc00::1]", "a private address"),
    ("0.0.0.0", "an unspecified address"), ("224.0.0.1", "a multicast address"),
    ("[::ffff:10.0.0.1]", "a private address"), ("100.64.0.1", "an address that is not public")])
@pytest.mark.parametrize("allowed", [False, True])
def test_a_redirect_to_a_metadata_or_private_address_is_refused_without_connecting(
        tmp_path, monkeypatch, in_process, connects, host, kind, allowed):
    if allowed:  # even a host the user lists: such an address is never reached by a redirect
        monkeypatch.setenv("FAULTLINE_REDIRECT_HOSTS", host.strip("[]"))
    with StoreServer() as srv:
        srv.special["/s.duckdb"] = redirect(f"http://{host}/latest/meta-data/LOCATION-MARKER")
        url = srv.url("/s.duckdb")
        with pytest.raises(remote.RemoteStoreError) as caught:
            remote.source(url)
    assert caught.value.message == _refused_by_address(url, host.strip("[]"), kind)
    assert set(connects) == {("127.0.0.1", srv.port)}  # the store's server, and nothing else
    assert _quotes_nothing(caught.value.message)


def test_a_same_host_redirect_is_followed(tmp_path, store_bytes):
    """The same host: another path, and (a loopback host) another port. A credential goes to the
    store's own origin only: the same scheme, host and port."""
    token = "hf_sametokensametoken"
    local = accuracy_of(str(tmp_path / "published.duckdb"), remote_env(tmp_path))
    with StoreServer({"/datasets/o/r/resolve/main/moved.duckdb": store_bytes}, auth=f"Bearer {token}") as srv, \
            StoreServer({"/blob/s.duckdb": store_bytes}) as cdn:
        hf_env = remote_env(tmp_path, HF_ENDPOINT=srv.base, HF_TOKEN=token)
        srv.special["/datasets/o/r/resolve/main/s.duckdb"] = redirect("/datasets/o/r/resolve/main/moved.duckdb", 307)
        moved = accuracy_of("hf://datasets/o/r/s.duckdb", hf_env)
        srv.special["/datasets/o/r/resolve/main/s.duckdb"] = redirect(cdn.url("/blob/s.duckdb?LOCATION-MARKER=1"))
        other_port = accuracy_of("hf://datasets/o/r/s.duckdb", {**hf_env, "FAULTLINE_CACHE_DIR": str(tmp_path / "c2")})
        plain = accuracy_of(srv.url("/datasets/o/r/resolve/main/s.duckdb"), remote_env(tmp_path / "plain"))
    for r in (moved, other_port, plain):
        assert r.returncode == 0, r.stderr
        assert r.stdout == local.stdout
    # the moved file on the same origin was fetched with the token (the server asks for it)
    assert [e["status"] for e in srv.log if e["path"].endswith("moved.duckdb")] == [200]
    # the other port had the file asked of it twice, without the token
    assert [e["path"] for e in cdn.log] == ["/blob/s.duckdb?LOCATION-MARKER=1"] * 2
    assert not [e for e in cdn.log if "Authorization" in e["headers"]]


def test_a_host_the_user_allows_is_followed(tmp_path, store_bytes):
    """`localhost` is another host name than 127.0.0.1: refused, unless FAULTLINE_REDIRECT_HOSTS
    lists it (it resolves to the store host's own address)."""
    with StoreServer() as srv, StoreServer({"/s.duckdb": store_bytes}) as there:
        srv.special["/s.duckdb"] = redirect(f"http://localhost:{there.port}/s.duckdb")
        url = srv.url("/s.duckdb")
        refused = accuracy_of(url, remote_env(tmp_path))
        assert there.connections == 0
        allowed = accuracy_of(url, remote_env(tmp_path, FAULTLINE_REDIRECT_HOSTS="files.example.org, LOCALHOST"))
        assert there.statuses() == [200]
    assert refused.returncode == 2
    assert refused.stderr == (
        f"error: {url}: cannot read the store: the redirect to host localhost was refused: it is not the store's "
        "host, nor a host its service is known to send files from (to follow it, add localhost to "
        "FAULTLINE_REDIRECT_HOSTS), and there is no earlier verified copy\n")
    assert allowed.returncode == 0, allowed.stderr
    assert [(r["n"], r["correct"]) for r in json.loads(allowed.stdout)] == [(3000, 1000)]


def test_a_name_that_resolves_to_a_loopback_address_not_the_stores_is_refused(tmp_path, store_bytes):
    """A store on 127.0.0.2 redirects to `localhost` (allowed by name), which resolves to
    127.0.0.1: not the store host's address, so nothing connects there."""
    with StoreServer(host="127.0.0.2") as srv, StoreServer({"/s.duckdb": store_bytes}) as there:
        srv.special["/s.duckdb"] = redirect(f"http://localhost:{there.port}/s.duckdb")
        url = srv.url("/s.duckdb")
        r = accuracy_of(url, remote_env(tmp_path, FAULTLINE_REDIRECT_HOSTS="localhost"))
        assert there.connections == 0
    assert r.returncode == 2
    assert r.stderr == "error: " + _refused_by_address(
        url, "localhost", "a loopback address other than the store host's own", "it resolves to") + "\n"


def test_the_hubs_cdn_is_followed_but_not_when_its_name_resolves_to_a_private_address(
        tmp_path, monkeypatch, in_process, connects, resolving, store_bytes):
    """An hf:// store may be sent from the Hub's CDN (cdn-lfs.hf.co): the redirect is followed,
    without the token, keeping the name as Host; the same name resolving to 10.0.0.1 is refused
    before connecting (the address connected to is what is checked, not the name)."""
    token = "hf_cdntokencdntoken"
    with StoreServer() as hub, StoreServer({"/repos/ab/s.duckdb": store_bytes}) as cdn:
        monkeypatch.setenv("HF_ENDPOINT", hub.base)
        monkeypatch.setenv("HF_TOKEN", token)
        hub.special["/datasets/o/r/resolve/main/s.duckdb"] = redirect(
            f"http://cdn-lfs.hf.co:{cdn.port}/repos/ab/s.duckdb?X-Amz-Signature=LOCATION-MARKER")
        spec = "hf://datasets/o/r/s.duckdb"
        resolving({"cdn-lfs.hf.co": "10.0.0.1"})
        with pytest.raises(remote.RemoteStoreError) as caught:
            remote.source(spec)
        assert caught.value.message == _refused_by_address(spec, "cdn-lfs.hf.co", "a private address",
                                                           "it resolves to")
        assert set(connects) == {("127.0.0.1", hub.port)} and cdn.connections == 0
        assert _quotes_nothing(caught.value.message)
        # resolving to the store host's own address (here the test's loopback): followed
        resolving({"cdn-lfs.hf.co": "127.0.0.1"})
        remote._memo.clear()
        found = remote.source(spec)
        assert found.note is None and Path(found.copy).exists()
        [asked] = cdn.log
    assert asked["headers"]["Host"] == f"cdn-lfs.hf.co:{cdn.port}" and "Authorization" not in asked["headers"]
    assert [e["headers"]["Authorization"] for e in hub.log] == [f"Bearer {token}"] * 2


def test_redirect_rules(monkeypatch):
    """Which redirects are followed, decided before any connection (pure)."""
    monkeypatch.delenv("FAULTLINE_REDIRECT_HOSTS", raising=False)
    rule = remote.redirect_refusal
    s3 = "https://bkt.s3.us-east-1.amazonaws.com/k.duckdb"
    assert rule("s3://bkt/k.duckdb", s3, s3, "https://bkt.s3.eu-west-1.amazonaws.com/k.duckdb") is None
    assert rule("s3://bkt/k.duckdb", s3, s3, "https://s3-external-1.amazonaws.com/bkt/k.duckdb") is None
    # an EC2 instance's public name is under amazonaws.com too
    assert rule("s3://bkt/k.duckdb", s3, s3, "https://ec2-3-3-3-3.compute-1.amazonaws.com/k") == (
        "the redirect to host ec2-3-3-3-3.compute-1.amazonaws.com was refused: it is not the store's host, nor a "
        "host its service is known to send files from (to follow it, add ec2-3-3-3-3.compute-1.amazonaws.com to "
        "FAULTLINE_REDIRECT_HOSTS)")
    minio = "http://minio.internal:9000/bkt/k.duckdb"  # an S3-compatible endpoint: its own host only
    assert rule("s3://bkt/k.duckdb", minio, minio, "https://bkt.s3.eu-west-1.amazonaws.com/k") is not None
    hub = "https://huggingface.co/datasets/o/r/resolve/main/s.duckdb"
    for cdn in ("cdn-lfs.hf.co", "cdn-lfs-us-1.hf.co", "cas-bridge.xethub.hf.co", "us-east-1.aws.cdn.hf.co",
                "cdn-lfs.huggingface.co", "transfer.xethub.hf.co"):
        assert rule("hf://datasets/o/r/s.duckdb", hub, hub, f"https://{cdn}/x?sig=1") is None, cdn
    assert rule("hf://datasets/o/r/s.duckdb", hub, hub, "https://cdn-lfs.hf.co.example.com/x") is not None
    assert rule("https://h.example/s.duckdb", "https://h.example/s.duckdb", "https://h.example/s.duckdb",
                "https://cdn-lfs.hf.co/x") is not None  # the Hub's CDN is for hf:// stores
    web = "https://files.example.org/s.duckdb"
    assert rule(web, web, web, "https://FILES.example.org./v2/s.duckdb") is None
    assert rule(web, web, web, "http://files.example.org/s.duckdb") == (
        "the redirect to host files.example.org was refused: it leaves HTTPS for plain HTTP")
    assert rule(web, web, web, "https://files.example.org:8443/s.duckdb") == (
        "the redirect to host files.example.org was refused: it is another port or scheme of the store's host, nor "
        "a host its service is known to send files from (to follow it, add files.example.org to "
        "FAULTLINE_REDIRECT_HOSTS)")
    plain = "http://files.example.org/s.duckdb"
    assert rule(plain, plain, plain, "https://files.example.org:8443/s.duckdb") is None  # http → https
    assert rule(web, web, web, "file:///etc/passwd") == (
        "the redirect to an address that is not HTTP or HTTPS was refused")
    assert rule(web, web, web, "https://bad host<b>/x") == (
        "the redirect to an address without a valid host name was refused")
    monkeypatch.setenv("FAULTLINE_REDIRECT_HOSTS", "*.mirror.example.net, dl.example.com")
    assert rule(web, web, web, "https://eu.mirror.example.net/s.duckdb") is None
    assert rule(web, web, web, "https://dl.example.com/s.duckdb") is None
    assert rule(web, web, web, "https://mirror.example.net/s.duckdb") is not None
    assert rule(web, web, web, "https://10.1.2.3/s.duckdb") == (
        "the redirect to host 10.1.2.3 was refused: it is a private address, which no redirect may reach (to read "
        "a store there, give its own URL)")


def test_address_kinds():
    import ipaddress

    kind = remote._address_refusal
    own = {ipaddress.ip_address("127.0.0.1")}
    assert kind("127.0.0.1", own) is None and kind("::ffff:127.0.0.1", own) is None
    assert kind("8.8.8.8", own) is None and kind("2606:4700::1111", own) is None
    assert [kind(a, own) for a in ("127.0.0.2", "::1", "169.254.169.254", "fe80::1%1", "10.0.0.1", "172.16.0.1",
                                   "192.168.0.1", "fc00::1", "0.0.0.0", "::", "224.0.0.1", "ff02::1",
                                   "240.0.0.1", "100.64.0.1", "64:ff9b::a00:1", "2002:a00:1::")] == [
        "a loopback address other than the store host's own", "a loopback address other than the store host's own",
        "a link-local address", "a link-local address", "a private address", "a private address",
        "a private address", "a private address", "an unspecified address", "an unspecified address",
        "a multicast address", "a multicast address", "a private address", "an address that is not public",
        "a private address", "a private address"]
