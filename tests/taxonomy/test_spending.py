"""Money: nothing paid twice, nothing paid for lost, never past --max-cost.

Faults are real: a second process holding the DuckDB file, two analyses started on one store, a
loopback server whose answers bill every completion token a request allows (or more).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time

import pytest

from conftest import ROOT, q
from llm_kit import PRICED, seeded
from llm_server import FakeLLMServer, analysis_answer, failed_output_of
from store import StoreError, write_session
from store.analysis import Batch, now, save_batch
from taxonomy import LLMSettings, analyze
from taxonomy.budget import DEFAULT_MAX_TOKENS, PriceUnknown
from taxonomy.journal import Journal, journal_path, recover
from taxonomy.runlock import lock_path

pytestmark = pytest.mark.usefixtures("llm_env")  # a test key in the environment, for every test
UNPRICED = "openai/test-model"
# holds a read-only connection on a store until its stdin closes: a notebook left open on it
LOCKER = """
import sys, time, duckdb
while True:
    try:
        con = duckdb.connect(sys.argv[1], read_only=True)
        break
    except duckdb.IOException:
        time.sleep(0.002)
print("locked", flush=True)
sys.stdin.read()
"""


def cli(db, api_base, *extra, model=UNPRICED, env_extra=None):
    env = {**os.environ, "OPENAI_API_KEY": "sk-test-not-a-real-key", "LITELLM_LOCAL_MODEL_COST_MAP": "True",
           **(env_extra or {})}
    cmd = [sys.executable, "-m", "taxonomy", "analyze", "--db", str(db), "--analyst", model, "--api-base", api_base, *extra]
    return cmd, env


def analysis_outputs(srv, start=0) -> list[str]:
    return [failed_output_of(b) for b in srv.requests[start:] if "<failed_output>" in b["messages"][-1]["content"]]


def test_a_store_locked_past_the_timeout_stops_sending_and_nothing_paid_is_lost(tmp_db):
    n, concurrency, lock_timeout = 100, 8, 0.5
    seeded(tmp_db, n)
    with FakeLLMServer(latency=0.3) as srv:
        cmd, env = cli(tmp_db, srv.api_base, "--concurrency", str(concurrency),
                       env_extra={"FAULTLINE_LOCK_TIMEOUT": str(lock_timeout)})
        run = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while srv.count("analysis") < 16 and time.monotonic() < deadline:
            time.sleep(0.01)
        locker = subprocess.Popen([sys.executable, "-c", LOCKER, str(tmp_db)], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        try:
            assert locker.stdout.readline().strip() == "locked"
            locked_at = time.monotonic()
            out, err = run.communicate(timeout=120)
            first = analysis_outputs(srv)
        finally:
            locker.stdin.close()
            locker.wait(timeout=30)

        assert run.returncode == 2, err
        assert "another process has held the database" in err and "Stopped sending requests" in err
        kept = int(re.search(r"(\d+) answer\(s\) already paid for are kept in", err).group(1))
        assert str(journal_path(tmp_db)) in err
        # the first commit fails lock_timeout after the locker took the file: from then on no
        # request leaves (those in flight at that moment are answered and kept)
        late = [t for t in srv.times if t > locked_at + lock_timeout + 0.3]
        print(f"first run: {len(first)} of {n} prompts sent, {kept} answers kept in the journal, "
              f"{len(late)} requests later than {lock_timeout + 0.3} s after the lock was taken")
        assert len(late) <= concurrency
        assert 16 <= len(first) < n - 30
        # every answer paid for is stored or kept; the journal holds exactly the kept ones
        stored = q(tmp_db, "SELECT count(*) FROM llm_cache")[0][0]
        assert stored + kept == len(first) == len(set(first))
        journaled = [r for line in journal_path(tmp_db).read_text().splitlines() for r in json.loads(line)["cache"]]
        stored_keys = {k for (k,) in q(tmp_db, "SELECT cache_key FROM llm_cache")}
        assert len({r[0] for r in journaled} - stored_keys) == kept > 0

        sent_before = len(srv.requests)
        logged = []
        second = analyze(tmp_db, UNPRICED, settings=LLMSettings(api_base=srv.api_base, concurrency=concurrency),
                         log=logged.append)
        assert second.recovered == kept and f"{kept} answers recovered" in second.line()
        assert f"stored {kept} answer(s) an earlier run had paid for but could not store" in logged
        resent = analysis_outputs(srv, sent_before)
        # nothing paid for in the first run is sent again
        assert not set(resent) & set(first)
        assert len(resent) == n - len(first)
    assert q(tmp_db, "SELECT count(*), count(DISTINCT (run_id, instance_id)) FROM analyses") == [(n, n)]
    assert q(tmp_db, "SELECT count(*) FROM llm_cache WHERE prompt_version = 'stage1-v2'")[0][0] == n
    # each request sent is one llm_calls row: the journal's were stored once, none lost
    assert q(tmp_db, "SELECT count(*) FROM llm_calls")[0][0] == len(srv.requests)
    assert not journal_path(tmp_db).exists() and not lock_path(tmp_db).exists()


@pytest.mark.parametrize("name", ["same path", "symlink", "hard link", "hard link in another folder"])
def test_a_second_analysis_of_the_same_store_is_refused(tmp_path, name):
    """Whatever name the second run reaches the store by: the unfixed lock was named from the
    path, and a link let both runs pay for every prompt."""
    n = 40
    tmp_db = tmp_path / "a" / "faultline.duckdb"
    tmp_db.parent.mkdir()
    seeded(tmp_db, n)
    other = tmp_path / ("b" if name.endswith("folder") else "a") / "other-name.duckdb"
    other.parent.mkdir(exist_ok=True)
    if name == "same path":
        other = tmp_db
    elif name == "symlink":
        other.symlink_to(tmp_db)
    else:
        os.link(tmp_db, other)
    with FakeLLMServer(latency=0.3) as srv:
        # the first analysis runs in this process, the second in another
        first: list = []
        settings = LLMSettings(api_base=srv.api_base, concurrency=2)
        thread = threading.Thread(target=lambda: first.append(analyze(tmp_db, UNPRICED, settings=settings)))
        thread.start()
        deadline = time.monotonic() + 60
        while srv.count("analysis") < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        cmd, env = cli(other, srv.api_base, "--concurrency", "2")
        second = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
        thread.join(timeout=120)
        assert first[0].analysed_now == n and thread.is_alive() is False
        assert second.returncode == 2, second.stderr
        assert f"{other}: another analysis is running on this store (pid {os.getpid()};" in second.stderr
        assert "Traceback" not in second.stderr
        # every prompt sent once, every failure analysed once
        outputs = analysis_outputs(srv)
        assert len(outputs) == len(set(outputs)) == n
        assert q(tmp_db, "SELECT count(*), count(DISTINCT (run_id, instance_id)) FROM analyses") == [(n, n)]
        assert q(tmp_db, "SELECT count(*) FROM llm_calls")[0][0] == len(srv.requests)
    assert not lock_path(tmp_db).exists()


def test_the_lock_of_a_dead_run_is_taken_over(tmp_db):
    seeded(tmp_db, 3)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    lock_path(tmp_db).write_text(f"{dead.pid}\n")
    with FakeLLMServer() as srv:
        summary = analyze(tmp_db, UNPRICED, settings=LLMSettings(api_base=srv.api_base))
    assert summary.analysed_now == 3
    assert not lock_path(tmp_db).exists()


def test_recovering_a_journal_twice_stores_each_answer_and_call_once(tmp_db):
    seeded(tmp_db, 1)
    t = now()
    answered = Batch(cache=[("k1", UNPRICED, "stage1-v1", '{"a": 1}', 10, 5)],
                     calls=[("k1", UNPRICED, "analysis", "ok", 200, None, 10, 5, None, 12.5, t)])
    failed = Batch(calls=[("k2", UNPRICED, "analysis", "error", 500, "boom", None, None, None, 3.25, t)])
    journal = Journal(tmp_db)
    journal.append(answered)
    journal.append(failed)
    journal.close()
    # the first answer was committed before the run died; the journal outlived its commit
    with write_session(tmp_db) as con:
        save_batch(con, answered)
    copy = journal_path(tmp_db).read_text()
    assert recover(tmp_db) == (0, 0)
    journal_path(tmp_db).write_text(copy + '{"cache": [["k3", "cut')  # a line cut by a kill mid-write
    assert recover(tmp_db) == (0, 1)
    assert q(tmp_db, "SELECT cache_key, count(*) FROM llm_calls GROUP BY 1 ORDER BY 1") == [("k1", 1), ("k2", 1)]
    assert q(tmp_db, "SELECT count(*) FROM llm_cache") == [(1,)]
    assert not journal_path(tmp_db).exists()


@pytest.mark.parametrize("limit", [0.01, 0.05])
def test_max_cost_is_a_ceiling_when_every_answer_bills_all_of_max_tokens(tmp_db, limit):
    seeded(tmp_db, 60)
    # a reasoning model: every answer bills as many completion tokens as the request allows
    with FakeLLMServer(completion_tokens=100_000) as srv:
        summary = analyze(tmp_db, PRICED,
                          settings=LLMSettings(api_base=srv.api_base, concurrency=4, max_cost=limit, timeout=5.0))
    spent, calls, completion = q(tmp_db, "SELECT sum(cost_usd), count(*), min(completion_tokens) FROM llm_calls")[0]
    assert calls == summary.stats.requests == len(srv.requests) > 0
    assert all(b["max_tokens"] == DEFAULT_MAX_TOKENS for b in srv.requests)
    assert completion == DEFAULT_MAX_TOKENS
    assert spent <= limit
    assert summary.stats.cost_usd == pytest.approx(spent)
    msg = summary.stopped
    assert msg.startswith(f"stopped by --max-cost ${limit:.4f}: spent ${spent:.4f};") and "before exceeding" not in msg
    # it stopped because the next request's worst case did not fit, not earlier
    worst = float(re.search(r"could cost up to \$([\d.]+)", msg).group(1))
    assert spent + worst > limit
    assert summary.analysed_now == calls < 60


def test_a_provider_billing_past_max_tokens_stops_the_run_at_once(tmp_db):
    seeded(tmp_db, 20)
    with FakeLLMServer(completion_tokens=50_000, honour_max_tokens=False) as srv:
        summary = analyze(tmp_db, PRICED,
                          settings=LLMSettings(api_base=srv.api_base, concurrency=2, max_cost=0.05, timeout=5.0))
    spent = q(tmp_db, "SELECT sum(cost_usd) FROM llm_calls")[0][0]
    # the requests in flight when the first bill came back, and no more
    assert 1 <= len(srv.requests) <= 2
    assert "does not honour max_tokens" in summary.stopped and "before exceeding" not in summary.stopped
    assert f"spent ${spent:.4f}" in summary.stopped


def test_max_cost_needs_a_price_and_takes_one_from_the_command_line(tmp_db):
    seeded(tmp_db, 10)
    with FakeLLMServer(completion_tokens=100_000) as srv:
        with pytest.raises(PriceUnknown) as refused:
            analyze(tmp_db, "openai/house-model", settings=LLMSettings(api_base=srv.api_base, max_cost=0.01))
        assert "--max-cost needs a price for openai/house-model" in refused.value.message
        assert "--price openai/house-model IN OUT" in refused.value.message
        assert srv.requests == []

        cmd, env = cli(tmp_db, srv.api_base, "--max-cost", "0.01", "--price", "openai/house-model", "0.5", "1",
                       "--max-tokens", "2000", "--concurrency", "1", model="openai/house-model")
        priced = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert priced.returncode == 3, priced.stderr
    rows = q(tmp_db, "SELECT prompt_tokens, completion_tokens, cost_usd FROM llm_calls")
    assert rows and len(rows) == len(srv.requests) < 10
    for pt, ct, cost in rows:
        assert ct == 2000
        assert cost == pytest.approx(pt * 0.5e-6 + ct * 1e-6)
    spent = sum(r[2] for r in rows)
    assert spent <= 0.01
    assert f"error: stopped by --max-cost $0.0100: spent ${spent:.4f};" in priced.stderr
    assert f"cost ${spent:.4f}" in priced.stdout


def test_an_answer_cut_off_at_max_tokens_is_not_asked_again(tmp_db):
    seeded(tmp_db, 5)
    with FakeLLMServer() as srv:
        srv.queue("analysis", "cut_off")
        summary = analyze(tmp_db, UNPRICED, settings=LLMSettings(api_base=srv.api_base, concurrency=1))
        assert srv.count("analysis") == 5
        assert (summary.unanalysed, summary.analysed_now) == (1, 4)
        assert "1 answer(s) cut off at --max-tokens" in summary.line()
        cut = q(tmp_db, "SELECT cache_key, finish_reason FROM llm_cache WHERE finish_reason IS NOT NULL")
        assert [r[1] for r in cut] == ["length"]

        # the re-run does not buy the cut answer again: it is cached with its finish reason
        again = analyze(tmp_db, UNPRICED, settings=LLMSettings(api_base=srv.api_base, concurrency=1))
        assert srv.count("analysis") == 5
        assert (again.unanalysed, again.analysed_now, again.stats.requests, again.stats.cut_off) == (1, 0, 0, 1)

        # unless asked: the prompt is sent once more, and its new, complete answer replaces the cut one
        cmd, env = cli(tmp_db, srv.api_base, "--retry-cut-off", "--max-tokens", "8000")
        retried = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert retried.returncode == 0, retried.stderr
        assert srv.count("analysis") == 6
        assert srv.bodies("analysis")[-1]["max_tokens"] == 8000
    assert q(tmp_db, "SELECT count(*) FROM llm_cache WHERE finish_reason = 'length'") == [(0,)]
    assert q(tmp_db, "SELECT count(DISTINCT (run_id, instance_id)) FROM analyses") == [(5,)]


# ---------------------------------------------------------------- issue 19: silent providers, full disks, links


def test_a_provider_that_sends_no_usage_is_charged_its_byte_bound_and_max_cost_holds(tmp_db):
    from taxonomy.budget import price, prompt_token_bound
    from taxonomy.prompts import ANALYSIS_SCHEMA

    n, limit = 60, 0.01
    seeded(tmp_db, n)
    with FakeLLMServer(send_usage=False) as srv:
        summary = analyze(tmp_db, PRICED, settings=LLMSettings(api_base=srv.api_base, concurrency=1, max_cost=limit))
    rows = q(tmp_db, "SELECT prompt_tokens, completion_tokens, cost_usd FROM llm_calls WHERE purpose = 'analysis' "
                     "ORDER BY call_id")
    bodies = srv.bodies("analysis")
    # the unfixed client priced every answer at $0 and sent all 60 requests
    assert 0 < len(rows) == len(bodies) < n
    for (pt, ct, cost), body in zip(rows, bodies):
        answer = json.dumps(analysis_answer(body))
        assert pt == prompt_token_bound(body["messages"], ANALYSIS_SCHEMA)
        assert ct == len(answer.encode("utf-8"))
        assert cost == pytest.approx(price(PRICED, pt, ct)) and cost > 0
        # never less than the provider could bill for this text at any tokenizer (>= 1 byte a token)
        assert pt >= len(json.dumps(body["messages"], ensure_ascii=False).encode()) and ct >= len(answer) // 4
    spent = sum(r[2] for r in rows)
    assert spent <= limit
    assert summary.stopped.startswith(f"stopped by --max-cost ${limit:.4f}: spent ${spent:.4f};")
    assert f"{len(rows)} answer(s) came without token usage from the provider, charged at their UTF-8 byte bound" \
        in summary.line()


def test_a_journal_write_that_fails_stops_sending_at_once_and_keeps_the_journal(tmp_db):
    """/dev/full answers every write with ENOSPC, as a full disk does: the journal is made a link to it."""
    n, concurrency = 40, 4
    seeded(tmp_db, n)
    with FakeLLMServer(latency=0.5) as srv:
        cmd, env = cli(tmp_db, srv.api_base, "--concurrency", str(concurrency))
        proc = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # the journal is opened at the first answer: make it a full device while the first
        # requests wait for their answers (a journal there at start is refused: it never ends)
        deadline = time.monotonic() + 60
        while srv.count("analysis") < 1 and time.monotonic() < deadline:
            time.sleep(0.005)
        journal_path(tmp_db).symlink_to("/dev/full")
        out, err = proc.communicate(timeout=120)
        run = subprocess.CompletedProcess(cmd, proc.returncode, out, err)
        first = analysis_outputs(srv)
        assert run.returncode == 2, run.stderr
        assert "Traceback" not in run.stderr
        assert (f"error: no space left on the device holding {tmp_db.parent} (writing {journal_path(tmp_db).name}). "
                "Stopped sending requests;") in run.stderr
        # the unfixed run went on sending all 40 requests and then deleted the journal
        assert len(first) <= concurrency
        assert journal_path(tmp_db).is_symlink()
        stored = q(tmp_db, "SELECT count(*) FROM llm_cache")[0][0]
        assert f"{stored} answer(s) already paid for were stored in the database" in run.stderr
        assert stored == len(first)  # the database is on another disk: what was paid for is stored there

        with pytest.raises(StoreError, match="a character device, not a regular file; refused: Faultline keeps its journal"):
            analyze(tmp_db, UNPRICED, settings=LLMSettings(api_base=srv.api_base, concurrency=concurrency))
        journal_path(tmp_db).unlink()
        second = analyze(tmp_db, UNPRICED, settings=LLMSettings(api_base=srv.api_base, concurrency=concurrency))
        resent = analysis_outputs(srv, len(first))
        assert not set(resent) & set(first) and len(resent) == n - len(first)
        assert second.analysed_now == n - len(first)


def _can_mount_tmpfs(where) -> bool:
    probe = subprocess.run(["unshare", "-r", "-m", "sh", "-c", f"mount -t tmpfs -o size=64k tmpfs {where}"],
                           capture_output=True, timeout=30)
    return probe.returncode == 0


def test_a_disk_that_fills_during_a_run_stops_it_and_nothing_paid_is_bought_twice(tmp_path):
    """A real tmpfs a little larger than the store (in a private mount namespace): the run fills it."""
    n, concurrency = 60, 4
    mnt, out = tmp_path / "mnt", tmp_path / "out"
    mnt.mkdir()
    out.mkdir()
    if not _can_mount_tmpfs(mnt):
        pytest.skip("cannot mount a tmpfs here (unshare -r -m: no user namespaces)")
    db = tmp_path / "seed.duckdb"
    seeded(db, n)
    size_kb = db.stat().st_size // 1024 + 600
    with FakeLLMServer(latency=0.1) as srv:
        _, env = cli(db, srv.api_base)
        store_in_tmpfs = mnt / "s.duckdb"
        script = (f"mount -t tmpfs -o size={size_kb}k tmpfs {mnt} && cp {db} {store_in_tmpfs} && "
                  f"{sys.executable} -m taxonomy analyze --db {store_in_tmpfs} --analyst {UNPRICED} "
                  f"--api-base {srv.api_base} --concurrency {concurrency}; echo \"exit=$?\"; cp -a {mnt}/. {out}/")
        run = subprocess.run(["unshare", "-r", "-m", "sh", "-c", script], env=env, cwd=ROOT, capture_output=True,
                             text=True, timeout=300)
        first = analysis_outputs(srv)
        assert "exit=2" in run.stdout, (run.stdout, run.stderr)
        assert "Traceback" not in run.stderr
        assert f"error: no space left on the device holding {mnt}" in run.stderr, run.stderr
        assert len(first) < n  # the unfixed run sent all 60 and deleted the journal
        told = {what: int(count) for count, what in re.findall(
            r"(\d+) answer\(s\) (?:already )?paid for (were stored|are kept|could be saved nowhere)", run.stderr)}
        stored, kept, lost = told.get("were stored", 0), told.get("are kept", 0), told.get("could be saved nowhere", 0)
        assert lost <= concurrency and stored + kept + lost == len(first), run.stderr
        moved = out / "s.duckdb"  # the store and its journal, moved to a disk with room
        assert (journal_path(moved).exists() or kept == 0)
        assert q(moved, "SELECT count(*) FROM llm_cache")[0][0] == stored

        second = analyze(moved, UNPRICED, settings=LLMSettings(api_base=srv.api_base, concurrency=concurrency))
        resent = analysis_outputs(srv, len(first))
        assert second.recovered == kept
        # nothing stored or kept is bought again; only the answers the full disk lost are asked again
        assert len(resent) == n - stored - kept and len(set(resent) & set(first)) == lost
    assert q(moved, "SELECT count(DISTINCT (run_id, instance_id)) FROM analyses") == [(n,)]


@pytest.mark.parametrize("line", [
    '{"cache": [["k9", "m"]], "calls": []}',                      # a cache row cut to two fields
    '{"cache": [], "calls": [[1, 2, 3]]}',                          # a call row of the wrong shape
    '{"cache": [["k9", "m", "v", "text", "ten", 5]], "calls": []}',  # tokens that are not numbers
    '{"calls": []}',                                                # no cache list
    '[1, 2, 3]',                                                    # not an object
    '{"cache": [], "calls": [["k", "m", "analysis", "ok", 200, null, 1, 1, null, 2.0, "yesterday"]]}',
])
def test_a_journal_line_of_the_wrong_shape_is_skipped_and_counted(tmp_db, line):
    seeded(tmp_db, 2)
    t = now()
    good = Batch(cache=[("k1", UNPRICED, "stage1-v1", '{"a": 1}', 10, 5)],
                 calls=[("k1", UNPRICED, "analysis", "ok", 200, None, 10, 5, None, 12.5, t)])
    journal = Journal(tmp_db)
    journal.append(good)
    journal.close()
    with open(journal_path(tmp_db), "a") as fh:
        fh.write(line + "\n")
    journal.append(good)  # a later line is still read
    journal.close()
    # the unfixed recovery stored the bad row and failed every later analysis until the file was deleted
    assert recover(tmp_db) == (1, 1)
    assert q(tmp_db, "SELECT cache_key FROM llm_cache") == [("k1",)]
    assert not journal_path(tmp_db).exists()
    with FakeLLMServer() as srv:
        assert analyze(tmp_db, UNPRICED, settings=LLMSettings(api_base=srv.api_base)).analysed_now == 2


def _hard_linked(tmp_path, n: int):
    """A store and a hard link to it in another folder, and a TMPDIR of its own for each."""
    first = tmp_path / "team-a" / "faultline.duckdb"
    first.parent.mkdir()
    seeded(first, n)
    second = tmp_path / "team-b" / "shared.duckdb"
    second.parent.mkdir()
    os.link(first, second)
    tmpdirs = [tmp_path / "tmp-a", tmp_path / "tmp-b"]
    for t in tmpdirs:
        t.mkdir()
    return first, second, tmpdirs


def test_a_hard_linked_store_analysed_from_two_folders_with_two_tmpdirs_pays_each_prompt_once(tmp_path):
    """The audit's case: one store reached through a hard link in another folder, each run with
    its own TMPDIR. The lock beside each name is in a different folder, and a machine-wide lock in
    $TMPDIR is in two: the unfixed runs sent 541 requests for 271 prompts. The machine-wide lock
    lives in a folder every process shares whatever its TMPDIR (runlock.SHARED_FOLDERS)."""
    n = 40
    first, second, tmpdirs = _hard_linked(tmp_path, n)
    with FakeLLMServer(latency=0.3) as srv:
        runs = []
        for db, tmpdir in zip((first, second), tmpdirs):
            cmd, env = cli(db, srv.api_base, "--concurrency", "2", env_extra={"TMPDIR": str(tmpdir)})
            runs.append(subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                         text=True))
        results = [run.communicate(timeout=180) for run in runs]
        codes = sorted(run.returncode for run in runs)
        assert codes == [0, 2], results
        refused = next(err for run, (_, err) in zip(runs, results) if run.returncode == 2)
        assert "another analysis is running on this store" in refused and "Traceback" not in refused
        outputs = analysis_outputs(srv)
        assert len(outputs) == len(set(outputs)) == n  # each prompt paid once
        assert q(first, "SELECT count(*), count(DISTINCT (run_id, instance_id)) FROM analyses") == [(n, n)]
        assert q(first, "SELECT count(*) FROM llm_calls")[0][0] == len(srv.requests)
    # nothing of the lock went to either TMPDIR
    assert [p for t in tmpdirs for p in t.rglob("*")] == []


def test_answers_kept_through_one_hard_link_are_recovered_through_another(tmp_path):
    """A run through one name stops with answers it could not store (a notebook held the file):
    the next run through a hard link in another folder, with another TMPDIR, stores them and does
    not buy them again (the journal beside the first name is found through the machine-wide link
    to it, taxonomy/journal.py pointer_path)."""
    n, concurrency = 60, 8
    first, second, tmpdirs = _hard_linked(tmp_path, n)
    with FakeLLMServer(latency=0.3) as srv:
        cmd, env = cli(first, srv.api_base, "--concurrency", str(concurrency),
                       env_extra={"FAULTLINE_LOCK_TIMEOUT": "0.5", "TMPDIR": str(tmpdirs[0])})
        run = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while srv.count("analysis") < 16 and time.monotonic() < deadline:
            time.sleep(0.01)
        locker = subprocess.Popen([sys.executable, "-c", LOCKER, str(first)], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        try:
            assert locker.stdout.readline().strip() == "locked"
            _, err = run.communicate(timeout=120)
            paid = analysis_outputs(srv)
        finally:
            locker.stdin.close()
            locker.wait(timeout=30)
        assert run.returncode == 2, err
        kept = int(re.search(r"(\d+) answer\(s\) already paid for are kept in", err).group(1))
        assert kept > 0 and journal_path(first).exists()
        sent_before = len(srv.requests)
        cmd, env = cli(second, srv.api_base, "--concurrency", str(concurrency), env_extra={"TMPDIR": str(tmpdirs[1])})
        again = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=180)
        assert again.returncode == 0, again.stderr
        assert f"{kept} answers recovered" in again.stderr + again.stdout
        resent = analysis_outputs(srv, sent_before)
        assert not set(resent) & set(paid)  # nothing paid for is bought again
        assert len(resent) == n - len(paid)
    assert not journal_path(first).exists()
    assert q(first, "SELECT count(*), count(DISTINCT (run_id, instance_id)) FROM analyses") == [(n, n)]
    assert q(first, "SELECT count(*) FROM llm_calls")[0][0] == len(srv.requests)
