"""What a signature's reader opens on: /slices shows one model at a time and opens on the model with
most failures under an error type, not the first by name (a model whose every label is Hard to
Analyze, e.g. an agent run, has no slice to show)."""

import polars as pl

from stats import most_typed_model


def _sig(rows):
    return pl.DataFrame(rows, schema={"model": pl.String, "category": pl.String, "error_type": pl.Boolean,
                                      "count": pl.Int64}, orient="row")


def test_the_model_with_most_failures_under_an_error_type_is_picked_and_labels_that_are_not_types_do_not_count():
    sig = _sig([("a-agent", "Hard to Analyze", False, 90),
                ("b-model", "Reasoning Error", True, 3), ("b-model", "Hard to Analyze", False, 50),
                ("c-model", "Reasoning Error", True, 2), ("c-model", "Formatting Error", True, 2)])
    assert most_typed_model(sig) == "c-model"
    # equal counts: the first by name
    assert most_typed_model(sig.filter(pl.col("model") != "c-model").vstack(
        _sig([("a-agent", "Formatting Error", True, 3)]))) == "a-agent"


def test_no_failure_with_an_error_type_picks_none():
    assert most_typed_model(_sig([("a", "Hard to Analyze", False, 5), ("b", "Other", False, 1)])) is None
    assert most_typed_model(_sig([])) is None
