"""Issue 26 over real transports: `python -m stats mcp` as a process, reached by the SDK's own
client over streamable HTTP (127.0.0.1 only, the same answers as in memory, DNS-rebinding
requests refused, a store being written by an ingest meanwhile) and over stdio; and the command's
refusals before it serves."""

from __future__ import annotations

import json
import os
import signal
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import anyio
import httpx
import pytest
from mcp import Client, StdioServerParameters

from conftest import MMLU_SUITE, ROOT, requires_fixtures, run_module
from mcp_server.answers import Settings, answer

DASHBOARD = "http://dash.example:8501"
CALLS = [("loaded", {}), ("results", {"datasets": ["demo_math"]}),
         ("compare", {"a": "demo/atlas-7b", "b": "demo/atlas-70b", "limit": 3}),
         ("failures", {"category": "Refusal", "limit": 3}),
         ("question", {"dataset": "demo_qa", "instance_id": "geography/id1"}), ("suspects", {}),
         ("results", {"models": ["nobody"]})]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Served:
    """`python -m stats mcp --http PORT` running on a store until stopped with Ctrl-C."""

    def __init__(self, db: Path, *extra: str):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "stats", "mcp", "--db", str(db), "--http", str(self.port), *extra],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while True:
            assert self.proc.poll() is None, self.proc.communicate()
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                assert time.monotonic() < deadline, "the server did not start listening"
                time.sleep(0.1)

    def stop(self) -> tuple[int, str, str]:
        self.proc.send_signal(signal.SIGINT)
        out, err = self.proc.communicate(timeout=60)
        return self.proc.returncode, out, err

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()


@pytest.fixture
def served(demo_db):
    server = Served(demo_db, "--base-url", DASHBOARD)
    yield server
    server.kill()


def session(target, batch, mode: str = "auto") -> tuple[list[str], list[tuple[str, bool]]]:
    async def go():
        async with Client(target, mode=mode) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            out = []
            for tool, args in batch:
                result = await client.call_tool(tool, args)
                out.append((result.content[0].text, bool(result.is_error)))
            return names, out

    return anyio.run(go)


def listening_addresses(port: int) -> set[str]:
    """The local addresses a TCP socket listens on at `port` (Linux's /proc/net/tcp*)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            local, state = line.split()[1], line.split()[3]
            address, hex_port = local.rsplit(":", 1)
            if state == "0A" and int(hex_port, 16) == port:
                found.add(address)
    return found


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_http_answers_are_the_in_memory_answers(served, demo_db, mode):
    names, got = session(served.url, CALLS, mode)
    assert names == ["loaded", "results", "compare", "failures", "question", "suspects"]
    settings = Settings(db=str(demo_db), base_url=DASHBOARD)
    assert got == [answer(tool, settings, **args) for tool, args in CALLS]
    assert json.loads(got[2][0])["link"].startswith(f"{DASHBOARD}/compare?a=demo%2Fatlas-7b")
    assert got[-1][1] and not any(e for _, e in got[:-1])
    # bound to the loopback interface alone (0100007F = 127.0.0.1)
    assert listening_addresses(served.port) == {"0100007F"}
    code, out, err = served.stop()
    assert code == 0 and out == ""
    assert f"read-only over streamable HTTP at {served.url}" in err
    assert f"links to {DASHBOARD}" in err
    assert f"stopped: {len(CALLS)} calls answered, 1 of them errors" in err
    assert "Traceback" not in err


def test_http_refuses_requests_from_other_hosts(served):
    """DNS rebinding: a page elsewhere that resolves its own name to 127.0.0.1 must not read the
    store through the user's browser."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "page", "version": "1"}}}
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    evil_host = httpx.post(served.url, json=body, headers={**headers, "Host": "evil.example"}, timeout=10)
    evil_origin = httpx.post(served.url, json=body, headers={**headers, "Origin": "http://evil.example"},
                             timeout=10)
    fine = httpx.post(served.url, json=body, headers=headers, timeout=10)
    assert evil_host.status_code in (400, 403, 421) and evil_origin.status_code in (400, 403)
    assert fine.status_code == 200


