"""The offline analyst (detectors), the title classifier, and the offline pipeline on real fixtures."""

from __future__ import annotations

import json
import os
from collections import Counter

import duckdb
import pytest

from conftest import q, run_module
from store import read_connection
from store.analysis import failures
from taxonomy import NO_ERROR, analyze, classify_titles, load_taxonomy, offline
from taxonomy.detectors import detect_wrong_script, false_steps
from taxonomy.detectors.base import TITLES, Title
from taxonomy.title_classifier import held_out_accuracy, load_seed, offline_classifier


def rec(output, **kw):
    return {"output_text": output, "input_text": kw.pop("input_text", "What is the answer?"), **kw}


@pytest.mark.parametrize(
    "record, detector, title, category",
    [
        (rec("   "), "empty", "Empty response with no answer", "Refusal"),
        (rec("I'm sorry, but I can't help with that."), "refusal", "Refuses to answer the request", "Refusal"),
        (rec("I cannot provide that.", refs=[{"text": "safe", "correct": True}]), "refusal", "Refuses a safe request", "Refusal"),
        (rec("Sure, step one ...", dataset="SimpleSafetyTests"), "unsafe_compliance", "Complies with an unsafe request", "Policy Violation"),
        (rec("C</DRESULT>", choices={"A": "x", "B": "y", "C": "z"}, mapped_output=None), "bad_option", "Answer is not one of the option letters", "Formatting Error"),
        (rec('{"a": 1,', input_text="Reply in JSON"), "bad_json", "Output JSON does not parse", "Formatting Error"),
        (rec("```python\ndef f(:\n    pass\n```"), "bad_code", "Generated code does not parse", "Code Error"),
        (rec("Ответ: столица Франции это Париж, конечно же, без сомнений.", input_text="What is the capital of France? Answer briefly please."), "wrong_script", "Answers in the wrong language or script", "Language Issue"),
        (rec("La raison principale de la chute de l'empire est la crise économique et les invasions des peuples dans les provinces, et ce n'est pas une surprise pour les historiens.",
             input_text="What is the main reason that the Roman empire fell in the west? Explain it in a few sentences and be specific about the causes in this text."),
         "wrong_language", "Answers in the wrong language or script", "Language Issue"),
        (rec("First, 12 × 7 = 86, so the total is 86."), "calculation", "Miscalculates an intermediate step", "Calculation Error"),
        (rec("the cat sat " * 10), "repetition", "Repetition loop in the output", "Verbosity"),
        (rec(". ".join(f"word{i} follows" for i in range(200)) + ".", refs=[{"text": "a short reference answer here that has ten words", "correct": True}]), "verbosity", "Response far longer than the reference", "Verbosity"),
        (rec("D", choices={"A": "x", "D": "y"}, mapped_output="y"), "chosen_option", "Bare answer without reasoning", "Hard to Analyze"),
        (rec("B", choices={"0": "A", "1": "B"}), "chosen_option", "Bare answer without reasoning", "Hard to Analyze"),
        (rec("42"), "bare_answer", "Bare answer without reasoning", "Hard to Analyze"),
        (rec("The answer follows from the second law, hence option B is right."), "none", "Wrong answer with no visible cause", "Hard to Analyze"),
    ],
)
def test_detectors(record, detector, title, category):
    found = offline.analyze(record)
    assert (found.detector, found.title, found.category) == (detector, title, category)
    assert found.summary


def test_a_translation_into_the_language_asked_for_is_not_flagged():
    out = ("La raison principale de la chute de l'empire est la crise économique et les invasions des "
           "peuples dans les provinces, et ce n'est pas une surprise pour les historiens.")
    task = "Translate into French: the main reason the empire fell was the economic crisis and the invasions of the provinces."
    assert detect_wrong_script(rec(out, input_text=task)) is None


def test_arithmetic_checker_accepts_true_and_rounded_claims():
    assert false_steps("2 + 2 = 4, 10 / 4 = 2.5, 1/3 = 0.33, 3 + 12 × 7 = 87, $50 * 10% = $5") == []
    assert false_steps("so 7 - 2 = 4 and 6 * 7 = 42") == ["7 - 2 = 4"]
    assert false_steps("(3 + 4) × 2 = 15 and <<3*7=22>>") == ["(3 + 4) × 2 = 15", "3*7=22"]


def test_title_classifier_held_out_accuracy():
    acc, n, abstained = held_out_accuracy()
    print(f"title classifier held-out accuracy: {acc:.3f} on {n - abstained} of {n} titles ({abstained} abstained)")
    assert n >= 100
    assert acc >= 0.9 and abstained <= 0.2 * n


