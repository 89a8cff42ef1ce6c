"""Error-type shares with their error (issue 32): stats/shares.py on frames whose truth is known."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from core.significance import wilson
from stats.shares import METHOD_SAMPLING, difference, estimate

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import shares_coverage  # noqa: E402


def _frame(rows):
    return pl.DataFrame(rows, schema=["model", "run_id", "instance_id", "train_trial_index", "category", "people"],
                        orient="row")


def test_without_people_the_shares_are_the_analysts_with_wilson_intervals():
    rows = [("m", "r", f"q{i}", 0, "A" if i < 3 else "B", None) for i in range(10)]
    est = estimate(_frame(rows), ["model"])
    assert not est.corrected and est.method == METHOD_SAMPLING
    a = est.frame.filter(pl.col("category") == "A").row(0, named=True)
    assert (a["count"], a["n"], a["share"]) == (3, 10, 0.3)
    assert (a["share_low"], a["share_high"]) == wilson(3, 10)
    assert difference(est, ("m",), ("m",), "A") is None


def test_people_who_labelled_every_failure_give_their_own_share():
    # the analyst calls everything A; people say 2 of 10 are A and 8 are B
    rows = [("m", "r", f"q{i}", 0, "A", "A" if i < 2 else "B") for i in range(10)]
    est = estimate(_frame(rows), ["model"])
    shares = dict(est.frame.select("category", "share").iter_rows())
    assert shares == {"A": pytest.approx(0.2), "B": pytest.approx(0.8)}
    b = est.frame.filter(pl.col("category") == "B").row(0, named=True)
    assert b["share_low"] < 0.8 < b["share_high"]  # the failures' own sampling error stays


def test_a_label_no_one_reviewed_spans_every_way_it_could_fall():
    rows = ([("m", "r", f"q{i}", 0, "A", "A") for i in range(20)]
            + [("m", "r", f"u{i}", 0, "C", None) for i in range(5)])
    row = estimate(_frame(rows), ["model"]).frame.filter(pl.col("category") == "C").row(0, named=True)
    assert row["unmeasured"] == 5 and row["share"] == pytest.approx(5 / 25)  # at face value
    # none of them C at the low end (a prior's crumb aside), all of them at the high
    assert row["share_low"] < 1e-3 and row["share_high"] >= 5 / 25


def test_one_symptom_that_paints_one_model_is_corrected():
    """A model whose failures the analyst files half under a surface symptom: reviews of that label
    show the true categories, and the corrected share of the symptom falls to what people say."""
    rng = np.random.default_rng(3)
    rows = []
    for i in range(400):
        truth = rng.choice(["Calculation Error", "Reasoning Error", "Formatting Error"], p=[0.45, 0.45, 0.10])
        said = "Formatting Error" if rng.random() < 0.6 else truth
        rows.append(("phi", "r", f"q{i}", 0, said, truth if i % 8 == 0 else None))
    est = estimate(_frame(rows), ["model"])
    fmt = est.frame.filter(pl.col("category") == "Formatting Error").row(0, named=True)
    assert fmt["count"] / fmt["n"] > 0.6  # what the analyst says
    truth = sum(r[4] == "Formatting Error" for r in rows if r[5] == "Formatting Error") or 0
    assert fmt["share_low"] < 0.16 and fmt["share"] < 0.25  # what people say: about 10%
    assert truth >= 0


def test_the_intervals_cover_the_peoples_shares_on_generated_stores():
    """bench/shares_coverage.py, small: 240 reviews over six models; the full run is in docs/stats.md."""
    result = shares_coverage.run(lambda rep: shares_coverage.generate(np.random.default_rng(rep)), [240], 8)[240]
    assert result["corrected"]["coverage"] >= 0.85
    assert result["uncorrected"]["coverage"] < 0.6


def test_wilson_many_equals_scipys_wilson_bit_for_bit():
    """The vectorised Wilson interval the uncorrected shares use is scipy's, exactly, at every count."""
    import numpy as np
    from scipy import stats as st

    from core.significance import wilson_many

    for n in (1, 2, 3, 7, 10, 97, 1000):
        lows, highs = wilson_many(np.arange(n + 1), n)
        for k in range(n + 1):
            ci = st.binomtest(k, n).proportion_ci(method="wilson")
            assert (float(lows[k]), float(highs[k])) == (float(ci.low), float(ci.high))
    lows, highs = wilson_many(np.array([0, 0]), 0)
    assert np.isnan(lows).all() and np.isnan(highs).all()
