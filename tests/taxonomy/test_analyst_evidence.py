"""The LLM analyst sees what the judge saw and may say "not the model's fault"; a second LLM
verifies its analyses. All against the real loopback server (tests/llm_server.py)."""

from __future__ import annotations

import json

import duckdb
import pytest
from scipy.stats import binomtest

from conftest import q, run_module
from evidence_logs import GRADER, INSTRUCTIONS, REFERENCE, SYSTEM, inspect_graded_log, jury_explanation, medhelm_suite
from ingest import ingest_paths
from ingest.options import ReadOptions
from core.verdicts import PassConfig
from llm_kit import MODEL, run
from llm_server import REJECTED_TITLES, FakeLLMServer, failed_output_of, title_for, titles_of
from page_kit import run_page
from taxonomy.context import MARGIN_TOKENS, token_counter
from taxonomy import LLMSettings
from taxonomy.verify import verify

VERIFIER = "openai/test-verifier"
MIXTRAL = "mistralai/mixtral-8x22b-instruct-v0.1"
GPT4O = "openai/gpt-4o-2024-05-13"


def prompts(srv) -> list[str]:
    return [b["messages"][-1]["content"] for b in srv.bodies("analysis")]


@pytest.fixture
def evidence_db(tmp_path, tmp_db):
    """The MedHELM-like suite (instructions, a jury per criterion) and the Inspect log (system
    message, a grader's explanation), ingested together."""
    ingest_paths([medhelm_suite(tmp_path), inspect_graded_log(tmp_path / "dose.json")], db=tmp_db,
                 options=ReadOptions(pass_config=PassConfig.build(thresholds=["aci_bench=4"])))
    return tmp_db


def test_every_safety_prompt_carries_the_judges_reasoning_and_the_pass_rule(safety_db, fake_llm):
    summary = run(safety_db, fake_llm, classifier="offline")
    failures = q(safety_db, """SELECT p.output_text, p.judge_notes, p.score FROM predictions p
                               WHERE NOT p.is_correct AND NOT p.infra_error""")
    assert summary.analysed_now == len(failures) == 29
    sent = prompts(fake_llm)
    assert len(sent) == 29  # one request per failure: no two share output and judges' words
    for output, notes, score in failures:
        prompt = next(p for p in sent if f"<failed_output>\n{output}\n</failed_output>" in p)
        for note in json.loads(notes):
            assert f"- [{note['judge']}] score {note['score']:g}: {note['explanation']}" in prompt
        assert f"<scoring>\nmetric sst_score: this output scored {score:g}; a pass needs at least 0.7" in prompt \
            or f"<scoring>\nmetric xst_score: this output scored {score:g}; a pass needs at least 0.7" in prompt
    # the safety runs have no instructions (adapter_spec's are empty): none is invented
    assert not any("<task_instructions" in p for p in sent)


def test_every_mmlu_prompt_carries_its_runs_instructions(mmlu_db, fake_llm):
    from store.analysis import failures
    from taxonomy.select import group_pairs

    model = "groq/llama3-8b-8192"
    run(mmlu_db, fake_llm, models=[model], classifier="offline")
    con = duckdb.connect(str(mmlu_db), read_only=True)
    expected = group_pairs(failures(con, [model]))
    con.close()
    sent = prompts(fake_llm)
    assert len(sent) == len(expected) > 0
    for members in expected.values():
        f = members[0]
        instructions = f["instructions"]
        assert instructions.startswith(f"The following are multiple choice questions (with answers) about {f['domain'].replace('_', ' ')}.")
        matching = [p for p in sent if f"<input>\n{f['input_text']}\n</input>" in p
                    and f"<failed_output>\n{f['output_text']}\n</failed_output>" in p]
        assert matching and all(f'<task_instructions note="what the harness told the model for every item">\n{instructions}\n'
                                "</task_instructions>" in p for p in matching)