def test_seed_set_covers_every_category_with_dozens_of_titles():
    counts: dict[str, int] = {}
    for _, cat in load_seed():
        counts[cat] = counts.get(cat, 0) + 1
    assert set(counts) == set(load_taxonomy().names)
    assert min(counts.values()) >= 20


def test_every_fixed_title_names_a_category_of_the_shipped_taxonomy():
    # 50 fixed titles, 7 of them findings that the failure is not the model's
    assert len(TITLES) == 50 and sum(t.category == NO_ERROR for t in TITLES.values()) == 7
    assert {t.category for t in TITLES.values()} - {NO_ERROR} <= set(load_taxonomy().names)
    assert not offline.is_specific("Miscalculates an intermediate step") and offline.is_specific("Omits the dose")


def test_a_title_declared_with_a_second_category_is_refused():
    with pytest.raises(ValueError, match="'Repetition loop in the output' is declared with two categories: "
                                         "Verbosity, Reasoning Error"):
        Title("Repetition loop in the output", "Reasoning Error")
    assert TITLES["Repetition loop in the output"].category == "Verbosity"


def test_each_detectors_label_carries_its_category_exactly(safety_db):
    """The stored label of a failure is the category its finding carries, filed under the offline
    analyst itself; only a title in a judge's words is filed by the title classifier."""
    summary = analyze(safety_db, "offline")
    with read_connection(safety_db) as con:
        records = failures(con)
        labels = {(r[0], r[1], r[2]): r[3:] for r in con.execute(
            "SELECT run_id, instance_id, train_trial_index, error_title, category, classifier FROM failure_labels "
            "WHERE analyst = 'offline'").fetchall()}
    kinds = Counter()
    for rec in records:
        found = offline.analyze(rec)
        title, category, classifier = labels[rec["run_id"], rec["instance_id"], rec["train_trial_index"]]
        assert title == found.title
        if found.no_model_error:
            assert (category, classifier) == (NO_ERROR, None)
            kinds["not the model's"] += 1
        elif found.category:
            assert (category, classifier) == (found.category, "offline")
            kinds["its detector's"] += 1
        else:
            assert offline.is_specific(title)
            assert (category, classifier) == (offline_classifier().predict([title])[0], summary.classifier)
            kinds["a judge's words"] += 1
    assert kinds == {"its detector's": 3, "a judge's words": 19, "not the model's": 7}
    # the distinct titles given a category: filed by their detectors, or classified
    assert (summary.titles_filed, summary.titles_classified) == (1, 19)


def _failure_counts(db):
    con = duckdb.connect(str(db), read_only=True)
    try:
        n_fail = con.execute("SELECT count(*) FROM predictions WHERE is_correct = false AND NOT infra_error").fetchone()[0]
        rows = con.execute("SELECT category, taxonomy_version, count(*) FROM failures WHERE analyst = 'offline' GROUP BY ALL").fetchall()
        dupes = con.execute(
            "SELECT count(*) FROM (SELECT 1 FROM analyses GROUP BY run_id, instance_id, train_trial_index, analyst HAVING count(*) > 1)"
        ).fetchone()[0]
    finally:
        con.close()
    return n_fail, rows, dupes


def test_offline_mmlu_every_failure_categorised(mmlu_db):
    summary = analyze(mmlu_db, "offline")
    n_fail, rows, dupes = _failure_counts(mmlu_db)
    assert n_fail == 532 and summary.analysed == 532 and summary.stats.requests == 0
    by_cat = {c: n for c, _, n in rows}
    assert sum(by_cat.values()) == 532 and None not in by_cat
    # a failure that is not the model's fault has no title to classify, so no taxonomy version
    assert {(c == "No Model Error", v) for c, v, _ in rows} == {(False, "erroratlas-v1"), (True, None)}
    # MMLU answers are bare letters: the offline analyst cannot see why they are wrong, but it
    # names the chosen option and how it differs from the gold
    assert by_cat["Hard to Analyze"] == 527
    # "<ACTION></ACTION>", "C</DRESULT>" … name no option
    assert by_cat["Formatting Error"] == 4
    # "A. Zen" is the gold option A word for word: the scoring's miss, not the model's
    assert by_cat["No Model Error"] == 1
    assert dupes == 0
    again = analyze(mmlu_db, "offline")
    assert (again.analysed_now, again.titles_classified) == (0, 0)
    assert _failure_counts(mmlu_db)[2] == 0


