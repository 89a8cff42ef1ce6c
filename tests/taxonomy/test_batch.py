"""Batch analysis (taxonomy/batch.py) against a loopback server implementing OpenAI's `/v1/files`
and `/v1/batches`: answers equal live ones and share their cache; a real subprocess killed between
submit and collect resumes with --resume without paying twice; --max-cost holds at submission."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections import Counter

import pytest

from conftest import ROOT, q
# n failures with distinct prompts; PRICED has batch prices
from llm_kit import PRICED, seeded
from llm_server import FakeLLMServer
from store import write_session
from store.batches import record_submission
from taxonomy import LLMSettings, analyze
from taxonomy.batch import batch_price
from taxonomy.prompts import ANALYSIS_PROMPT_VERSION

pytestmark = pytest.mark.usefixtures("llm_env")  # a test key in the environment, for every test


def cli(db, api_base, *extra):
    env = {**os.environ, "OPENAI_API_KEY": "sk-test-not-a-real-key", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    return [sys.executable, "-m", "taxonomy", "analyze", "--db", str(db), "--analyst", PRICED,
            "--api-base", api_base, "--poll-interval", "0.1", *extra], env


def run(cmd, env):
    return subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)


def labels(db) -> list[tuple]:
    return q(db, "SELECT instance_id, error_title, category FROM failures ORDER BY instance_id")


def test_batch_answers_equal_live_ones_and_share_the_cache(tmp_path):
    live_db, batch_db = tmp_path / "live.duckdb", tmp_path / "batch.duckdb"
    seeded(live_db, 12)
    seeded(batch_db, 12)
    with FakeLLMServer() as srv:
        live = analyze(live_db, PRICED, settings=LLMSettings(api_base=srv.api_base))
        assert len(srv.requests) == 13 and srv.batch_lines == []
        batch = analyze(batch_db, PRICED, settings=LLMSettings(api_base=srv.api_base, batch=True, poll_interval=0.05))
        assert len(srv.requests) == 13  # nothing went live
        assert [b["purpose"] for b in srv.batch_lines] == ["analysis"] * 12 + ["classification"]
        assert len(srv.batches) == 2
        # the same prompts: a live answer's cache key is a batch answer's
        assert sorted(q(live_db, "SELECT cache_key FROM llm_cache")) == sorted(q(batch_db, "SELECT cache_key FROM llm_cache"))
        again = analyze(batch_db, PRICED, settings=LLMSettings(api_base=srv.api_base, batch=True, poll_interval=0.05))
        assert len(srv.batch_lines) == 13 and len(srv.batches) == 2 and len(srv.requests) == 13
    assert labels(live_db) == labels(batch_db) and len(labels(batch_db)) == 12
    assert live.stats.requests == batch.stats.requests == 13 and again.stats.requests == 0
    assert again.analysed_now == 0 and again.batches == ""
    # every billed line is one llm_calls row with its batch, priced at batch prices (half of live)
    rows = q(batch_db, "SELECT batch_id, purpose, prompt_tokens, completion_tokens, cost_usd FROM llm_calls ORDER BY call_id")
    assert Counter(r[0] for r in rows) == {"batch_1": 12, "batch_2": 1}
    for _, _, pt, ct, cost in rows:
        assert cost == pytest.approx(pt * 0.075e-6 + ct * 0.3e-6)
    assert batch.stats.cost_usd == pytest.approx(sum(r[4] for r in rows))
    live_cost = q(live_db, "SELECT sum(cost_usd) FROM llm_calls")[0][0]
    assert batch.stats.cost_usd == pytest.approx(live_cost / 2)
    assert q(batch_db, "SELECT status, provider_status, n_requests FROM llm_batches ORDER BY submitted_at") == [
        ("collected", "completed", 12), ("collected", "completed", 1)]


def test_killed_between_submit_and_collect_resumes_without_paying_twice(tmp_db):
    seeded(tmp_db, 12)
    with FakeLLMServer() as srv:
        srv.hold_batches = True
        cmd, env = cli(tmp_db, srv.api_base, "--batch")
        proc = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while ("GET", "/v1/batches/batch_1") not in srv.api_calls:  # submitted, recorded, being polled
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert q(tmp_db, "SELECT batch_id, status, n_requests FROM llm_batches") == [("batch_1", "submitted", 12)]
        assert srv.batch_lines == [] and len(srv.batches) == 1

        # a plain re-run would pay for the same prompts again: it is refused
        refused = run(cmd, env)
        assert refused.returncode == 2
        assert "1 batch(es) submitted by an earlier run are not collected yet: batch_1 (12 requests to " \
               f"{PRICED}); run the command again with --resume" in refused.stderr
        assert len(srv.batches) == 1 and srv.requests == [] and len(srv.files) == 1

        srv.release_batches()
        resumed = run([*cmd, "--resume"], env)
        assert resumed.returncode == 0, resumed.stderr
        # stage 1 came from the first run's batch; stage 3 is the one new batch
        assert len(srv.batches) == 2 and srv.requests == []
        billed = Counter(b["custom_id"] for b in srv.batch_lines)
        assert len(billed) == 13 and set(billed.values()) == {1}
        assert "12/12 failures to analyse done (12 now)" in resumed.stdout

        after = run(cmd, env)  # everything collected: nothing is sent
        assert after.returncode == 0 and len(srv.batches) == 2 and len(srv.batch_lines) == 13 and srv.requests == []
        assert "0 requests sent" in after.stdout
    calls = q(tmp_db, "SELECT batch_id, count(*) FROM llm_calls GROUP BY 1 ORDER BY 1")
    assert calls == [("batch_1", 12), ("batch_2", 1)]
    assert q(tmp_db, "SELECT count(*) FROM analyses") == [(12,)]
    assert q(tmp_db, "SELECT count(*) FROM llm_batches WHERE status <> 'collected'") == [(0,)]


def _post_json(url: str, body: dict) -> dict:
    req = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(req) as r:
        return json.loads(r.read())


@pytest.mark.parametrize("created", [True, False])
def test_a_submission_cut_short_is_found_again_or_created_once(tmp_db, created):
    """Killed after the upload was recorded but before the batch id was: --resume finds the
    provider's batch by its input file (or creates it, when the provider never did)."""
    seeded(tmp_db, 3)
    with FakeLLMServer() as srv:
        # the first run, live: answers in the cache to build the same batch file from
        analyze(tmp_db, PRICED, settings=LLMSettings(api_base=srv.api_base))
        keys = [k for (k,) in q(tmp_db, "SELECT cache_key FROM llm_cache WHERE prompt_version = ?", [ANALYSIS_PROMPT_VERSION])]
        lines = [dict(b, messages=b["messages"]) for b in srv.bodies("analysis")]
        with write_session(tmp_db) as con:
            con.execute("DELETE FROM llm_cache")
            con.execute("DELETE FROM analyses")
            con.execute("DELETE FROM failure_labels")
        jsonl = "".join(json.dumps({"custom_id": k, "method": "POST", "url": "/v1/chat/completions", "body": b}) + "\n"
                        for k, b in zip(sorted(keys), lines))
        with srv._lock:
            fid = srv._new_file(jsonl.encode(), "in.jsonl", "batch")
        if created:
            _post_json(srv.api_base + "/batches", {"input_file_id": fid, "endpoint": "/v1/chat/completions",
                                                    "completion_window": "24h"})
        with write_session(tmp_db) as con:
            record_submission(con, "sub-1", fid, PRICED, "openai", srv.api_base,
                              [{"key": k, "prompt_version": ANALYSIS_PROMPT_VERSION, "purpose": "analysis", "reserved_usd": 0.0}
                               for k in keys], None)
        live_before = len(srv.requests)
        summary = analyze(tmp_db, PRICED, settings=LLMSettings(api_base=srv.api_base, resume=True, poll_interval=0.05))
        assert len(srv.batches) == 1  # found, or created once
        assert Counter(b["custom_id"] for b in srv.batch_lines) == Counter(keys)
        # the analyses come from the batch; only stage 3 goes live (its cache was deleted too)
        assert [b for b in srv.requests[live_before:] if "<failed_output>" in b["messages"][-1]["content"]] == []
    assert summary.analysed_now == 3
    assert q(tmp_db, "SELECT batch_id, status FROM llm_batches") == [("batch_1", "collected")]


