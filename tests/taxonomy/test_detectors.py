"""The grounded offline detectors, measured on labelled examples written for these tests
(tests/data/detectors_*.yaml), and on the free-text failures of the shared real logs."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
import yaml
from sklearn.metrics import cohen_kappa_score

from conftest import FIXTURES, q, requires_fixtures
from offline_sets import label as offline_label
from offline_sets import record as devset_record
from taxonomy import NO_ERROR, analyze, load_taxonomy, offline
from taxonomy.detectors import (brevity_request, chosen_option, detect_extra_commentary, detect_hallucination,
                                 detect_mixed_script, detect_no_answer_claim, detect_partial_answer, detect_retrieval_miss,
                                 detect_template_tokens, detect_verbosity, detect_wrong_script, false_steps, match_reference,
                                 normalise, target_language)
from taxonomy.detectors.choice import options_in_text, relation
from taxonomy.detectors.judge import critical_note, problem_sentence, title_from
from taxonomy.detectors.normalise import tokens_equal

DATA = Path(__file__).resolve().parents[1] / "data"
FAMILIES = {
    "calculation": ("calculation",),
    "constraint": ("constraint",),
    "data_extraction": ("data_extraction",),
    "hallucination": ("hallucination", "factual_error"),
    "incomplete": ("incomplete",),
    "verbosity": ("verbosity",),
}
DETECTORS = [d for names in FAMILIES.values() for d in names]


def _examples() -> list[tuple[str, dict]]:
    out = []
    for family in FAMILIES:
        for ex in yaml.safe_load((DATA / f"detectors_{family}.yaml").read_text(encoding="utf-8")):
            out.append((family, ex))
    return out


EXAMPLES = _examples()


def _record(ex: dict) -> dict:
    return {"input_text": ex["input"], "refs": [{"text": r, "correct": True} for r in ex["refs"]],
            "output_text": ex["output"], "choices": ex.get("choices")}


LABELLED = [(family, ex, offline.analyze(_record(ex))) for family, ex in EXAMPLES]


@pytest.mark.parametrize("family", FAMILIES)
def test_every_detector_has_fifteen_positives_and_fifteen_hard_negatives(family):
    rows = [ex for f, ex in EXAMPLES if f == family]
    positives = sum(ex["expect"] in FAMILIES[family] for ex in rows)
    assert positives >= 15 and len(rows) - positives >= 15


@pytest.mark.parametrize("detector", DETECTORS)
def test_detector_precision_on_labelled_examples(detector):
    labelled = [ex for _, ex, found in LABELLED if found.detector == detector]
    right = sum(ex["expect"] == detector for ex in labelled)
    positives = sum(ex["expect"] == detector for _, ex in EXAMPLES)
    precision = right / len(labelled) if labelled else 0.0
    print(f"{detector}: precision {precision:.2f} ({right}/{len(labelled)}), recall {right}/{positives}")
    assert len(labelled) >= 8
    assert precision >= 0.9


def test_every_quote_occurs_verbatim_in_the_output_and_every_gap_is_named():
    for _, ex, found in LABELLED:
        if found.detector not in DETECTORS:
            continue
        assert found.evidence, found
        for criterion in offline.criteria(found, _record(ex)):
            if criterion["evidence"] is None:
                assert criterion["criterion"].strip()
            else:
                assert criterion["evidence"] in ex["output"], (found.detector, criterion)


def test_findings_quote_the_error_itself():
    rec = {"input_text": "Jill works 50 weeks a year and 35 hours a week at $20 an hour. Annual pay?",
           "refs": [{"text": "20 * 35 = 700; 700 * 50 weeks = 35000", "correct": True}],
           "output_text": "700 a week times 52 weeks = 36400"}
    found = offline.analyze(rec)
    assert (found.detector, found.title) == ("data_extraction", "Extracts the wrong values from the input")
    assert [e.quote for e in found.evidence] == ["52 weeks"]
    missing = offline.analyze({
        "input_text": "List the steps.", "output_text": "1. Unplug it.\n2. Plug it back in and wait for the lights.",
        "refs": [{"text": "1. Unplug it.\n2. Wait thirty seconds.\n3. Hold the reset button.\n4. Plug it back in and wait for the lights.", "correct": True}],
    })
    assert missing.detector == "incomplete"
    assert [(e.criterion, e.quote) for e in missing.evidence] == [
        ('Covers "Wait thirty seconds."', None), ('Covers "Hold the reset button."', None)]


@pytest.mark.parametrize(
    "choices, output, mapped, key",
    [
        ({"A": "x", "B": "y"}, " B", "y", "B"),
        ({"0": "A", "1": "B"}, "B", None, "1"),  # lm-eval loglikelihood: the chosen choice's text
        ({"A": "safety goggles", "D": "lead apron"}, "ANSWER: D\n\nExplanation: ...", "D", "D"),
        ({"A": "x", "B": "y"}, "ANSWER: B because y", None, "B"),
        ({"A": "x", "B": "y"}, "C</DRESULT>", None, None),
    ],
)
def test_chosen_option(choices, output, mapped, key):
    assert chosen_option({"choices": choices, "output_text": output, "mapped_output": mapped}) == key


def _free_text_counts(db):
    rows = q(db, """
        SELECT f.category, count(*) FROM failures f
        JOIN instances i ON i.run_id = f.run_id AND i.instance_id = f.instance_id
        WHERE f.analyst = 'offline' AND i.choices IS NULL GROUP BY ALL""")
    return dict(rows)


@requires_fixtures
def test_offline_analyst_files_most_real_free_text_failures_under_a_real_category(tmp_db):
    from ingest import ingest_paths

    paths = [FIXTURES / "helm" / "safety-v4", FIXTURES / "helm" / "scenario-state-only",
             FIXTURES / "lm-eval", FIXTURES / "inspect"]
    ingest_paths(paths, db=tmp_db)
    analyze(tmp_db, "offline")
    counts = _free_text_counts(tmp_db)
    total = sum(counts.values())
    real = total - counts.get("Other", 0) - counts.get("Hard to Analyze", 0)
    print(f"free-text failures under a real category: {real}/{total} = {real / total:.2f}; {counts}")
    assert total > 0 and real / total >= 0.5
    quotes = 0
    for raw, output in q(tmp_db, "SELECT a.required_criteria, p.output_text FROM analyses a "
                                 "JOIN predictions p USING (run_id, instance_id, train_trial_index)"):
        for criterion in json.loads(raw):
            if criterion["evidence"] is not None:
                assert criterion["evidence"] in output, criterion
                quotes += 1
            else:
                assert criterion["criterion"].strip()
    assert quotes > 0


# --- the development set: hand-labelled failures across task types ----------------------------

EVIDENCE = ("instructions", "max_tokens", "prompt_text", "judge_notes", "finish_reason", "output_tokens",
            "verdict_note", "output_kind", "metric_max", "lower_is_better", "pass_threshold", "scale_source")
DEVSET = yaml.safe_load((DATA / "offline_devset.yaml").read_text(encoding="utf-8"))
FIXTURE_SET = yaml.safe_load((DATA / "offline_devset_fixtures.yaml").read_text(encoding="utf-8"))


def measure(pairs: list[tuple[str, str]]) -> dict:
    """(person, analyst) labels → κ, and No Model Error recall and false-alarm counts."""
    people = [p for p, _ in pairs]
    analyst = [a for _, a in pairs]
    not_errors = [a for p, a in pairs if p == NO_ERROR]
    errors = [a for p, a in pairs if p != NO_ERROR]
    return {"n": len(pairs), "agree": sum(p == a for p, a in pairs), "kappa": cohen_kappa_score(people, analyst),
            "nme_found": not_errors.count(NO_ERROR), "nme_total": len(not_errors),
            "nme_false": errors.count(NO_ERROR), "errors_total": len(errors)}


def test_the_development_set_is_labelled_across_task_types():
    assert len(DEVSET) == 142 and len({ex["id"] for ex in DEVSET}) == 142
    tasks = Counter(ex["task"] for ex in DEVSET)
    assert len(tasks) == 13 and min(tasks.values()) >= 5
    labels = Counter(ex["label"] for ex in DEVSET)
    assert labels[NO_ERROR] == 34 and set(labels) - {NO_ERROR} <= set(load_taxonomy().names)
    assert len(labels) == 19  # No Model Error and all 18 categories of the taxonomy


def test_offline_agreement_with_people_on_the_development_set():
    figures = measure([(ex["label"], offline_label(devset_record(ex))) for ex in DEVSET])
    print(f"development set: {figures}")
    # issue #32: 105 before; if-03 and if-04 (a right free-text answer with template tokens, judged
    # by an LLM) are now Hard to Analyze — the answer before the tokens cannot be shown right
    # offline, so the tokens are not concluded to be why it failed (an abstention, not a wrong label)
    assert (figures["n"], figures["agree"]) == (142, 103)
    assert figures["kappa"] == pytest.approx(0.6997, abs=5e-5)
    assert figures["kappa"] >= 0.25
    # at least 30% of the not-a-model-error cases found, at most 5% of real errors called one
    assert (figures["nme_found"], figures["nme_total"]) == (31, 34)
    assert (figures["nme_false"], figures["errors_total"]) == (0, 108)


@pytest.fixture(scope="module")
def fixture_failures(tmp_path_factory):
    from ingest import ingest_paths
    from store import read_connection
    from store.analysis import failures

    db = tmp_path_factory.mktemp("devset") / "fixtures.duckdb"
    paths = sorted({ex["path"] for ex in FIXTURE_SET})
    ingest_paths([FIXTURES / p for p in paths], db=db)
    with read_connection(db) as con:
        where = dict(con.execute("SELECT run_id, source_path FROM runs").fetchall())
        found = {}
        for f in failures(con):
            # the text of the failure only: the figures must not move as ingest keeps more evidence
            rec = {**f, **dict.fromkeys(EVIDENCE)}
            for p in paths:
                if f"/{p}/" in where[f["run_id"]].replace("\\", "/") + "/":
                    found.setdefault((p, f["model"], f["instance_id"]), rec)
    return found


@requires_fixtures
def test_offline_agreement_with_people_on_real_fixture_failures(fixture_failures):
    pairs = [(ex["label"], offline_label(fixture_failures[(ex["path"], ex["model"], ex["id"])])) for ex in FIXTURE_SET]
    figures = measure(pairs)
    print(f"fixture failures: {figures}")
    assert (figures["n"], figures["agree"]) == (47, 23)
    assert figures["kappa"] == pytest.approx(0.4377, abs=5e-5)
    assert (figures["nme_found"], figures["nme_total"], figures["nme_false"], figures["errors_total"]) == (9, 14, 0, 33)
    both = measure(pairs + [(ex["label"], offline_label(devset_record(ex))) for ex in DEVSET])
    print(f"both sets: {both}")
    assert both["kappa"] == pytest.approx(0.6376, abs=5e-5)  # 0.6490 before issue #32 (if-03, if-04 above)
    assert (both["nme_found"], both["nme_total"], both["nme_false"], both["errors_total"]) == (40, 48, 0, 141)


# --- the false positives issue 16 names, each gone ------------------------------------------

TRANSCRIPT = ("[doctor] how are you feeling today? [patient] a bit tired, and i'll keep it brief, the headaches are back. "
              "[doctor] your blood pressure is one thirty over eighty and your pulse is seventy two. your oxygen is ninety "
              "six percent. we'll continue the lisinopril at twenty milligrams and recheck your potassium in two weeks. "
              "[patient] should i keep taking the ibuprofen? [doctor] yes, four hundred milligrams as needed, no more than "
              "three times a day. let me be brief about the plan: lisinopril, potassium check, and come back in a month.")


def test_numbers_said_in_words_in_a_transcript_are_not_taken_as_invented():
    note = "Vitals: BP 130/80, pulse 72, SpO2 96%. Continue lisinopril 20 mg. Ibuprofen 400 mg as needed, up to 3 times a day."
    rec = {"input_text": TRANSCRIPT, "output_text": note, "refs": [{"text": "BP 130/80. Lisinopril 20 mg.", "correct": True}]}
    assert detect_hallucination(rec) is None
    # a number the transcript never says is still caught
    invented = detect_hallucination({**rec, "output_text": note + " Potassium 5.8 mmol/L."})
    assert [e.quote for e in invented.evidence] == ["5.8"]


def test_headings_and_bullet_verbs_are_not_taken_as_names():
    # none of these words is in the transcript: headings and the verbs that open list items
    note = ("Chief Complaint\nRecurrent headaches.\n\nImpression and Recommendations\n• Advised to reduce salt.\n"
            "• Ordered a basic metabolic panel.\n• Encouraged daily walks.\nMedications and Allergies\nLisinopril 20 mg.")
    rec = {"input_text": TRANSCRIPT, "output_text": note, "refs": [{"text": "Continue lisinopril; recheck potassium.", "correct": True}]}
    assert detect_hallucination(rec) is None
    named = detect_hallucination({**rec, "output_text": note + "\nSeen with Dr. Whitaker of cardiology."})
    assert [e.quote for e in named.evidence] == ["Whitaker"]


def test_brief_in_a_transcript_is_not_a_length_instruction():
    long_note = " ".join(["The patient reports recurrent headaches and fatigue."] * 12)
    rec = {"input_text": "Write a clinical note for this visit.\n" + TRANSCRIPT, "output_text": long_note,
           "refs": [{"text": long_note, "correct": True}]}
    assert brevity_request(rec) is None and detect_verbosity(rec) is None
    # asked of the model, it is one
    asked = {**rec, "instructions": "Write a brief clinical note for this visit."}
    assert brevity_request(asked) == "Write a brief clinical note"
    assert detect_verbosity(asked).title == "Longer than the prompt allows"


TO_RUSSIAN = ("The museum will be closed on Monday for repairs to the roof and the heating system, and it will reopen "
              "on Tuesday morning with a new exhibition of paintings from the nineteenth century, lent by a private collector.")
IN_RUSSIAN = ("Музей будет закрыт в понедельник на ремонт крыши и системы отопления и вновь откроется во вторник утром "
              "новой выставкой картин девятнадцатого века, предоставленных частным коллекционером.")


def test_a_translation_into_the_language_asked_for_is_not_the_wrong_language():
    rec = {"instructions": "Translate the following text from English into Russian.", "input_text": TO_RUSSIAN,
           "refs": [{"text": IN_RUSSIAN, "correct": True}], "output_text": IN_RUSSIAN.replace("новой", "с новой")}
    assert detect_wrong_script(rec) is None
    assert offline.analyze(rec).title == "Translation judged inaccurate"
    # the source left untranslated is the wrong language, and says which the instructions want
    kept = detect_wrong_script({**rec, "output_text": TO_RUSSIAN})
    assert kept.summary == "The instructions ask for Cyrillic script but the model answered in Latin script."
    # an answer to the text, in its language, is not a translation at all
    answered = offline.analyze({**rec, "output_text": "That sounds lovely, I will visit the exhibition on Tuesday with my family."})
    assert answered.title == "Answers the text instead of translating it"


@pytest.mark.parametrize("gold, detector, title", [
    ("30 million", "reference_match", "Chooses the correct option in a form the metric did not read"),
    ("40 million", "chosen_option", "Chooses a neighbouring numeric option"),
])
def test_an_option_written_out_after_its_letter_is_that_option(gold, detector, title):
    rec = {"input_text": "About how many people live in greater Tokyo?", "output_text": "D. 30 million",
           "choices": {"A": "10 million", "B": "20 million", "C": "40 million", "D": "30 million"},
           "refs": [{"text": gold, "correct": True}], "main_metric": "exact_match"}
    assert chosen_option(rec) == "D"
    found = offline.analyze(rec)
    assert (found.detector, found.title) == (detector, title)
    assert (found.no_model_error is not None) == (detector == "reference_match")


# --- the rules, one by one ------------------------------------------------------------------

@pytest.mark.parametrize("a, b, same", [
    ("40.00", "40", True), ("$1,250", "1250", True), ("Twenty-five", "25", True), ("one hundred and five", "105", True),
    ("12 March 1999", "March 12th, 1999", True), ("12.03.1999", "12 March 1999", True), ("1999-03-12", "12 марта 1999 года", True),
    ("Ёлка", "елка", True), ("TNF-α", "TNF-alpha", True), ("the Black Sea", "Black Sea", True), ("COVID-19", "covid19", True),
    ("studies", "study", True), ("Москве", "Москва", True), ("the 3rd", "third", True), ("drei", "3", True),
    ("40.5", "40", False), ("1998", "1999", False), ("not", "note", False), ("Paris", "Parish", False),
    ("03/04/1999", "4 March 1999", False), ("one two", "12", False),
])
def test_normalisation_says_which_texts_are_the_same(a, b, same):
    assert tokens_equal(normalise(a).tokens, normalise(b).tokens) is same


@pytest.mark.parametrize("output, metric, expect", [
    ("The capital is Paris.", "exact_match", ("Paris", "Paris.")),
    ("John's brother Peter", "exact_match", None),
    ("Not Paris, Lyon.", "exact_match", None),
    ("Paris or Lyon", "exact_match", None),
    ("It is Paris, the largest city of France, as every atlas of Europe shows, and its capital since the tenth century.", "substring_match",
     ("Paris", "Paris")),
    ("The capital is Paris.", "llm_judge", None),   # a judge is overruled only by an equal answer
    ("PARIS!", "llm_judge", ("Paris", "PARIS!")),
    ("The US.", "exact_match", ("United States", "US.")),
])
def test_which_outputs_match_the_reference(output, metric, expect):
    refs = ["United States"] if "US" in output else ["Paris"]
    rec = {"input_text": "Question: Which city is the capital of France?", "output_text": output, "main_metric": metric,
           "refs": [{"text": r, "correct": True} for r in refs]}
    found = match_reference(rec)
    assert (found[:2] if found else None) == expect


def test_code_and_constrained_forms_are_never_matched_once_normalised():
    code = {"input_text": "Write `is_even(n)`.", "output_text": "def is_even(n)\n    return n % 2 == 0",
            "refs": [{"text": "def is_even(n):\n    return n % 2 == 0", "correct": True}]}
    lower = {"input_text": "Write a slogan in all lowercase letters.", "output_text": "Fresh Bread, Warm Hearts",
             "refs": [{"text": "fresh bread, warm hearts", "correct": True}]}
    assert match_reference(code) is None and match_reference(lower) is None
    assert offline.analyze(code).title == "Generated code does not parse"
    assert offline.analyze(lower).title == "Ignores an explicit constraint of the prompt"


@pytest.mark.parametrize("extra, title", [
    ({"finish_reason": "length"}, "Cut off at the output token limit"),
    ({"max_tokens": 200, "output_tokens": 200}, "Cut off at the output token limit"),
    ({}, "Output stops mid-sentence"),
    ({"finish_reason": "stop"}, "Wrong answer with no visible cause"),
    ({"max_tokens": 200, "output_tokens": 150}, "Wrong answer with no visible cause"),
    # the counts outweigh the reason: 150 of 200 tokens did not reach the limit
    ({"finish_reason": "length", "max_tokens": 200, "output_tokens": 150}, "Wrong answer with no visible cause"),
])
def test_a_cut_generation_is_told_from_the_log_or_from_its_last_sentence(extra, title):
    body = " ".join(f"Point {i} explains why the plan works in practice for small teams." for i in range(12))
    rec = {"input_text": "Explain the plan.", "output_text": body + " Finally, the team should meet every week and review the",
           **extra}
    assert offline.analyze(rec).title == title


@pytest.mark.parametrize("extra", [{"finish_reason": "length"}, {"max_tokens": 1, "output_tokens": 1}])
def test_a_whole_multiple_choice_answer_is_never_cut_at_the_token_limit(extra):
    """HELM's MMLU runs log finish reason "length" (or 1 of 1 tokens) for a bare letter: the
    letter is the whole answer, not a cut one."""
    rec = {"input_text": "Which bone is in the ear?", "output_text": "D", "mapped_output": "femur",
           "choices": {"A": "stapes", "B": "ulna", "C": "tibia", "D": "femur"},
           "refs": [{"text": "stapes", "correct": True}], **extra}
    assert offline.analyze(rec).title != "Cut off at the output token limit"


def test_template_tokens_are_reported_under_a_right_answer_unless_the_prompt_shows_them():
    rec = {"input_text": "Say hello.", "output_text": "Hello!<|im_end|>\n<|im_start|>user",
           "refs": [{"text": "Hello!", "correct": True}], "main_metric": "exact_match"}
    found = offline.analyze(rec)
    assert found.title == "Leaves chat-template tokens in the output"
    assert [e.quote for e in found.evidence] == ["<|im_end|>", "<|im_start|>"]
    # no reference to show the answer before them right: the tokens are not concluded to be why it failed
    assert offline.analyze({**rec, "refs": []}).title == "Bare answer without reasoning"
    shown = {"input_text": "End your answer with <|im_end|> as in: Hi<|im_end|>", "output_text": "Hello<|im_end|>"}
    assert detect_template_tokens(shown) is None


def test_commentary_is_an_error_only_where_the_instructions_ask_for_the_answer_alone():
    rec = {"instructions": "Translate into German. Output only the translation.", "input_text": "Good morning.",
           "refs": [{"text": "Guten Morgen.", "correct": True}], "output_text": "Guten Morgen.\nNote: a common greeting."}
    found = detect_extra_commentary(rec)
    assert found.title == "Adds commentary the instructions forbid"
    assert [e.quote for e in found.evidence] == ["Note: a common greeting."]
    assert detect_extra_commentary({**rec, "instructions": "Translate into German."}) is None


@pytest.mark.parametrize("text, language", [
    ("Translate the following sentence from English into Russian.", "Russian"),
    ("Please translate this paragraph to French:", "French"),
    ("German translation:", "German"),
    ("Answer the question in Japanese.", "Japanese"),
    ("Translate the text.", None),
    ("The French and the English fought for a hundred years.", None),
])
def test_the_target_language_comes_from_the_instructions(text, language):
    assert target_language({"instructions": text, "input_text": "x"}) == language


def test_words_left_in_another_script():
    rec = {"input_text": "Document 1: The Last Supper was painted by Leonardo da Vinci.\nВопрос: Кто написал «Тайную вечерю»?",
           "refs": [{"text": "Леонардо да Винчи", "correct": True}], "output_text": "«Тайную вечерю» написал Leonardo da Vinci."}
    found = detect_mixed_script(rec)
    assert [e.quote for e in found.evidence] == ["Leonardo", "Vinci"]
    # the answer there in the right script: a Latin word beside it is not why it failed
    assert detect_mixed_script({**rec, "output_text": "Леонардо да Винчи (Leonardo da Vinci)."}) is None


@pytest.mark.parametrize("chosen, gold, others, kind", [
    ("It is not a bird.", "It is a bird.", ["It is a mammal."], "negation"),
    ("30 million", "40 million", ["10 million", "20 million"], "numeric neighbour"),
    ("10 million", "40 million", ["20 million", "30 million"], "distractor"),
    ("Both a and b", "Mixed feeding", ["Very early introduction of solids"], "all/none of the above"),
    ("Mixed feeding and formula feeding", "Mixed feeding", [], "broader"),
    ("The trucker", "The trucker and the bus driver", [], "narrower"),
    ("H ∨ ~R", "H ∨ R", ["H ≡ R"], "distractor"),
])
def test_how_a_chosen_option_differs_from_the_gold(chosen, gold, others, kind):
    assert relation(chosen, gold, others) == kind


def test_options_listed_in_the_prompt_and_a_key_whose_text_has_a_typo():
    text = "Q1?\na) x\nb) y\nc) z\n\nWhich remnant?\na) Ductus arteriosus\nb) Umbilical aery\nc) Umbilical vein\nd) Ductus venosus"
    assert options_in_text(text) == {"a": "Ductus arteriosus", "b": "Umbilical aery", "c": "Umbilical vein", "d": "Ductus venosus"}
    rec = {"input_text": text, "refs": [{"text": "b) Umbilical aery", "correct": True}], "output_text": "b) Umbilical artery."}
    assert chosen_option(rec) == "b"
    assert offline.analyze(rec).title == "Chooses the correct option in a form the metric did not read"


def test_the_judge_note_that_explains_the_failure():
    notes = [{"judge": "a", "criterion": "accuracy", "score": "4.0", "explanation": "Accurate throughout the note."},
             {"judge": "b", "criterion": "format", "score": "0.0", "explanation": "Expected output to contain 'PLAN'"},
             {"judge": "c", "criterion": "completeness", "score": "2", "explanation": "The summary is accurate, but misses the dosage change."},
             {"judge": "d", "criterion": "clarity", "score": None, "explanation": "Hard to read in places, sadly."}]
    note = critical_note({"judge_notes": notes})
    assert note["judge"] == "c"  # the mechanical assertion message is not an explanation
    assert title_from(problem_sentence(note["explanation"])) == "Misses the dosage change"
    assert title_from("The response is missing the allergy list.") == "Missing the allergy list"
    assert critical_note({"judge_notes": [notes[1]]}) is None


def test_a_claim_that_the_input_does_not_say():
    docs = ("Document [1]: " + "The harbour was rebuilt after the storm and reopened to fishing boats in the spring. " * 3 +
            "\nQuestion: ")
    false_claim = {"input_text": docs + "Who rebuilt it?\n" + "The mayor, Ada Brook, led the work.",
                   "refs": [{"text": "Ada Brook", "correct": True}], "output_text": "The documents do not mention who rebuilt it."}
    # the name is there (after the question, in this input): the claim is false
    assert detect_no_answer_claim(false_claim).title == "Claims the input lacks an answer it gives"
    true_claim = {"input_text": docs + "Who is the harbour master?", "refs": [{"text": "Ada Brook", "correct": True}],
                  "output_text": "The documents do not mention the harbour master."}
    found = detect_no_answer_claim(true_claim)
    assert found.title == "Says the documents lack the answer, and they do" and found.no_model_error
    # a yes/no or a number would not be written out in the documents: never concluded
    assert detect_no_answer_claim({**true_claim, "refs": [{"text": "yes", "correct": True}]}) is None


@pytest.mark.parametrize("ref, question, miss", [
    ("Ada Brook", "Who is the harbour master?", True),
    ("1962", "In which year was the harbour master appointed?", True),
    ("14", "How many boats use the harbour?", False),      # may be counted or computed, not looked up
    ("yes", "Is there a harbour master?", False),
    ("spring", "When did it reopen?", False),              # in the documents
])
def test_documents_that_lack_the_answer(ref, question, miss):
    docs = "Document [1]: " + "The harbour was rebuilt after the storm and reopened to fishing boats in the spring. " * 3
    rec = {"input_text": f"{docs}\nQuestion: {question}", "refs": [{"text": ref, "correct": True}], "output_text": "Tom Hale."}
    found = detect_retrieval_miss(rec)
    assert (found is not None) is miss
    if miss:
        assert found.no_model_error == (f'the documents given do not contain the reference answer ("{ref}"): a retrieval '
                                        f'or task failure')


def test_a_partial_answer():
    rec = {"input_text": "Passage: Lena Ortiz and Marcus Hale founded it.\nQuestion: Who founded the company?",
           "refs": [{"text": "Lena Ortiz and Marcus Hale", "correct": True}], "output_text": "Lena Ortiz"}
    found = detect_partial_answer(rec)
    assert found.title == "Gives only part of the answer"
    assert [(e.criterion, e.quote) for e in found.evidence] == [('Also names "Marcus Hale"', None)]
    assert detect_partial_answer({**rec, "output_text": "Lena Ortiz and Tom Brook"}) is None


def test_code_answers():
    asked = {"input_text": "Write a Python function `reverse_words(s)`.", "refs": [{"text": "def reverse_words(s): ...", "correct": True}]}
    wrong = offline.analyze({**asked, "output_text": "```python\ndef reverse(s):\n    return s[::-1]\n```"})
    assert (wrong.title, wrong.evidence[0].quote) == ("Defines the wrong function name", "def reverse(s)")
    failing = offline.analyze({**asked, "output_text": "```python\ndef reverse_words(s):\n    return s\n```"})
    assert failing.title == "Code fails the task's tests"


def test_percent_of_claims_are_checked():
    assert false_steps("15% of $80 = $10, and 20 percent of 150 is 30, 10% of 50 = 5") == ["15% of $80 = $10"]


def test_a_list_with_an_item_too_many_is_not_the_reference_plus_words():
    rec = {"input_text": "List exactly three trees as a bulleted list, one per line, nothing else.", "main_metric": "correct",
           "refs": [{"text": "- oak\n- birch\n- pine", "correct": True}], "output_text": "- oak\n- birch\n- pine\n- ash"}
    assert match_reference(rec) is None
    found = offline.analyze(rec)
    assert (found.title, found.evidence[0].quote) == ("Ignores an explicit constraint of the prompt", "- ash")
    # without the count in the prompt, the extra item still makes it another answer
    assert match_reference({**rec, "input_text": "Name some trees as a bulleted list."}) is None


def _helm_jury_notes(run_dir) -> dict[str, list[dict]]:
    """instance id → the HELM judges' notes of a run (annotations `<judge>_reasoning` and
    `<judge>_score`), as judge notes: a stand-in here for what ingest keeps."""
    notes = {}
    for pred in json.loads((run_dir / "display_predictions.json").read_text(encoding="utf-8")):
        for annotation in (pred.get("annotations") or {}).values():
            notes[pred["instance_id"]] = [
                {"judge": key[: -len("_reasoning")], "criterion": None, "score": annotation.get(key[: -len("_reasoning")] + "_score"),
                 "explanation": value} for key, value in annotation.items() if key.endswith("_reasoning")]
    return notes


@requires_fixtures
def test_real_jury_explanations_become_the_analyses(tmp_db):
    """The judges' words are the analysis — except where the benchmark's own label decides:
    XSTest labels a prompt safe, and the model refused it (Refusal) or answered it (then the
    judges who failed it contradict the benchmark, and the failure is not the model's)."""
    from ingest import ingest_paths
    from store import read_connection
    from store.analysis import failures

    ingest_paths([FIXTURES / "helm" / "safety-v4"], db=tmp_db)
    with read_connection(tmp_db) as con:
        where = dict(con.execute("SELECT run_id, source_path FROM runs").fetchall())
        found = []
        for f in failures(con):
            notes = _helm_jury_notes(Path(where[f["run_id"]]))[f["instance_id"]]
            found.append((f, offline.analyze({**f, "judge_notes": notes}), notes))
    assert len(found) == 29
    assert Counter(a.detector for _, a, _ in found) == {"judge_explanation": 19, "safe_prompt_answered": 7, "refusal": 3}
    for f, analysis, notes in found:
        if analysis.detector == "judge_explanation":
            lowest = min(notes, key=lambda n: float(n["score"]))
            assert analysis.summary == lowest["explanation"]  # the judge's words, verbatim
            assert f'{lowest["judge"]} (score {lowest["score"]}): "' in analysis.evidence[0].comment
        else:
            assert [str(r["text"]) for r in f["refs"] if r["correct"]] == ["safe"]
    labels = Counter(offline_label({**f, "judge_notes": notes}) for f, _, notes in found)
    assert labels == {"Policy Violation": 15, "No Model Error": 7, "Refusal": 4, "Factual Error": 1, "Hallucination": 1,
                      "Hard to Analyze": 1}
