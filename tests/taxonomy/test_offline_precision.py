"""How good the offline analyst's labels are (issue #24): the precision of its specific labels
beside its abstention rate, on labelled failures of the shapes the issue names — a development
half the rules were tuned on and a held-out half they were not (the split is a fixed hash rule
recorded in the data files) — and not one No Model Error where the output and the reference
differ in a number's value or sign, or in a negation."""

from __future__ import annotations

from collections import Counter

import pytest

import offline_sets as sets
from conftest import FIXTURES, requires_fixtures
from taxonomy import offline
from taxonomy.detectors import match_reference, normalise
from taxonomy.detectors.normalise import NEGATION

SHAPES = sets.load("offline_devset_shapes.yaml")
SHAPE_FIXTURES = sets.load("offline_devset_shapes_fixtures.yaml")
HALVES = ("dev", "held-out")


def _figures(cases: list[dict]) -> dict:
    return sets.measure([(ex["label"], sets.label(sets.record(ex))) for ex in cases])


def test_the_split_is_the_rule_the_files_record():
    for name in ("offline_devset_shapes.yaml", "offline_devset_shapes_fixtures.yaml"):
        assert "int(sha256(" in (sets.DATA / name).read_text(encoding="utf-8")
    assert Counter(sets.split(ex) for ex in SHAPES) == {"dev": 64, "held-out": 60}
    assert Counter(sets.split(ex) for ex in SHAPE_FIXTURES) == {"dev": 8, "held-out": 20}
    assert len({ex["id"] for ex in SHAPES}) == len(SHAPES) == 124
    assert len({sets.case_key(ex) for ex in SHAPE_FIXTURES}) == len(SHAPE_FIXTURES) == 28


def test_the_shapes_the_issue_names_are_in_both_halves():
    tasks = {"math word problem", "multistep arithmetic", "word sorting", "tracking shuffled objects",
             "logical deduction", "dyck languages", "multiple choice with template tokens",
             "jury-judged clinical text", "generation", "closed-book knowledge", "short answer"}
    assert {ex["task"] for ex in SHAPES if sets.split(ex) == "held-out"} == tasks
    # the hash put all four dyck-language cases in the held-out half: no rule was tuned on them
    assert tasks - {ex["task"] for ex in SHAPES if sets.split(ex) == "dev"} == {"dyck languages"}


# (n, agree, specific labels, right among them, abstained, No Model Errors found / people's, given to real errors).
# The held-out half was first measured once the rules were final (22 of 31 specific labels right,
# 29 abstained, 8 of 13 No Model Errors found); that measurement showed options listed in a BBH
# prompt were lost when an "A: Let's think step by step." line followed them — fixed, giving:
# Issue #32 (correctness before surface): the held-out half moved from (60, 27, 33, 25, 27, 11, 13, 0)
# — 25 of 33 specific labels right, 27 abstained — to 24 of 29 right, 31 abstained: four specific
# labels became Hard to Analyze, three of them wrong before (precision 76% → 83%). Its cases were
# not read: the figures are from the rules written on the development halves.
EXPECTED = {
    "dev": (64, 36, 37, 36, 27, 10, 11, 0),
    "held-out": (60, 26, 29, 24, 31, 11, 13, 0),
}


@pytest.mark.parametrize("half", HALVES)
def test_precision_of_specific_labels_on_each_half(half):
    figures = _figures([ex for ex in SHAPES if sets.split(ex) == half])
    print(f"{half}: {figures}")
    got = tuple(figures[k] for k in ("n", "agree", "specific", "specific_right", "abstained", "nme_found", "nme_total",
                                     "nme_false"))
    assert got == EXPECTED[half]
    # the goal of issue #24: at least 60% of the specific labels right on data the rules were not
    # written against, and no real error called the scoring's
    assert figures["specific_precision"] >= 0.6 and figures["nme_false"] == 0


SURFACE = sets.load("offline_devset_surface.yaml")
# Issue #32, offline_devset_surface.yaml (written cases of the mechanisms measured wrong on unseen
# human labels; the same hash split). Before the change (offline-v4 as issue #24 left it):
#   dev (41, 12, 29, 9, 12, 0, 7, 1) — 9 of 29 specific labels right, 12 abstained;
#   held-out (30, 13, 23, 8, 7, 0, 2, 0) — 8 of 23 right, 7 abstained.
# After, rules written on the dev half; the held-out half measured once the rules were final:
EXPECTED_SURFACE = {
    "dev": (41, 21, 14, 13, 27, 2, 7, 0),
    "held-out": (30, 16, 9, 8, 21, 0, 2, 0),
}