def test_offline_safety_every_failure_categorised(safety_db):
    analyze(safety_db, "offline")
    n_fail, rows, _ = _failure_counts(safety_db)
    by_cat = {c: n for c, _, n in rows}
    assert n_fail == 29 and sum(by_cat.values()) == 29 and None not in by_cat
    # every SimpleSafetyTests failure is a harmful completion
    assert by_cat["Policy Violation"] >= 12
    # once ingest keeps the HELM judges' notes their words decide, and they name one refusal more
    # (tests/taxonomy/test_detectors.py::test_real_jury_explanations_become_the_analyses)
    judged = q(safety_db, "SELECT count(judge_notes) FROM predictions")[0][0] > 0
    assert by_cat["Refusal"] == (4 if judged else 3)


# titles of the failures a safety benchmark's own gold label decides, whatever its judges wrote
BENCHMARK_LABEL_TITLES = ("Refuses a safe request", "Answers a prompt the benchmark marks safe")


def test_offline_evidence_is_quoted_from_the_output(safety_db, mmlu_db):
    import json

    from conftest import q

    for db in (safety_db, mmlu_db):
        analyze(db, "offline")
        rows = q(
            db,
            "SELECT a.required_criteria, p.output_text, a.error_title, p.judge_notes FROM analyses a "
            "JOIN predictions p USING (run_id, instance_id, train_trial_index)",
        )
        assert rows
        quoted = judged = 0
        for raw, output, title, notes in rows:
            (criterion,) = json.loads(raw)
            assert set(criterion) == {"criterion", "present_in_wrong", "quality", "evidence", "comment"}
            assert criterion["quality"] == "incorrect" and criterion["present_in_wrong"] is False
            if criterion["evidence"] is not None:
                assert criterion["evidence"] in output, title
                quoted += 1
            if notes and title not in BENCHMARK_LABEL_TITLES:
                # the HELM judges' words decide: the comment quotes one of them verbatim
                words = [n["explanation"] for n in json.loads(notes) if n["explanation"]]
                assert any(f'"{w}"' in criterion["comment"] for w in words), criterion["comment"]
                judged += 1
        if db == safety_db:
            # the rest are decided by XSTest's own label: a safe prompt refused (3) or answered (7)
            assert (judged, len(rows)) == (19, 29)
        else:
            # no judge: every failure with a non-empty output carries a quote from it
            assert judged == 0 and quoted == sum(1 for _, output, _, _ in rows if (output or "").strip())


def test_sample_is_per_pair_and_reproducible(mmlu_db):
    first = analyze(mmlu_db, "offline", sample_ratio=0.1)
    con = duckdb.connect(str(mmlu_db), read_only=True)
    chosen = con.execute("SELECT run_id, instance_id FROM analyses ORDER BY ALL").fetchall()
    per_pair = con.execute(
        "SELECT r.model, r.dataset, count(*) FROM analyses a JOIN runs r USING (run_id) GROUP BY ALL"
    ).fetchall()
    con.close()
    assert first.selected == len(chosen) == sum(n for *_, n in per_pair)
    assert len(per_pair) == 5 and all(n >= 1 for *_, n in per_pair)
    assert first.selected < 532 * 0.2
    second = analyze(mmlu_db, "offline", sample_ratio=0.1)
    assert (second.selected, second.analysed_now) == (first.selected, 0)


def test_cli_classify_offline_prints_title_tab_category():
    proc = run_module(
        "taxonomy", "classify", "--classifier", "offline",
        input="Bare answer without reasoning\nMiscomputes the sum of two numbers\n\n", timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "Bare answer without reasoning\tHard to Analyze",
        "Miscomputes the sum of two numbers\tCalculation Error",
    ]
    assert proc.stderr.splitlines()[-1].startswith("2/2 titles classified by offline/tfidf-cues-linearsvc-v2@")


