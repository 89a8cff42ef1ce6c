"""Do the corrected error-type shares' intervals contain the people's shares? (issue 32)

    python bench/shares_coverage.py [--reps 200] [--reviews 60 120 240] [--json]
    python bench/shares_coverage.py --devsets      # on the offline analyst's hand-labelled sets

Generated stores: six models with 40 to 1,500 failures each, nine categories, each model's true
mix drawn from a Dirichlet; an analyst that is right on 40-90% of a category's failures, abstains
on some, and — for one model — files 40% of every kind of failure under one surface symptom (the
phi-3.5 "template tokens" case). People label every failure (the truth); a review sample of
`--reviews` failures (taxonomy.calibration.draw: stratified by the analyst's label) is loaded as
reviews, and stats.shares.estimate gives each (model, category) share a 95% interval.

Reported per review budget, over `--reps` reseeded stores and samples: the coverage of the
people's share by the corrected interval and by the uncorrected one (Wilson on the analyst's
count), over every (model, category) with at least 5 failures people put there, and the mean
widths. `--devsets` does the same on tests/data/offline_devset*.yaml (the offline analyst's label
against the people's, each file a "model"), on the development half and the held-out half apart.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import polars as pl

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from stats.shares import estimate  # noqa: E402
from taxonomy.calibration import draw  # noqa: E402

CATEGORIES = ["Calculation Error", "Formatting Error", "Hallucination", "Incomplete", "Misread Question",
              "Reasoning Error", "Refusal", "Hard to Analyze", "No Model Error"]
SIZES = [40, 90, 200, 400, 800, 1500]
MIN_CASES = 5


def generate(rng: np.random.Generator) -> pl.DataFrame:
    k = len(CATEGORIES)
    accuracy = rng.uniform(0.4, 0.9, size=k)
    confusion = np.zeros((k, k))  # true → analyst
    for t in range(k):
        off = rng.dirichlet(np.full(k - 1, 0.5))
        confusion[t] = np.insert(off * (1 - accuracy[t]), t, accuracy[t])
    rows = []
    for m, size in enumerate(SIZES):
        mix = rng.dirichlet(np.full(k, 0.7))
        truth = rng.choice(k, size=size, p=mix)
        said = np.array([rng.choice(k, p=confusion[t]) for t in truth])
        if m == 2:  # the surface symptom that paints a whole model
            said = np.where(rng.random(size) < 0.4, CATEGORIES.index("Formatting Error"), said)
        for i, (t, s) in enumerate(zip(truth, said)):
            rows.append((f"model-{m}", f"r{m}", f"q{i}", 0, CATEGORIES[s], CATEGORIES[t]))
    return pl.DataFrame(rows, schema=["model", "run_id", "instance_id", "train_trial_index", "category", "truth"],
                        orient="row")


def score(population: pl.DataFrame, n_reviews: int, seed: int) -> dict:
    """One store: the intervals' hits and widths against the people's shares."""
    hidden = population.with_columns(people=pl.lit(None, pl.String))
    sample = draw(hidden, n_reviews, seed)
    reviewed = sample.select("run_id", "instance_id", "train_trial_index").with_columns(rev=pl.lit(True))
    loaded = (population.join(reviewed, on=["run_id", "instance_id", "train_trial_index"], how="left")
              .with_columns(people=pl.when(pl.col("rev")).then(pl.col("truth"))).drop("rev"))
    corrected = estimate(loaded, ["model"], seed=seed).frame
    plain = estimate(loaded.with_columns(people=pl.lit(None, pl.String)), ["model"]).frame
    truth = (population.group_by("model", pl.col("truth").alias("category")).len("true")
             .join(population.group_by("model").len("total"), on="model")
             .with_columns(true_share=pl.col("true") / pl.col("total")))
    out = {}
    for name, frame in (("corrected", corrected), ("uncorrected", plain)):
        j = truth.filter(pl.col("true") >= MIN_CASES).join(frame, on=["model", "category"], how="left")
        j = j.with_columns(pl.col("share_low").fill_null(0.0), pl.col("share_high").fill_null(0.0))
        hit = (j["share_low"] <= j["true_share"] + 1e-12) & (j["true_share"] <= j["share_high"] + 1e-12)
        out[name] = (int(hit.sum()), j.height, float((j["share_high"] - j["share_low"]).sum()))
    return out


def run(populations, budgets: list[int], reps: int) -> dict:
    result = {}
    for n in budgets:
        tally = {"corrected": [0, 0, 0.0], "uncorrected": [0, 0, 0.0]}
        for rep in range(reps):
            for name, (hit, cells, width) in score(populations(rep), n, seed=1000 + rep).items():
                tally[name][0] += hit
                tally[name][1] += cells
                tally[name][2] += width
        result[n] = {name: {"coverage": h / c if c else None, "cells": c, "mean_width": w / c if c else None}
                     for name, (h, c, w) in tally.items()}
    return result


def devset_population(half: str) -> pl.DataFrame:
    import offline_sets as sets

    rows = []
    for name in ("offline_devset.yaml", "offline_devset_shapes.yaml", "offline_devset_surface.yaml"):
        for i, ex in enumerate(sets.load(name)):
            if "input" in ex and sets.split(ex) == half:
                rows.append((name.removesuffix(".yaml"), name, f"{i}", 0,
                             sets.label(sets.record(ex)), ex["label"]))
    return pl.DataFrame(rows, schema=["model", "run_id", "instance_id", "train_trial_index", "category", "truth"],
                        orient="row")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=200, help="reseeded stores per review budget (default 200)")
    ap.add_argument("--reviews", type=int, nargs="+", default=[60, 120, 240], help="review budgets")
    ap.add_argument("--devsets", action="store_true", help="the offline analyst's hand-labelled sets instead")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if args.devsets:
        result = {}
        for half in ("dev", "held-out"):
            pop = devset_population(half)
            budgets = [b for b in args.reviews if b < pop.height]
            result[half] = {"failures": pop.height, **run(lambda rep, p=pop: p, budgets, args.reps)}
    else:
        result = {"generated": run(lambda rep: generate(np.random.default_rng(rep)), args.reviews, args.reps)}
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    for part, by_budget in result.items():
        print(part)
        for n, r in by_budget.items():
            if n == "failures":
                print(f"  {r} failures")
                continue
            c, u = r["corrected"], r["uncorrected"]
            print(f"  {n:>4} reviews: corrected coverage {c['coverage']:.1%} (mean width {c['mean_width']:.3f}), "
                  f"uncorrected {u['coverage']:.1%} (width {u['mean_width']:.3f}) over {c['cells']} cells")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