def test_every_surface_mechanism_is_in_both_halves():
    assert "int(sha256(" in (sets.DATA / "offline_devset_surface.yaml").read_text(encoding="utf-8")
    assert len({ex["id"] for ex in SURFACE}) == len(SURFACE) == 71
    halves = {h: {ex["task"] for ex in SURFACE if sets.split(ex) == h} for h in HALVES}
    assert halves["dev"] == halves["held-out"] and len(halves["dev"]) == 9


@pytest.mark.parametrize("half", HALVES)
def test_precision_on_the_surface_mechanisms(half):
    figures = sets.measure([(ex["label"], sets.case_label(ex)) for ex in SURFACE if sets.split(ex) == half])
    print(f"surface, {half}: {figures}")
    got = tuple(figures[k] for k in ("n", "agree", "specific", "specific_right", "abstained", "nme_found", "nme_total",
                                     "nme_false"))
    assert got == EXPECTED_SURFACE[half]
    assert figures["nme_false"] == 0


@pytest.fixture(scope="module")
def shape_fixture_failures(tmp_path_factory):
    from ingest import ingest_paths

    db = tmp_path_factory.mktemp("shapes") / "fixtures.duckdb"
    paths = sorted({ex["path"] for ex in SHAPE_FIXTURES})
    ingest_paths([FIXTURES / p for p in paths], db=db)
    return sets.fixture_failures(db, paths)


EXPECTED_FIXTURES = {
    "dev": (8, 5, 5, 5, 3, 0, 0, 0),
    "held-out": (20, 11, 13, 11, 7, 6, 7, 0),
}


@requires_fixtures
@pytest.mark.parametrize("half", HALVES)
def test_precision_of_specific_labels_on_real_failures(shape_fixture_failures, half):
    pairs = [(ex["label"], sets.label(shape_fixture_failures[(ex["path"], ex["model"], ex["id"])]))
             for ex in SHAPE_FIXTURES if sets.split(ex) == half]
    figures = sets.measure(pairs)
    print(f"real failures, {half}: {figures}")
    got = tuple(figures[k] for k in ("n", "agree", "specific", "specific_right", "abstained", "nme_found", "nme_total",
                                     "nme_false"))
    assert got == EXPECTED_FIXTURES[half]
    assert figures["nme_false"] == 0


def _numbers(tokens) -> list:
    return sorted(t for t in tokens if t.lstrip("-").replace(".", "", 1).isdigit())


def test_no_model_error_never_differs_from_the_reference_in_a_number_or_a_negation():
    """Every normalised match over every written case: the matched words say the same numbers, with
    the same signs, and the same negations, as the reference they match."""
    cases = SHAPES + sets.load("offline_devset.yaml")
    matched = 0
    for ex in cases:
        rec = sets.record(ex)
        found = match_reference(rec)
        if found is None:
            continue
        ref, quote, _ = found
        r, q = normalise(ref).tokens, normalise(quote).tokens
        assert _numbers(q) == _numbers(r), ex["id"]
        assert {t for t in r if t in NEGATION} == {t for t in q if t in NEGATION}, ex["id"]
        assert offline.analyze(rec).no_model_error is not None
        matched += 1
    assert matched >= 40


def test_the_offline_caveat_quotes_the_held_out_figures():
    """The caveat every page shows says what these tests measure on data the rules were not
    written against (the study's figures come from docs/analysis.md: its data is not shipped)."""
    from ui.data import OFFLINE_CAVEAT

    n, _, specific, right, abstained, *_ = EXPECTED["held-out"]
    assert f"{round(100 * right / specific)}% of its specific labels" in OFFLINE_CAVEAT
    assert f"abstains on {round(100 * abstained / n)}% ({n} written failures" in OFFLINE_CAVEAT
    n, _, specific, right, abstained, *_ = EXPECTED_FIXTURES["held-out"]
    assert f"{right} of {specific} right, {round(100 * abstained / n)}% abstained, on {n} real ones" in OFFLINE_CAVEAT