def test_max_cost_holds_at_submission(tmp_db):
    seeded(tmp_db, 12)
    limit = 0.005
    # every answer bills all the completion tokens it may: the worst case is what is paid
    with FakeLLMServer(completion_tokens=100_000) as srv:
        summary = analyze(tmp_db, PRICED,
                          settings=LLMSettings(api_base=srv.api_base, batch=True, poll_interval=0.05, max_cost=limit))
    batches = q(tmp_db, "SELECT batch_id, requests, reserved_usd FROM llm_batches ORDER BY submitted_at")
    assert summary.stopped and summary.stopped.startswith(f"stopped by --max-cost ${limit:.4f}")
    spent = q(tmp_db, "SELECT sum(cost_usd) FROM llm_calls")[0][0]
    assert spent <= limit and summary.stats.cost_usd == pytest.approx(spent)
    worst = [r["reserved_usd"] for _, reqs, _ in batches for r in json.loads(reqs)]
    first = json.loads(batches[0][1])
    # the first batch holds as many requests as fit; one more would not have
    assert batches[0][2] == pytest.approx(sum(r["reserved_usd"] for r in first))
    assert batches[0][2] <= limit
    assert batches[0][2] + max(worst) > limit
    assert len(first) == Counter(b["batch"] for b in srv.batch_lines)["batch_1"] == 3
    # each line billed its worst case's completion tokens at batch prices
    assert all(b["body"]["max_completion_tokens"] == 4096 for b in srv.batch_lines)
    assert batch_price(PRICED, 1000, 4096) == pytest.approx(1000 * 0.075e-6 + 4096 * 0.3e-6)
    assert summary.analysed_now == len(srv.batch_lines) < 12


def test_a_provider_without_a_batch_api_is_refused_before_anything_is_sent(tmp_db):
    seeded(tmp_db, 2)
    with FakeLLMServer() as srv:
        cmd, env = cli(tmp_db, srv.api_base, "--batch")
        cmd[cmd.index(PRICED)] = "anthropic/claude-3-5-haiku-latest"
        r = run(cmd, env)
        assert srv.api_calls == [] and srv.requests == []
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.startswith("error: anthropic/claude-3-5-haiku-latest: --batch needs a provider whose batch API "
                               "litellm serves (openai, azure, hosted_vllm, litellm_proxy); anthropic is not one")