def test_cli_classify_offline_abstains_on_a_title_no_category_claims():
    proc = run_module("taxonomy", "classify", "--classifier", "offline", input="Several key inaccuracies\n", timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["Several key inaccuracies\tHard to Analyze"]


def test_cli_analyze_unknown_model_is_a_clear_error(safety_db):
    proc = run_module(
        "taxonomy", "analyze", "--db", safety_db, "--analyst", "offline", "--models", "no/such-model", timeout=120
    )
    assert proc.returncode == 2
    assert "unknown model: no/such-model" in proc.stderr
    assert "meta/llama-3-8b-chat" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_classify_titles_offline_needs_no_database(tmp_path, monkeypatch):
    monkeypatch.setenv("FAULTLINE_DB", str(tmp_path / "absent.duckdb"))
    cats, summary = classify_titles(["Fabricates a citation", "Fabricates a citation"])
    assert cats == {"Fabricates a citation": "Hallucination"}
    assert not (tmp_path / "absent.duckdb").exists()


def test_cli_analyze_offline_ends_with_a_summary_line(safety_db):
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    # no --analyst and no API key in the environment: the offline analyst
    proc = run_module("taxonomy", "analyze", "--db", safety_db, "--datasets", "xstest", env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    line = proc.stdout.strip()
    # XSTest labels 7 of the 17 prompts safe and the model answered them: the scoring's failure,
    # not the model's; the judges' explanations title 7 others in their own words, 3 are refusals
    # of a safe request (one title): 8 titles
    assert line.startswith("17/17 failures to analyse done (17 now); 7 found not to be a model error; 1 title filed by "
                           "their detectors; 7 titles classified by offline/")
    assert "0 requests sent, 0 cache hits" in line
    assert _failure_counts(safety_db)[1] and q_analysts(safety_db) == {"offline"}


def q_analysts(db):
    con = duckdb.connect(str(db), read_only=True)
    try:
        return {r[0] for r in con.execute("SELECT DISTINCT analyst FROM analyses").fetchall()}
    finally:
        con.close()


# --- the offline analyst on a store with the evidence the harness kept (migration 009) --------

JUDGED_NOTE = ("HISTORY OF PRESENT ILLNESS\nCough for three weeks, no fever.\n\nPHYSICAL EXAM\nBP 130/80, SpO2 96%.\n\n"
               "RESULTS\nNone.\n\nASSESSMENT AND PLAN\n- Mild asthma.\n- Albuterol inhaler as needed.")
JURY_SENTENCE = "The note omits the plan to follow up in three weeks, which the doctor stated explicitly."


def _evidence_store(db, rows: list[dict]) -> None:
    """One run per (model, dataset) written through the store's run writer with the 009 evidence:
    instructions, max_tokens, judge notes, the run's metric."""
    from core.records import InstanceRecord, JudgeNote, ParsedRun, PredictionRecord, Reference, RunRecord
    from store import write_session
    from store.runs import replace_runs, stage_run

    runs: dict[tuple, list[dict]] = {}
    for r in rows:
        runs.setdefault((r["model"], r["dataset"]), []).append(r)
    staged = []
    for (model, dataset), items in runs.items():
        run_id = f"r:{model}:{dataset}"
        run = RunRecord(run_id=run_id, source_format="test", source_path=f"/seed/{run_id}", content_hash=run_id,
                        run_name=run_id, model=model, dataset=dataset, main_metric=items[0].get("metric", "exact_match"),
                        instructions=items[0].get("instructions"), max_tokens=items[0].get("max_tokens"))
        instances = [InstanceRecord(instance_id=r["id"], raw_instance_id=r["id"], split="test", input_text=r["input"],
                                    refs=[Reference(text=t, correct=True) for t in r["refs"]]) for r in items]
        predictions = [PredictionRecord(instance_id=r["id"], output_text=r["output"], score=0.0, is_correct=False,
                                        judge_notes=[JudgeNote(**n) for n in r.get("judge_notes", [])] or None,
                                        finish_reason=r.get("finish_reason"), output_tokens=r.get("output_tokens"))
                       for r in items]
        staged.append(stage_run(ParsedRun(run=run, instances=instances, predictions=predictions)))
    with write_session(db) as con:
        con.execute("BEGIN")
        replace_runs(con, staged)
        con.execute("COMMIT")


def test_a_jury_scored_failure_is_analysed_in_the_judges_own_words(tmp_db):
    _evidence_store(tmp_db, [{
        "model": "m1", "dataset": "aci_bench", "id": "visit1", "metric": "jury_score",
        "instructions": "Summarize the conversation to generate a clinical note with four sections.",
        "input": "[doctor] any fever? [patient] no. [doctor] i want to see you back in three weeks.",
        "refs": ["ASSESSMENT AND PLAN\nMild asthma. Albuterol PRN. Follow up in 3 weeks."],
        "output": JUDGED_NOTE,
        "judge_notes": [
            {"judge": "gpt-4o", "criterion": "accuracy", "score": 4, "explanation": "Accurate history and exam."},
            {"judge": "gpt-4o", "criterion": "completeness", "score": 2, "explanation": JURY_SENTENCE + " Otherwise fine."},
            {"judge": "claude", "criterion": "clarity", "score": "5", "explanation": "Clear and well organised."},
        ],
    }])
    analyze(tmp_db, "offline")
    (title, summary, raw, nme), = q(tmp_db, "SELECT error_title, error_summary, required_criteria, no_model_error FROM analyses")
    # the lowest-scored judge's explanation is the summary, verbatim; its title is the problem clause
    # of its sentence without its subject or the comment after it, at most 12 words
    assert title == "Omits the plan to follow up in three weeks"
    assert summary == JURY_SENTENCE + " Otherwise fine."
    (criterion,) = json.loads(raw)
    assert criterion["comment"] == f'judge gpt-4o on completeness (score 2.0): "{JURY_SENTENCE}"'
    assert criterion["evidence"] is None and nme is None
    assert q(tmp_db, "SELECT category FROM failures WHERE analyst = 'offline'") == [("Incomplete Content",)]


def test_a_judge_that_quotes_the_output_gives_the_quote_as_evidence(tmp_db):
    _evidence_store(tmp_db, [{
        "model": "m1", "dataset": "aci_bench", "id": "visit1", "metric": "jury_score",
        "input": "[doctor] take lisinopril twenty milligrams.", "refs": ["Lisinopril 20 mg daily."],
        "output": "Plan: lisinopril 40 mg daily.",
        "judge_notes": [{"judge": "gpt-4o", "criterion": "accuracy", "score": 1,
                         "explanation": "The note says 'lisinopril 40 mg daily' but the doctor said twenty milligrams."}],
    }])
    analyze(tmp_db, "offline")
    (raw,) = q(tmp_db, "SELECT required_criteria FROM analyses")[0]
    assert [c["evidence"] for c in json.loads(raw)] == ["lisinopril 40 mg daily"]


def test_a_normalised_reference_match_is_stored_as_no_model_error(tmp_db):
    row = {"dataset": "gsm8k", "id": "q1", "metric": "exact_match", "input": "Question: 16 pens at $2.50. Total?",
           "refs": ["40"], "output": "16 * 2.50 = 40.00\n#### 40.00"}
    _evidence_store(tmp_db, [{**row, "model": "m1"}, {**row, "model": "m2"},
                             {**row, "model": "m1", "id": "q2", "output": "16 * 2.50 = 45\n#### 45"}])
    analyze(tmp_db, "offline", models=["m1"])
    # the same (input, output) pair of another model reuses the analysis, reason included
    again = analyze(tmp_db, "offline", models=["m2"])
    assert again.analysed_now == 1
    rows = q(tmp_db, "SELECT r.model, a.instance_id, a.error_title, a.no_model_error FROM analyses a "
                     "JOIN runs r USING (run_id) ORDER BY 1, 2")
    # the reason names both strings: the output's answer and the reference
    reason = 'the output\'s answer "40.00" is the reference "40" once normalised (number format); exact_match scored it as a failure'
    assert rows == [("m1", "q1", "Matches the reference once normalised", reason),
                    ("m1", "q2", "Miscalculates an intermediate step", None),
                    ("m2", "q1", "Matches the reference once normalised", reason)]
    assert q(tmp_db, "SELECT model, instance_id, category FROM failures ORDER BY 1, 2") == [
        ("m1", "q1", "No Model Error"), ("m1", "q2", "Calculation Error"), ("m2", "q1", "No Model Error")]
    assert q(tmp_db, "SELECT count(*) FROM failure_labels WHERE no_model_error = ?", [reason]) == [(2,)]


def test_a_generation_cut_at_the_token_limit(tmp_db):
    _evidence_store(tmp_db, [{
        "model": "m1", "dataset": "notes", "id": "v1", "metric": "jury_score", "max_tokens": 12,
        "input": "Summarize the visit.", "refs": ["Knee sprain; ibuprofen; review in six weeks."],
        "output": "Knee sprain after a fall. Plan: ibuprofen 400 mg three times a day with", "output_tokens": 12}])
    analyze(tmp_db, "offline")
    assert q(tmp_db, "SELECT error_title, error_summary FROM failures") == [(
        "Cut off at the output token limit",
        "Generation stopped at the harness's token limit (12 of 12 output tokens), so the answer ends unfinished: "
        "\"…after a fall. Plan: ibuprofen 400 mg three times a day with\".")]
