"""Measuring the analyst (issue 32): review samples, label tables, calibrate — against scikit-learn."""

from __future__ import annotations

import csv
import json
import shutil

import polars as pl
import pytest
from sklearn.metrics import cohen_kappa_score, precision_recall_fscore_support

from conftest import q, run_module
from store import read_connection
from store.calibration import failures_with_people
from taxonomy.calibration import allocate, analyst_caveat, calibrate, draw, review_sample, status, weighted
from taxonomy.labels import LabelsError, load_labels


@pytest.fixture
def store(demo_db, tmp_path):
    db = tmp_path / "s.duckdb"
    shutil.copy(demo_db, db)
    return db


def _fill(rows: list[dict], every: int = 3) -> list[dict]:
    """A reviewer who agrees with the analyst except on every `every`-th failure, which they call a
    Reasoning Error (or a Calculation Error where the analyst said Reasoning Error)."""
    out = []
    for i, r in enumerate(rows):
        said = r["analyst_category"]
        other = "Calculation Error" if said == "Reasoning Error" else "Reasoning Error"
        out.append({**r, "category": other if i % every == 0 else said})
    return out


def _write(path, rows: list[dict]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def _reviewed(store, tmp_path, n: int = 30) -> list[dict]:
    _, sample = review_sample(store, "offline", n)
    rows = _fill([{k: ("" if v is None else v) for k, v in r.items() if k != "run_id"} for r in sample.to_dicts()])
    _write(tmp_path / "filled.csv", rows)
    summary = load_labels([tmp_path / "filled.csv"], store, "tester")
    assert (summary.labels, summary.added, summary.already) == (n, n, 0)
    return rows


def test_allocation_shares_half_equally_and_half_by_size():
    # 3 each shared (c holds 2), 8 by size to a, then the 4 left one at a time, largest first: a, b, a, b
    assert allocate({"a": 100, "b": 10, "c": 2}, 20) == {"a": 13, "b": 5, "c": 2}
    assert allocate({"a": 100, "b": 10, "c": 2}, 200) == {"a": 100, "b": 10, "c": 2}  # all there is
    assert sum(allocate({"a": 7, "b": 5}, 9).values()) == 9


def test_the_sample_is_seeded_stratified_and_weighted():
    frame = pl.DataFrame({"run_id": ["r"] * 60, "instance_id": [f"q{i}" for i in range(60)],
                          "train_trial_index": [0] * 60, "category": ["A"] * 50 + ["B"] * 8 + [None] * 2,
                          "people": [None] * 60})
    one, two = draw(frame, 12, seed=7), draw(frame, 12, seed=7)
    assert one.equals(two)
    assert not one.equals(draw(frame, 12, seed=8))
    sizes = dict(one.group_by("stratum").agg(pl.len(), pl.col("weight").first()).select(
        "stratum", pl.struct("len", "weight")).iter_rows())
    # 6 shared equally (2 each), 6 by size (5, 0, 0) then the remainder to the largest: A 8, B 2, (not analysed) 2
    assert {k: (v["len"], v["weight"]) for k, v in sizes.items()} == {
        "A": (8, 50 / 8), "B": (2, 8 / 2), "(not analysed)": (2, 2 / 2)}


def test_review_sample_records_its_draw(store):
    analyst, sample = review_sample(store, None, 25)
    assert analyst == "offline" and sample.height == 25
    assert q(store, "SELECT count(*), count(DISTINCT sample_id) FROM review_samples") == [(25, 1)]
    assert sample["category"].null_count() == 25  # for people to fill in


def test_calibrate_equals_scikit_learn(store, tmp_path):
    _reviewed(store, tmp_path)
    result = calibrate(store, "offline")
    with read_connection(store) as con:
        pairs = weighted(failures_with_people(con, "offline"))
    y, a, w = pairs["people"].to_list(), pairs["category"].to_list(), pairs["weight"].to_list()
    got = result.report["all"]
    assert got["n"] == 30
    assert got["kappa"] == pytest.approx(cohen_kappa_score(y, a, sample_weight=w), abs=1e-12)
    labels = got["confusion"]["labels"]
    precision, recall, _, _ = precision_recall_fscore_support(y, a, labels=labels, sample_weight=w,
                                                              zero_division=float("nan"))
    for c, p, r in zip(labels, precision, recall):
        mine = got["per_category"][c]
        assert (mine["precision"] is None) == (p != p) and (mine["precision"] is None or mine["precision"] == pytest.approx(p))
        assert (mine["recall"] is None) == (r != r) and (mine["recall"] is None or mine["recall"] == pytest.approx(r))
    # the unweighted confusion: 30 reviews, 20 where the reviewer kept the analyst's label
    matrix = got["confusion"]["matrix"]
    assert sum(map(sum, matrix)) == 30
    assert sum(matrix[i][i] for i in range(len(labels))) == 20
    assert got["kappa_ci"][0] < got["kappa"] < got["kappa_ci"][1]
    assert 0 < result.report["test"]["n"] < 30


def test_a_calibration_is_stored_and_goes_stale(store, tmp_path):
    with read_connection(store) as con:
        assert analyst_caveat(con, "offline").startswith("Analyst accuracy not measured: review")
    rows = _reviewed(store, tmp_path)
    with read_connection(store) as con:
        assert analyst_caveat(con, "offline").startswith("Analyst accuracy not calibrated: 30 of its labels")
    calibrate(store, "offline")
    with read_connection(store) as con:
        s = status(con, "offline")
        assert s["stale"] == [] and s["calibration"]["n_reviews"] == 30
        assert s["calibration"]["prompt_version"] == "offline-v4" or s["calibration"]["prompt_version"]
        assert analyst_caveat(con, "offline").startswith("Analyst measured on 30 people's labels: κ")
    # one more people's label: the stored measurement no longer holds
    more = draw(_frame(store), 1, seed=99).to_dicts()[0]
    _write(tmp_path / "one.csv", [{"dataset": more["dataset"], "model": more["model"],
                                   "instance_id": more["instance_id"], "category": "Refusal"}])
    load_labels([tmp_path / "one.csv"], store, "tester")
    with read_connection(store) as con:
        assert status(con, "offline")["stale"] == ["reviews changed (30 then, 31 now)"]
        assert "Stale (reviews changed (30 then, 31 now))" in analyst_caveat(con, "offline")
    assert rows


def _frame(store):
    with read_connection(store) as con:
        return failures_with_people(con, "offline")


@pytest.mark.parametrize("row,message", [
    ({"dataset": "demo_math", "model": "demo/atlas-7b", "instance_id": "arithmetic/id12", "category": "Bad Maths"},
     "filled.csv:2: 'Bad Maths' is not a category of any taxonomy in the store"),
    ({"dataset": "demo_math", "model": "demo/atlas-7b", "instance_id": "nope", "category": "Refusal"},
     "filled.csv:2: the store holds no prediction of 'demo/atlas-7b' on 'demo_math' question 'nope'"),
    ({"dataset": "demo_math", "model": "demo/atlas-7b", "instance_id": "arithmetic/id12", "category": ""},
     "filled.csv:2: no category, step or agent: nothing to label"),
    ({"dataset": "demo_math", "model": "demo/atlas-7b", "instance_id": "arithmetic/id12", "category": "refusal",
      "train_trial_index": "²"}, "filled.csv:2: train_trial_index: expected a whole number"),
])
def test_a_bad_label_table_names_its_line_and_loads_nothing(store, tmp_path, row, message):
    _write(tmp_path / "filled.csv", [{"dataset": "demo_math", "model": "demo/atlas-7b",
                                      "instance_id": "arithmetic/id5", "category": "Refusal",
                                      **{k: "" for k in row if k not in ("dataset", "model", "instance_id", "category")}},
                                     row])
    # the first row is fine: the second stops the whole table
    text = (tmp_path / "filled.csv").read_text().splitlines()
    (tmp_path / "filled.csv").write_text("\n".join([text[0], text[2], text[1]]) + "\n")
    with pytest.raises(LabelsError) as err:
        load_labels([tmp_path / "filled.csv"], store, "tester")
    assert message in err.value.message
    assert q(store, "SELECT count(*) FROM reviews") == [(0,)]


def test_the_commands_as_a_user_runs_them(store, tmp_path):
    env = {"FAULTLINE_DB": str(store)}
    out = run_module("taxonomy", "review-sample", "--n", "12", "--out", str(tmp_path / "s.csv"), env=env)
    assert out.returncode == 0, out.stderr
    assert out.stderr.startswith("12 failures of offline drawn (seed 20240601)")
    rows = list(csv.DictReader(open(tmp_path / "s.csv", encoding="utf-8")))
    assert len(rows) == 12 and {r["category"] for r in rows} == {""}
    _write(tmp_path / "f.csv", _fill(rows))
    out = run_module("taxonomy", "labels", str(tmp_path / "f.csv"), env=env)
    assert out.returncode == 2 and out.stderr == f"error: {tmp_path / 'f.csv'}:2: no reviewer: give --reviewer or a reviewer column\n"
    out = run_module("taxonomy", "labels", str(tmp_path / "f.csv"), "--reviewer", "me", env=env)
    assert out.returncode == 0 and out.stdout.startswith("12 people's labels loaded as reviews")
    out = run_module("taxonomy", "calibrate", "--json", env=env)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["all"]["n"] == 12 and data["analyst"] == "offline"
    out = run_module("stats", "signatures", "--json", env=env)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["method"].startswith("corrected for the analyst's measured misclassification")
    assert set(data["rows"][0]) == {"model", "category", "share", "share_low", "share_high", "count", "people",
                                    "failures", "reviewed", "unmeasured", "reviews_used", "corrected"}
    assert {r["reviews_used"] for r in data["rows"]} == {12}
    for r in data["rows"]:
        assert 0 <= r["share_low"] <= r["share"] <= r["share_high"] <= 1
