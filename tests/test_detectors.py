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
from taxonomy import NO_ERROR, analyze, load_taxonomy, offline
from taxonomy.detectors import chosen_option
from taxonomy.title_classifier import offline_classifier

DATA = Path(__file__).resolve().parent / "data"
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


LABELLED = [(family, ex, offline.analyse(_record(ex))) for family, ex in EXAMPLES]


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
    found = offline.analyse(rec)
    assert (found.detector, found.title) == ("data_extraction", "Extracts the wrong values from the input")
    assert [e.quote for e in found.evidence] == ["52 weeks"]
    missing = offline.analyse({
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


def devset_record(ex: dict) -> dict:
    """A hand-written case as `store.analysis.failures` gives a failure."""
    return {"input_text": ex["input"], "instructions": ex.get("instructions"),
            "refs": [{"text": r, "correct": True} for r in ex["refs"]], "output_text": ex["output"],
            "choices": ex.get("choices"), "mapped_output": ex.get("mapped_output"), "main_metric": ex.get("metric"),
            "judge_notes": ex.get("judge_notes"), "max_tokens": ex.get("max_tokens"),
            "output_tokens": ex.get("output_tokens"), "finish_reason": ex.get("finish_reason"),
            "dataset": ex.get("dataset", ex["task"])}


def offline_label(rec: dict) -> str:
    """The label the store gives the offline analysis of `rec` (store.analysis's label rule)."""
    found = offline.analyse(rec)
    return NO_ERROR if found.no_model_error else offline_classifier().predict([found.title])[0]


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
    assert (figures["n"], figures["agree"]) == (142, 106)
    assert figures["kappa"] == pytest.approx(0.7226, abs=5e-5)
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
    assert (figures["n"], figures["agree"]) == (47, 19)
    assert figures["kappa"] == pytest.approx(0.3618, abs=5e-5)
    assert (figures["nme_found"], figures["nme_total"], figures["nme_false"], figures["errors_total"]) == (5, 14, 0, 33)
    both = measure(pairs + [(ex["label"], offline_label(devset_record(ex))) for ex in DEVSET])
    print(f"both sets: {both}")
    assert both["kappa"] == pytest.approx(0.6336, abs=5e-5)
    assert (both["nme_found"], both["nme_total"], both["nme_false"], both["errors_total"]) == (36, 48, 0, 141)
