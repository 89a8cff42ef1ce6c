"""Prompts, answer validation, the context budget and evidence quotes, without any server."""

from __future__ import annotations

import json

import pytest

from taxonomy import load_taxonomy
from taxonomy.context import MARKER, ContextBudget, cut, fit
from taxonomy.prompts import (
    MAX_CORRECT_OUTPUTS,
    analysis_fields,
    analysis_messages,
    classify_messages,
    informative_outputs,
    parse_analysis,
    parse_classification,
)
from taxonomy.quotes import check_criteria, spans, verified

ANSWER = {
    "required_criteria": [{"criterion": "c", "present_in_wrong": True, "quality": "incorrect", "evidence": "e", "comment": None}],
    "final_answer": {"error_summary": "It  assumed\nthe wrong thing.", "error_title": " Unwarranted premise. "},
}


def words(text: str) -> int:
    return len(text.split())


def budget(tokens: int) -> ContextBudget:
    """A budget counting whitespace-separated words as tokens, so that sizes are exact."""
    return ContextBudget(tokens=tokens, window=tokens, source="the test", count=words)


def test_cut_keeps_head_and_tail_with_a_visible_marker():
    text = " ".join(f"w{i}" for i in range(100))
    assert cut(text, 100, words) == text
    short = cut(text, 20, words)
    assert short.startswith("w0 w1") and short.endswith("w98 w99")
    assert MARKER.format(n="80") in short
    # three quarters of what is kept from the head, one quarter from the tail
    head, tail = short.split(MARKER.format(n="80"))
    assert head.split()[-1] == "w14" and tail.split()[0] == "w95"


def test_analysis_prompt_has_choices_references_correct_outputs_and_failed_output():
    rec = {
        "input_text": "Which bone?", "choices": {"A": "femur", "B": "tibia"},
        "refs": [{"text": "femur", "correct": True}, {"text": "tibia", "correct": False}],
        "output_text": "B", "mapped_output": "tibia",
    }
    correct = [(f"m{i}", f"Answer A because {i} reasons") for i in range(5)]
    (system, user), note = analysis_messages(rec, correct)
    text = user["content"]
    assert note is None
    assert "A. femur\nB. tibia" in text
    assert "<reference_answers>\n- femur\n</reference_answers>" in text
    assert text.count("<correct_output_of_another_model") == MAX_CORRECT_OUTPUTS == 3
    assert "Answer A because 2 reasons" in text and "Answer A because 3 reasons" not in text
    assert "<failed_output>\nB\n</failed_output>" in text
    assert "first major error" in system["content"].lower()


def test_informative_correct_outputs_leave_out_bare_answers_and_copies_of_the_reference():
    rec = {"refs": [{"text": "Paris", "correct": True}], "choices": None}
    correct = [("a", "Paris"), ("b", "paris."), ("c", "B"), ("d", "The capital of France is Paris."),
               ("e", "It is Paris, the capital and largest city of France."), ("f", "The capital of France is Paris!")]
    # bare answers and reference copies add nothing; duplicates (once normalised) count once; longest first
    assert informative_outputs(correct, rec) == [
        ("e", "It is Paris, the capital and largest city of France."), ("d", "The capital of France is Paris.")]


MEDHELM_LIKE = {
    "instructions": "Summarize the conversation to generate a clinical note with four sections: HISTORY OF PRESENT "
                    "ILLNESS, PHYSICAL EXAM, RESULTS, ASSESSMENT AND PLAN.",
    "prompt_text": "Summarize the conversation ...\n\n[doctor] hi, how are you?\n[patient] my knee hurts",
    "input_text": "[doctor] hi, how are you?\n[patient] my knee hurts",
    "refs": [{"text": "HISTORY OF PRESENT ILLNESS\nThe patient reports knee pain.", "correct": True}],
    "output_text": "The patient has knee pain.",
    "judge_notes": [
        {"judge": "aci_bench/gpt", "criterion": "completeness", "score": 1, "explanation": "Leaves out three of the four sections."},
        {"judge": "aci_bench/claude", "criterion": "accuracy", "score": 4.5, "explanation": None},
    ],
    "main_metric": "aci_bench_accuracy", "score": 2.0, "pass_threshold": 3.8, "metric_max": 5.0,
    "lower_is_better": False, "scale_source": "schema", "finish_reason": "length", "output_tokens": 512, "max_tokens": 512,
}