def test_medhelm_like_and_inspect_prompts_carry_instructions_jury_and_grader(evidence_db, fake_llm):
    run(evidence_db, fake_llm, classifier="offline")
    sent = prompts(fake_llm)
    assert len(sent) == 4  # note-small id0 and id2, note-large id2, the dose question
    helm = [p for p in sent if INSTRUCTIONS in p]
    assert len(helm) == 3
    small0 = next(p for p in helm if "<failed_output>\nThe patient has knee pain.\n</failed_output>" in p)
    for judge in ("gpt", "llama"):
        for criterion in ("accuracy", "completeness", "clarity"):
            assert f"- [aci_bench/{judge} · {criterion}] score 2: {jury_explanation('org/note-small', 0, judge, criterion)}" in small0
    assert f"<reference_answers>\n- {REFERENCE[0]}\n</reference_answers>" in small0
    # the other model's passing note stands in for a worked solution
    assert '<correct_output_of_another_model n="1">\nHISTORY OF PRESENT ILLNESS\nTwo weeks of right knee pain' in small0
    assert ("<scoring>\nmetric jury_score: this output scored 2; a pass needs at least 4\n"
            "generation stopped: length; 512 output tokens of at most 512\n</scoring>") in small0
    # HELM's prompt is the instructions and the conversation: not repeated as a third field
    assert "<prompt_as_sent" not in small0
    dose = next(p for p in sent if SYSTEM in p)
    assert f'<task_instructions note="what the harness told the model for every item">\n{SYSTEM}\n</task_instructions>' in dose
    assert f"- [model_graded_qa] score I: {GRADER}\n  grading_model: openai/grader-1" in dose
    assert "generation stopped: max_tokens; 64 output tokens of at most 64" in dose
    # the rendered conversation (system and user message) only repeats the instructions and the input
    assert "<prompt_as_sent" not in dose and "was read as the answer" not in dose


def test_nothing_under_the_budget_is_cut_and_an_over_budget_prompt_is_cut_by_the_rule(evidence_db, tmp_path, fake_llm):
    import shutil

    small_window = tmp_path / "small-window.duckdb"
    shutil.copy(evidence_db, small_window)
    run(evidence_db, fake_llm, classifier="offline")
    assert q(evidence_db, "SELECT count(*), count(context_note) FROM analyses") == [(4, 0)]
    assert not any("cut by Faultline" in p for p in prompts(fake_llm))
    count = token_counter(MODEL)
    sizes = sorted((sum(count(m["content"]) for m in b["messages"]), failed_output_of(b)) for b in fake_llm.bodies("analysis"))
    # a budget between the two largest prompts: only the largest is over it
    budget = (sizes[-1][0] + sizes[-2][0]) // 2
    assert sizes[-1][0] > budget >= sizes[-2][0]
    fake_llm.requests.clear()
    max_tokens = 300
    run(small_window, fake_llm, model="openai/small-window", classifier="offline", max_tokens=max_tokens,
        context_tokens=budget + max_tokens + MARGIN_TOKENS)
    notes = q(small_window, """SELECT p.output_text, a.context_note FROM analyses a
                               JOIN predictions p USING (run_id, instance_id, train_trial_index) ORDER BY 1""")
    cut = [(out, note) for out, note in notes if note]
    assert [out for out, _ in cut] == [sizes[-1][1]]
    window = budget + max_tokens + MARGIN_TOKENS
    assert cut[0][1].startswith(f"cut to fit the {budget:,}-token budget ({window:,}-token window from --context-tokens): "
                                f"the prompt had {sizes[-1][0]:,} tokens; largest fields first, head and tail kept: ")
    big = next(b for b in fake_llm.bodies("analysis") if "cut by Faultline" in b["messages"][-1]["content"])
    assert sum(count(m["content"]) for m in big["messages"]) <= budget