def test_stdio_is_the_default_transport(demo_db):
    params = StdioServerParameters(command=sys.executable, args=["-m", "stats", "mcp", "--db", str(demo_db)],
                                   cwd=str(ROOT), env={**os.environ, "FAULTLINE_BASE_URL": DASHBOARD})
    names, got = session(params, CALLS[:3])
    assert len(names) == 6
    assert got == [answer(tool, Settings(db=str(demo_db), base_url=DASHBOARD), **args) for tool, args in CALLS[:3]]


@requires_fixtures
def test_an_ingest_writes_while_an_agent_reads(demo_db, tmp_path):
    """The MMLU suite (50 runs) is ingested into the demo store (44 runs) while an agent calls
    `loaded` and `results` over HTTP without pause: every answer counts the store before or
    after the write, none is an error, and the ingest finishes."""
    db = tmp_path / "busy.duckdb"
    shutil.copy(demo_db, db)
    server = Served(db)
    try:
        async def read_until(done) -> list[tuple[bool, int, bool]]:
            """(is `loaded`, runs or rows, is an error) of each call, until `done()` held at the
            start of a round of calls."""
            seen = []
            async with Client(server.url) as client:
                while True:
                    finished = done()
                    for tool in ("loaded", "results"):
                        result = await client.call_tool(tool, {})
                        data = json.loads(result.content[0].text)
                        runs = data["store"]["runs"] if tool == "loaded" else len(data["results"])
                        seen.append((tool == "loaded", runs, bool(result.is_error)))
                    if finished:
                        return seen

        before = anyio.run(read_until, lambda: True)
        ingest = subprocess.Popen([sys.executable, "-m", "ingest", str(MMLU_SUITE), "--db", str(db)], cwd=ROOT,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        started = time.monotonic()
        rounds = []
        seen = before + anyio.run(read_until, lambda: rounds.append(ingest.poll()) or rounds[-1] is not None)
        out, err = ingest.communicate(timeout=300)
        took = time.monotonic() - started
        assert ingest.returncode == 0, err
        assert not any(e for _, _, e in seen)
        runs = [n for is_loaded, n, _ in seen if is_loaded]
        rows = [n for is_loaded, n, _ in seen if not is_loaded]
        # before: 44 runs, 16 model x dataset rows; after: 94 runs and 5 MMLU models' rows more
        assert set(runs) == {44, 94} and (runs[0], runs[-1]) == (44, 94)
        assert set(rows) == {16, 21} and (rows[0], rows[-1]) == (16, 21)
        # calls were answered while the ingest ran, and it was not held up for long
        assert rounds.count(None) >= 1 and took < 240
    finally:
        server.kill()


def test_the_command_refuses_what_it_cannot_serve(demo_db, tmp_path):
    proc = run_module("stats", "mcp", "--db", tmp_path / "missing.duckdb", timeout=120)
    assert proc.returncode == 2 and "no database here" in proc.stderr and "--db" in proc.stderr
    junk = tmp_path / "junk.duckdb"
    junk.write_text("not a database")
    proc = run_module("stats", "mcp", "--db", junk, timeout=120)
    assert proc.returncode == 2 and str(junk) in proc.stderr and "Traceback" not in proc.stderr
    proc = run_module("stats", "mcp", "--db", demo_db, "--answer-tokens", "500", timeout=120)
    assert proc.returncode == 2 and "at least 6,000 tokens" in proc.stderr
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = run_module("stats", "mcp", "--db", demo_db, "--http", port, timeout=120)
    assert proc.returncode == 2 and f"port {port} on 127.0.0.1 is in use" in proc.stderr
    proc = run_module("stats", "mcp", "--db", demo_db, "--http", "70000", timeout=120)
    assert proc.returncode == 2 and "argument --http: 70000 is out of range (expected from 1 to 65535)" in proc.stderr
    proc = run_module("stats", "mcp", "--db", demo_db, "--base-url", "localhost:8501", timeout=120)
    assert proc.returncode == 2 and "with its scheme" in proc.stderr
    proc = run_module("stats", "mcp", "--db", demo_db, timeout=120,
                      env={**os.environ, "FAULTLINE_BASE_URL": "dash:8501"})
    assert proc.returncode == 2 and "'dash:8501' (--base-url or $FAULTLINE_BASE_URL)" in proc.stderr
