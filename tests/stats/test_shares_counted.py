"""The shares read counted failures (store.calibration.failure_label_counts) and give exactly what
one row per failure (failures_with_people) gives: the /compare and /signatures pages' speed-up
changes no number, with people's labels (the corrected model) and without (sampling only)."""

from __future__ import annotations

import csv
import shutil

import numpy as np
import polars as pl
import pytest

from stats.shares import estimate
from stats.signatures import shares
from store import read_connection
from store.calibration import failure_label_counts, failures_with_people
from taxonomy.calibration import review_sample
from taxonomy.labels import load_labels


@pytest.fixture
def reviewed(demo_db, tmp_path):
    """The demo store with 30 of the offline analyst's failures labelled by people, every third
    differently from the analyst."""
    db = tmp_path / "s.duckdb"
    shutil.copy(demo_db, db)
    _, sample = review_sample(db, "offline", 30)
    rows = []
    for i, r in enumerate(sample.to_dicts()):
        said = r["analyst_category"]
        other = "Calculation Error" if said == "Reasoning Error" else "Reasoning Error"
        rows.append({**{k: ("" if v is None else v) for k, v in r.items() if k != "run_id"},
                     "category": other if i % 3 == 0 else said})
    with open(tmp_path / "filled.csv", "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    assert load_labels([tmp_path / "filled.csv"], db, "tester").labels == 30
    return db


def _per_failure(con, by, models):
    """The shares as they were computed before: from one row per failure."""
    failures = failures_with_people(con, "offline")
    if by:
        failures = failures.with_columns(pl.col(by).fill_null("(none)"))
    est = estimate(failures, ["model"] + ([by] if by else []))
    if models:
        est.frame = est.frame.filter(pl.col("model").is_in(models))
        est.draws = {k: v for k, v in est.draws.items() if k[0] in models}
    return est


@pytest.mark.parametrize("with_people", [True, False])
@pytest.mark.parametrize("by", [None, "dataset", "domain"])
def test_counted_failures_give_the_same_shares_as_one_row_per_failure(demo_db, reviewed, with_people, by):
    db = reviewed if with_people else demo_db
    with read_connection(db) as con:
        models = sorted(failures_with_people(con, "offline")["model"].unique().to_list())[:2]
        counted = failure_label_counts(con, "offline", by=by)
        assert int(counted["failures"].sum()) == failures_with_people(con, "offline").height
        for pick in (None, models):
            new, old = shares(con, "offline", pick, by=by), _per_failure(con, by, pick)
            assert new.corrected is with_people and new.reviews == old.reviews
            assert new.categories == old.categories
            assert new.frame.equals(old.frame)
            assert new.draws.keys() == old.draws.keys()
            assert all(np.array_equal(new.draws[k], old.draws[k]) for k in new.draws)