def test_an_empty_answer_is_no_model_error_never_retried_never_classified_and_not_a_compare_category(safety_db, llm_env, monkeypatch):
    # the scripted analyst finds no error in the four e-mails that start with "Subject:"
    with FakeLLMServer(no_error=lambda out: out.lstrip().startswith("Subject:")) as srv:
        summary = run(safety_db, srv)
        sent_classifications = [t for b in srv.bodies("classification") for t in titles_of(b)]
    assert srv.count("analysis") == 29 and summary.unanalysed == 0  # empty answers are valid, not retried
    assert summary.no_model_error == 5
    assert "5 found not to be a model error" in summary.line()
    rows = q(safety_db, """SELECT r.model, l.instance_id, l.category, l.error_title, l.error_summary, l.no_model_error
                           FROM failure_labels l JOIN runs r USING (run_id) WHERE l.no_model_error IS NOT NULL ORDER BY 1, 2""")
    assert rows == [(m, i, "No Model Error", "No Model Error", "The analyst found no error.", "the analyst found no error")
                    for m, i in [(MIXTRAL, "id72"), (MIXTRAL, "id74"), (MIXTRAL, "id99"), (GPT4O, "id59"), (GPT4O, "id72")]]
    assert "No Model Error" not in sent_classifications
    assert q(safety_db, "SELECT count(*) FROM classifications WHERE error_title = 'No Model Error'") == [(0,)]

    out = run_module("stats", "compare", MIXTRAL, GPT4O, "--db", safety_db, "--datasets", "simple_safety_tests",
                     "--analyst", MODEL, "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    cats = {c["category"]: c for c in report["categories"]}
    assert "No Model Error" not in cats
    # mixtral: 8 failures, 3 not its fault → 5 model errors; gpt-4o: 3 failures, 2 not its fault → 1
    assert sum(c["a_count"] for c in cats.values()) == 5 and sum(c["b_count"] for c in cats.values()) == 1
    assert all(c["a_share"] == c["a_count"] / 5 for c in cats.values())

    # /taxonomy counts them for the benchmark's creators, question by question
    at = _page(monkeypatch, safety_db, "pages/taxonomy.py", analyst=MODEL)
    assert "**5 failures look like scoring or reference problems**" in [m.value for m in at.markdown]
    suspects = next(d.value for d in at.dataframe if "why" in d.value.columns)
    assert sorted(zip(suspects["dataset"], suspects["instance_id"], suspects["failures"])) == [
        ("simple_safety_tests", "id59", 1), ("simple_safety_tests", "id72", 2), ("simple_safety_tests", "id74", 1),
        ("simple_safety_tests", "id99", 1)]


def _page(monkeypatch, db, page: str, **params):
    monkeypatch.setenv("FAULTLINE_DB", str(db))
    monkeypatch.delenv("FAULTLINE_READ_ONLY", raising=False)
    return run_page(page, **params)


def test_verify_reports_the_acceptance_rate_a_hand_count_gives(safety_db, fake_llm):
    run(safety_db, fake_llm)
    titles = [t for (t,) in q(safety_db, "SELECT error_title FROM failure_labels WHERE analyst = ?", [MODEL])]
    # by hand: the scripted verifier rejects the analyses titled with a REJECTED_TITLES title
    rejected = sum(t in REJECTED_TITLES for t in titles)
    assert (len(titles), rejected) == (29, 8)
    fake_llm.requests.clear()
    summary = verify(safety_db, VERIFIER, settings=LLMSettings(api_base=fake_llm.api_base, timeout=5.0, backoff_s=0.01))
    assert (summary.analyst, summary.n, summary.accepted) == (MODEL, 29, 21)
    assert summary.rate == 21 / 29
    ci = binomtest(21, 29).proportion_ci(method="wilson")
    assert summary.ci == (ci.low, ci.high)
    assert (round(ci.low, 4), round(ci.high, 4)) == (0.5428, 0.8530)
    assert summary.line().startswith(f"{VERIFIER} accepted 21/29 analyses of {MODEL} (72.4%, 95% Wilson CI 54.3% to 85.3%)")
    assert fake_llm.count("verification") == 29
    stored = q(safety_db, """SELECT v.accepted, l.error_title FROM verifications v
                             JOIN failure_labels l USING (run_id, instance_id, train_trial_index, analyst)
                             WHERE v.analysed_at = l.analysed_at""")
    assert len(stored) == 29 and all(acc == (t not in REJECTED_TITLES) for acc, t in stored)
    assert q(safety_db, "SELECT count(*) FROM llm_calls WHERE purpose = 'verification'") == [(29,)]
    # the verifier saw the failure's evidence and the analysis, quotes checked
    body = fake_llm.bodies("verification")[0]["messages"][-1]["content"]
    assert "<judge_notes" in body and "<analysis_under_review>\nerror title: " in body
    assert '"a paraphrase the model never wrote" [NOT FOUND in the output]' in body and "[verified in the output]" in body

    # a re-run sends nothing and reports the same rate from the store
    again = verify(safety_db, VERIFIER, settings=LLMSettings(api_base=fake_llm.api_base, timeout=5.0))
    assert (again.n, again.accepted, again.previously_verified, again.stats.requests) == (29, 21, 29, 0)
    assert fake_llm.count("verification") == 29

    # the CLI prints the same numbers as JSON
    out = run_module("taxonomy", "verify", "--verifier", VERIFIER, "--db", safety_db, "--api-base", fake_llm.api_base,
                     "--json", env=_env())
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {"analyst": MODEL, "verifier": VERIFIER, "n": 29, "accepted": 21, "rate": 21 / 29,
                                      "ci_low": ci.low, "ci_high": ci.high, "selected": 29, "not_verified": 0}



def test_verify_batch_gives_the_live_verdicts_through_the_batch_api_and_shares_the_cache(safety_db, fake_llm):
    """`verify --batch`: the same 29 verdicts as live, every request a line of one batch (none
    sent live), and a later live run finds them all in the cache."""
    run(safety_db, fake_llm)
    fake_llm.requests.clear()
    summary = verify(safety_db, VERIFIER,
                     settings=LLMSettings(api_base=fake_llm.api_base, timeout=5.0, batch=True, poll_interval=0.05))
    assert (summary.n, summary.accepted) == (29, 21)
    assert fake_llm.count("verification") == 0 and len(fake_llm.batches) == 1
    assert [b["purpose"] for b in fake_llm.batch_lines] == ["verification"] * 29
    assert summary.batches.startswith("batches: 1 submitted, 1 collected")
    assert q(safety_db, "SELECT count(*), count(batch_id) FROM llm_calls WHERE purpose = 'verification'") == [(29, 29)]
    again = verify(safety_db, VERIFIER, settings=LLMSettings(api_base=fake_llm.api_base, timeout=5.0))
    assert (again.n, again.accepted, again.stats.requests, fake_llm.count("verification")) == (29, 21, 0, 0)

def _env() -> dict:
    import os

    return {**os.environ, "OPENAI_API_KEY": "sk-test-not-a-real-key", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}


def test_verify_sample_is_fixed_and_max_cost_stops_before_sending(safety_db, fake_llm):
    run(safety_db, fake_llm)
    fake_llm.requests.clear()
    first = verify(safety_db, VERIFIER, sample=10, settings=LLMSettings(api_base=fake_llm.api_base, timeout=5.0))
    assert (first.selected, first.n, fake_llm.count("verification")) == (10, 10, 10)
    # the same 10 again: nothing sent
    again = verify(safety_db, VERIFIER, sample=10, settings=LLMSettings(api_base=fake_llm.api_base, timeout=5.0))
    assert (again.n, again.stats.requests) == (10, 0)
    # a budget too small for one request: stopped before anything is sent, exit 3
    out = run_module("taxonomy", "verify", "--verifier", VERIFIER, "--db", safety_db, "--api-base", fake_llm.api_base,
                     "--price", VERIFIER, "1", "1", "--max-cost", "0.000001", env=_env())
    assert out.returncode == 3, out.stderr
    assert "stopped by --max-cost" in out.stderr and fake_llm.count("verification") == 10
    assert q(safety_db, "SELECT count(*) FROM verifications") == [(10,)]


def test_verify_refuses_the_offline_verifier_and_an_unknown_analyst(safety_db, fake_llm):
    out = run_module("taxonomy", "verify", "--verifier", "offline", "--db", safety_db)
    assert out.returncode == 2 and "--verifier must be a litellm model" in out.stderr
    run(safety_db, fake_llm, classifier="offline")
    out = run_module("taxonomy", "verify", "--verifier", VERIFIER, "--db", safety_db, "--analyst", "nobody", env=_env())
    assert out.returncode == 2 and f"unknown analyst 'nobody'; analysts with results: {MODEL}" in out.stderr


def test_instances_page_marks_verdicts_and_unverified_quotes(safety_db, fake_llm, monkeypatch):
    run(safety_db, fake_llm)
    verify(safety_db, VERIFIER, settings=LLMSettings(api_base=fake_llm.api_base, timeout=5.0))
    at = _page(monkeypatch, safety_db, "pages/instances.py", instance="simple_safety_tests:id72", analyst=MODEL)
    out = q(safety_db, """SELECT p.output_text FROM predictions p JOIN runs r USING (run_id)
                          WHERE r.model = ? AND p.instance_id = 'id72'""", [MIXTRAL])[0][0]
    accepted = title_for(out) not in REJECTED_TITLES
    captions = [c.value for c in at.caption]
    verdicts = [c for c in captions if c.startswith("verified by")]
    assert len(verdicts) == 2  # mixtral's and gpt-4o's failures on id72
    assert any(c.startswith("verified by openai/test\\-verifier: " + ("accepted" if accepted else "REJECTED")) for c in verdicts)
    assert captions.count("evidence (UNVERIFIED: not in the output verbatim; the analyst paraphrased)") == 2


def test_suspect_items_join_no_model_error_failures_and_unanimous_wrong_answers(tmp_db):
    from seed_store import seed
    from store import write_session
    from store.agreement import suspect_items
    from store.analysis import refresh_labels

    rows = []
    for model, q1, q2, q3_ok in (("M1", "Lyon", "x", False), ("M2", "Lyon", "y", True), ("M3", " Lyon ", "z", True)):
        rows += [dict(model=model, dataset="geo", instance_id="q1", is_correct=False, output=q1, title="Names the wrong city"),
                 dict(model=model, dataset="geo", instance_id="q2", is_correct=False, output=q2, title="Wrong"),
                 dict(model=model, dataset="geo", instance_id="q3", is_correct=q3_ok, output="40.00",
                      title=None if q3_ok else "No Model Error")]
    seed(tmp_db, rows)
    with write_session(tmp_db) as con:
        con.execute("UPDATE analyses SET no_model_error = 'the output matches a reference' WHERE error_title = 'No Model Error'")
        con.execute("UPDATE analyses SET no_model_error = 'the reference is wrong or ambiguous' "
                    "WHERE error_title = 'Names the wrong city' AND run_id LIKE '%M2%'")
        refresh_labels(con)
        frame = suspect_items(con, "offline")
        without_analyst = suspect_items(con, None)
    assert frame.to_dicts() == [
        # every model answers "Lyon" (one with spaces around it); M2's failure was also found not its fault
        {"dataset": "geo", "instance_id": "q1", "failures": 3,
         "why": "every model fails with the same answer (3 models); not a model error: the reference is wrong or ambiguous",
         "answer": "Lyon", "models": "M1, M2, M3"},
        {"dataset": "geo", "instance_id": "q3", "failures": 1, "why": "not a model error: the output matches a reference",
         "answer": None, "models": "M1"},
    ]
    assert sum(frame["failures"]) == 4
    assert without_analyst["instance_id"].to_list() == ["q1"]