def test_stage1_prompt_carries_instructions_prompt_judges_and_scoring():
    (_, user), note = analysis_messages(MEDHELM_LIKE, [])
    text = user["content"]
    assert note is None
    assert ('<task_instructions note="what the harness told the model for every item">\nSummarize the conversation to '
            "generate a clinical note with four sections") in text
    assert '<prompt_as_sent note="the whole prompt the model received">\nSummarize the conversation ...' in text
    assert ("<judge_notes note=\"what the benchmark's own judges said about the failed output\">\n"
            "- [aci_bench/gpt · completeness] score 1: Leaves out three of the four sections.\n"
            "- [aci_bench/claude · accuracy] score 4.5\n</judge_notes>") in text
    assert ("<scoring>\nmetric aci_bench_accuracy: this output scored 2; a pass needs at least 3.8 (scale up to 5, schema)\n"
            "generation stopped: length; 512 output tokens of at most 512\n</scoring>") in text
    # fields in the order of the method: task, input, references, judges, scoring, failed output
    order = [text.index(t) for t in ("<task_instructions", "<prompt_as_sent", "<input>", "<reference_answers>",
                                     "<judge_notes", "<scoring>", "<failed_output>")]
    assert order == sorted(order)


def test_prompt_as_sent_is_left_out_when_it_only_repeats_the_input():
    rec = {"input_text": "Question: 2+2?", "prompt_text": "Question:  2+2?", "output_text": "5"}
    assert "prompt" not in analysis_fields(rec, [])


def test_nothing_under_the_budget_is_cut():
    long_reference = " ".join(f"r{i}" for i in range(3000))  # stage1-v1 cut references at 500 tokens
    long_input = " ".join(f"i{i}" for i in range(5000))  # and inputs at 1,500
    rec = {"input_text": long_input, "refs": [{"text": long_reference, "correct": True}], "output_text": "short"}
    (_, user), note = analysis_messages(rec, [], budget(20_000))
    assert note is None
    assert long_reference in user["content"] and long_input in user["content"]
    assert "cut by Faultline" not in user["content"]


def test_an_over_budget_prompt_is_cut_largest_fields_first_keeping_head_and_tail():
    rec = {"input_text": " ".join(f"i{i}" for i in range(3000)),
           "refs": [{"text": " ".join(f"r{i}" for i in range(1000)), "correct": True}],
           "output_text": " ".join(f"o{i}" for i in range(200)),
           "instructions": "Answer briefly."}
    whole, _ = analysis_messages(rec, [])
    total = sum(words(m["content"]) for m in whole)
    (system, user), note = analysis_messages(rec, [], budget(total - 2000))
    text = user["content"]
    assert words(system["content"]) + words(text) <= total - 2000
    # the input (3,000) and the reference (1,001 with its "- ") are cut to one level; the failed
    # output (200) and the instructions stay whole
    assert " ".join(f"o{i}" for i in range(200)) in text and "Answer briefly." in text
    assert "i0 i1 i2" in text and "i2998 i2999" in text and "r0 r1" in text and "r998 r999" in text
    assert text.count("cut by Faultline") == 2
    level = int(note.split("input 3,000→")[1].split(",")[0].replace(" tokens", ""))
    assert 900 <= level <= 1001
    assert note == (f"cut to fit the {total - 2000:,}-token budget ({total - 2000:,}-token window from the test): the prompt "
                    f"had {total:,} tokens; largest fields first, head and tail kept: input 3,000→{level:,}, "
                    f"references 1,001→{level:,} tokens")


def test_fit_level_is_the_highest_that_fits():
    fields = {"a": "x " * 200, "b": "y " * 50, "c": "z " * 10}
    # 260 tokens over a budget of 192; 3 × 24 of it is kept for the markers, so 120 remain: the
    # largest field alone is cut, to 60 (60 + 50 + 10 = 120); b and c stay whole
    kept, note = fit(fields, lambda f: sum(words(v) for v in f.values()), budget(192), {"a": "field a"})
    assert note.endswith("head and tail kept: field a 200→60 tokens")
    assert kept["b"] == fields["b"] and kept["c"] == fields["c"]
    head, tail = kept["a"].split("[…")
    assert words(head) == 45 and words(tail.split("…]")[1]) == 15


def test_parse_analysis_validates_and_normalises():
    parsed = parse_analysis("```json\n" + json.dumps(ANSWER) + "\n```")
    assert parsed.final_answer.error_title == "Unwarranted premise"
    assert parsed.final_answer.error_summary == "It assumed the wrong thing."
    assert parsed.final_answer.no_model_error is None
    assert parse_analysis(json.dumps(ANSWER)[:-5]) is None
    bad = {**ANSWER, "final_answer": {"error_summary": "x", "error_title": "  "}}
    assert parse_analysis(json.dumps(bad)) is None
    assert parse_analysis(json.dumps({"final_answer": ANSWER["final_answer"]})) is None


