"""The LLM analyst and classifier against a real OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time

import duckdb
import pytest

from conftest import ROOT
from llm_server import FakeLLMServer, failed_output_of, server_process, titles_of
from llm_kit import MODEL, run
from taxonomy import LLMSettings, TaxonomyError, analyze, classify_titles
from taxonomy.journal import journal_path
from taxonomy.llm import LLMError

def q(db, sql, params=()):
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql, list(params)).fetchall()
    finally:
        con.close()


def check_complete(db, analyst=MODEL, n=29):
    """Every failure analysed once and classified once, with the taxonomy version."""
    rows = q(db, "SELECT category, taxonomy_version FROM failures WHERE analyst = ?", [analyst])
    assert len(rows) == n
    assert all(c is not None and v == "erroratlas-v1" for c, v in rows)
    assert q(db, "SELECT count(*) FROM analyses WHERE analyst = ?", [analyst])[0][0] == n
    assert q(db, """SELECT count(*) FROM (SELECT 1 FROM classifications
                    GROUP BY error_title, taxonomy_version, classifier HAVING count(*) > 1)""")[0][0] == 0


def test_faults_are_retried_and_everything_ends_analysed_and_classified(safety_db, fake_llm):
    fake_llm.queue("analysis", "429", "500", "truncated", "slow")
    fake_llm.queue("classification", "unknown_category", "missing_title")
    summary = run(safety_db, fake_llm)

    check_complete(safety_db)
    titles = q(safety_db, "SELECT count(DISTINCT error_title) FROM analyses")[0][0]
    assert summary.analysed_now == 29 and summary.unanalysed == 0
    # 29 distinct failures + 4 retries (429, 500, truncated JSON, timeout)
    assert fake_llm.count("analysis") == 33
    # one batch, then a follow-up for the title with an unknown category, then for the missing one
    assert fake_llm.count("classification") == math.ceil(titles / 50) + 2
    # every request the server saw is in llm_calls, and only those
    calls = dict(q(safety_db, "SELECT status, count(*) FROM llm_calls GROUP BY status"))
    assert calls == {"ok": 29 + 3, "error": 3, "invalid": 1}
    assert summary.stats.requests == len(fake_llm.requests) == sum(calls.values())
    assert q(safety_db, "SELECT count(*) FROM llm_cache")[0][0] == 29 + 3
    assert q(safety_db, "SELECT count(*) FROM classifications WHERE is_fallback")[0][0] == 0
    # the retry after the 429 waited for its Retry-After (1 s)
    i429 = fake_llm.statuses.index(429)
    retry = next(i for i in range(i429 + 1, len(fake_llm.requests)) if fake_llm.requests[i] == fake_llm.requests[i429])
    assert fake_llm.times[retry] - fake_llm.times[i429] >= 0.95

    sent = len(fake_llm.requests)
    again = run(safety_db, fake_llm)
    assert again.stats.requests == 0 and len(fake_llm.requests) == sent
    check_complete(safety_db)


def test_rejected_key_stops_the_run_and_is_never_stored(safety_db, fake_llm):
    fake_llm.queue("analysis", *["401"] * 29)
    with pytest.raises(LLMError) as err:
        run(safety_db, fake_llm, concurrency=2)
    assert "AuthenticationError" in err.value.message
    assert "sk-test-not-a-real-key" not in err.value.message
    # the requests already in flight when the first 401 came back, and no more
    assert 1 <= len(fake_llm.requests) <= 2
    errors = q(safety_db, "SELECT error FROM llm_calls")
    assert len(errors) == len(fake_llm.requests)
    assert all("sk-test" not in e and "[redacted]" in e for (e,) in errors)
    assert q(safety_db, "SELECT count(*) FROM analyses")[0][0] == 0


def test_rerun_is_served_from_the_cache(safety_db, fake_llm):
    first = run(safety_db, fake_llm, classifier="offline")
    sent = len(fake_llm.requests)
    assert sent == first.stats.requests == 29
    # forget the results, keep the cache: the re-run rebuilds them without sending anything
    con = duckdb.connect(str(safety_db))
    con.execute("DELETE FROM analyses")
    con.close()
    second = run(safety_db, fake_llm, classifier="offline")
    assert (second.stats.requests, second.stats.cache_hits, second.analysed_now) == (0, 29, 29)
    assert len(fake_llm.requests) == sent
    check_complete(safety_db)


def test_identical_pairs_share_one_request(mmlu_db, fake_llm):
    summary = run(mmlu_db, fake_llm, concurrency=8, models=["groq/llama3-8b-8192", "together/Llama-3-8b-chat-hf"])
    failures, pairs = q(mmlu_db, """
        SELECT count(*), count(DISTINCT (i.input_text, p.output_text))
        FROM predictions p JOIN runs r USING (run_id) JOIN instances i USING (run_id, instance_id)
        WHERE NOT p.is_correct AND r.model IN ('groq/llama3-8b-8192', 'together/Llama-3-8b-chat-hf')""")[0]
    assert pairs < failures
    assert fake_llm.count("analysis") == pairs
    assert summary.analysed_now == failures
    assert q(mmlu_db, "SELECT count(*), count(DISTINCT pair_hash) FROM analyses")[0] == (failures, pairs)


def test_stage1_prompt_carries_correct_outputs_of_other_models(safety_db, fake_llm):
    run(safety_db, fake_llm, classifier="offline")
    failed = q(safety_db, """
        SELECT r.dataset, p.instance_id, r.model, p.output_text FROM predictions p JOIN runs r USING (run_id)
        WHERE NOT p.is_correct""")
    by_output = {failed_output_of(b): b for b in fake_llm.bodies("analysis")}
    with_others = 0
    for dataset, instance_id, model, output in failed:
        others = q(safety_db, """
            SELECT p.output_text FROM predictions p JOIN runs r USING (run_id)
            WHERE p.is_correct AND r.dataset = ? AND p.instance_id = ? AND r.model <> ?
            ORDER BY r.model""", [dataset, instance_id, model])
        body = by_output[output]
        prompt = body["messages"][-1]["content"]
        assert prompt.count("<correct_output_of_another_model") == min(3, len(others))
        for (text,) in others[:3]:
            assert text.strip()[:200] in prompt
        with_others += bool(others)
        assert body["response_format"]["type"] == "json_schema"
    assert with_others >= 20


def test_a_title_missing_from_every_answer_falls_back_to_other(safety_db, fake_llm):
    fake_llm.queue("classification", "missing_title", "missing_title", "missing_title")
    summary = run(safety_db, fake_llm)
    batches = fake_llm.bodies("classification")
    assert len(batches) == 3
    first_title = titles_of(batches[0])[0]
    assert titles_of(batches[1]) == titles_of(batches[2]) == [first_title]
    rows = q(safety_db, "SELECT error_title, category, is_fallback FROM classifications")
    assert [(t, c) for t, c, fb in rows if fb] == [(first_title, "Other")]
    assert summary.fallbacks == 1
    check_complete(safety_db)


def test_max_cost_stops_before_exceeding_and_resumes(safety_db, fake_llm):
    # a priced model name, served by the local server: litellm prices the tokens it reports
    model = "openai/gpt-4o-mini"
    first = run(safety_db, fake_llm, model=model, concurrency=1, max_cost=0.004)
    assert first.stopped and "--max-cost" in first.stopped
    assert 0 < first.stats.requests < 29
    assert first.stats.cost_usd <= 0.004
    spent = q(safety_db, "SELECT sum(cost_usd), count(*) FROM llm_calls")[0]
    assert spent[0] == pytest.approx(first.stats.cost_usd) and spent[1] == first.stats.requests
    assert q(safety_db, "SELECT count(*) FROM analyses")[0][0] == first.stats.requests
    second = run(safety_db, fake_llm, model=model, concurrency=4, max_cost=1.0)
    assert second.stopped is None
    assert fake_llm.count("analysis") == 29
    check_complete(safety_db, analyst=model)


def test_throughput_at_concurrency_8(safety_db, tmp_path, llm_env):
    # best of up to five fresh runs: the machine is shared, and one slow run says more about
    # the neighbours than about the pipeline
    rates = []
    with server_process(latency=0.2) as api_base:
        for attempt in range(5):
            db = tmp_path / f"run{attempt}.duckdb"
            shutil.copy(safety_db, db)
            summary = analyze(db, MODEL, classifier="offline", settings=LLMSettings(api_base=api_base, concurrency=8))
            assert summary.analysed_now == 29 and summary.stats.requests == 29
            rates.append(summary.analysed_now / summary.analysis_seconds)
            if rates[-1] >= 25:
                break
    print("stage-1 failures/s at concurrency 8, 200 ms latency:", [round(r, 1) for r in rates])
    assert max(rates) >= 25


def test_llm_classify_titles_is_cached_per_title(tmp_db, fake_llm):
    titles = ["Refuses a safe request", "Invents a source that does not exist"]
    cats, summary = classify_titles(titles, MODEL, db=tmp_db, settings=LLMSettings(api_base=fake_llm.api_base))
    assert cats == {"Refuses a safe request": "Refusal", "Invents a source that does not exist": "Hallucination"}
    assert summary.stats.requests == 1
    cats2, summary2 = classify_titles(titles + ["Omits a required step of the answer"], MODEL, db=tmp_db,
                                      settings=LLMSettings(api_base=fake_llm.api_base))
    assert cats2["Omits a required step of the answer"] == "Incomplete Content"
    assert summary2.stats.requests == 1
    assert titles_of(fake_llm.requests[-1]) == ["Omits a required step of the answer"]


def _cli(db, api_base, *extra):
    env = {**os.environ, "OPENAI_API_KEY": "sk-test-not-a-real-key", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    return [sys.executable, "-m", "taxonomy", "analyze", "--db", str(db), "--analyst", MODEL,
            "--api-base", api_base, *extra], env


def test_killed_run_resumes_without_repeating_a_finished_request(safety_db, llm_env):
    with FakeLLMServer(latency=0.3) as srv:
        cmd, env = _cli(safety_db, srv.api_base, "--concurrency", "2")
        proc = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 120
        while srv.count("analysis") < 10 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert proc.returncode == -signal.SIGKILL
        sent_before = len(srv.requests)

        done = q(safety_db, "SELECT DISTINCT p.output_text FROM analyses a JOIN predictions p USING (run_id, instance_id, train_trial_index)")
        cached = q(safety_db, "SELECT count(*) FROM llm_cache WHERE prompt_version = 'stage1-v2'")[0][0]
        assert 0 < len(done) == cached < 29
        # answers received but not yet committed when the process died are in the journal
        journal = journal_path(safety_db)
        lines = journal.read_text().splitlines() if journal.exists() else []
        journaled = {row[0] for line in lines for row in json.loads(line)["cache"]}
        kept = len(journaled | {k for (k,) in q(safety_db, "SELECT cache_key FROM llm_cache")})

        cmd, env = _cli(safety_db, srv.api_base, "--concurrency", "4")
        second = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert second.returncode == 0, second.stderr
        resent = [failed_output_of(b) for b in srv.requests[sent_before:] if "<failed_output>" in b["messages"][-1]["content"]]
        assert len(resent) == 29 - kept
        assert not {o for (o,) in done} & set(resent)
        assert second.stdout.startswith("29/29 failures to analyse done")
    check_complete(safety_db)


def test_custom_taxonomy_is_recorded_and_used(safety_db, fake_llm, tmp_path):
    mine = tmp_path / "safety.yaml"
    mine.write_text(
        "version: safety-v1\nname: Safety review\ncategories:\n"
        + "".join(f"  - {{name: {c}, description: d}}\n" for c in [
            "Policy Violation", "Refusal", "Question Misinterpretation", "Calculation Error",
            "Factual Error", "Hallucination", "Incomplete Content"])
    )
    run(safety_db, fake_llm, taxonomy_file=str(mine))
    rows = q(safety_db, "SELECT DISTINCT taxonomy_version FROM failures")
    assert rows == [("safety-v1",)]
    assert q(safety_db, "SELECT source FROM taxonomies WHERE taxonomy_version = 'safety-v1'") == [(str(mine),)]
    assert q(safety_db, "SELECT count(*) FROM classifications WHERE is_fallback")[0][0] == 0
    # the same version with other categories is refused, naming the file
    mine.write_text("version: safety-v1\ncategories: [Refusal]\n")
    with pytest.raises(TaxonomyError, match="already recorded with different categories"):
        run(safety_db, fake_llm, taxonomy_file=str(mine))
    with pytest.raises(TaxonomyError, match="offline classifier"):
        mine.write_text("version: safety-v2\ncategories: [Refusal]\n")
        run(safety_db, fake_llm, taxonomy_file=str(mine), classifier="offline")


def test_a_failure_whose_requests_keep_failing_is_left_for_the_next_run(safety_db, fake_llm):
    fake_llm.queue("analysis", *["500"] * 6)
    first = run(safety_db, fake_llm, concurrency=1, classifier="offline")
    assert (first.unanalysed, first.analysed_now) == (1, 28)
    assert first.stats.requests == 6 + 28 and first.stats.failed_requests == 6
    assert "1 without a valid answer" in first.line()
    assert q(safety_db, "SELECT count(*) FROM analyses")[0][0] == 28
    second = run(safety_db, fake_llm, concurrency=1, classifier="offline")
    assert (second.unanalysed, second.analysed_now, second.stats.requests) == (0, 1, 1)
    check_complete(safety_db)