@pytest.mark.parametrize("final, reason", [
    ({"error_summary": "", "error_title": ""}, "the analyst found no error"),  # ErrorMap's empty answer
    ({"error_summary": " ", "error_title": "", "not_model_error": None}, "the analyst found no error"),
    ({"error_summary": "", "error_title": "", "not_model_error": "no error found"}, "the analyst found no error"),
    ({"error_summary": "40.00 is 40.", "error_title": "", "not_model_error": "Output matches the reference"},
     "the output matches a reference"),
    ({"error_summary": "Two options are right.", "error_title": "", "not_model_error": "reference_wrong_or_ambiguous"},
     "the reference is wrong or ambiguous"),
])
def test_an_empty_or_not_a_model_error_answer_is_valid(final, reason):
    parsed = parse_analysis(json.dumps({"required_criteria": [], "final_answer": final}))
    assert parsed is not None and parsed.final_answer.no_model_error == reason


def test_an_unknown_not_model_error_reason_is_invalid():
    final = {"error_summary": "", "error_title": "", "not_model_error": "the judge was tired"}
    assert parse_analysis(json.dumps({"required_criteria": [], "final_answer": final})) is None


def test_classification_prompt_sends_titles_with_summaries():
    tax = load_taxonomy()
    system, user = classify_messages(tax, ["A title", "Another"], summaries={"A title": "It assumed X."})
    assert all(f"- {c.name}: {c.description}" in system["content"] for c in tax.categories)
    assert "summary" in system["content"]
    assert user["content"].endswith(
        'TITLES TO CLASSIFY (JSON):\n[{"error_title": "A title", "error_summary": "It assumed X."}, {"error_title": "Another"}]')
    retry = classify_messages(tax, ["A title"], attempt=2)[1]["content"]
    assert retry.startswith("Attempt 2:")
    assert parse_classification('{"classified_errors": [{"error_text": "A title", "category": "Other"}]}').classified_errors[0].category == "Other"
    assert parse_classification('{"classified_errors": [{"error_text": "A title"}]}') is None


OUTPUT = "The dose is 5 mg.\nThe patient   denies chest pain; follow up in two weeks."


@pytest.mark.parametrize("quote, expected", [
    ("The dose is 5 mg.", True),
    ('"The dose is 5 mg."', True),  # quotation marks around the quote are not part of it
    ("The dose is 5 mg. The patient denies", True),  # whitespace runs match any whitespace
    ("The dose ... denies chest pain", True),  # fragments joined by an ellipsis, in order
    ("denies chest pain … The dose", False),  # fragments out of order
    ("the dose is 5 mg.", False),  # case differs: not verbatim
    ("The dose is 10 mg.", False),
    ("", None),
    (None, None),
])
def test_evidence_quotes_are_checked_verbatim(quote, expected):
    assert verified(OUTPUT, quote) is expected


def test_check_criteria_marks_each_quote_and_spans_locate_fragments():
    criteria = [{"criterion": "a", "evidence": "5 mg"}, {"criterion": "b", "evidence": "10 mg"}, {"criterion": "c", "evidence": None}]
    assert [c["evidence_verified"] for c in check_criteria(criteria, OUTPUT)] == [True, False, None]
    assert spans(OUTPUT, "The dose … two weeks") == [(0, 8), (OUTPUT.index("two weeks"), len(OUTPUT) - 1)]


def test_accept_checks_every_title_once_with_a_known_category():
    from taxonomy.classify import _accept
    from taxonomy.prompts import Classification

    tax = load_taxonomy()
    pending = ["Misreads the question", "misreads the question", "Adds wrongly", "Invents a law", "Twice"]
    answer = Classification.model_validate({"classified_errors": [
        {"error_text": "misreads the question", "category": "question misinterpretation"},
        {"error_text": "ADDS WRONGLY", "category": "Calculation Error"},
        {"error_text": "Invents a law", "category": "Made-up"},
        {"error_text": "Twice", "category": "Other"},
        {"error_text": "Twice", "category": "Refusal"},
        {"error_text": "Not asked", "category": "Other"},
    ]})
    assert _accept(answer, pending, tax) == {
        "misreads the question": "Question Misinterpretation",
        "Adds wrongly": "Calculation Error",
    }
