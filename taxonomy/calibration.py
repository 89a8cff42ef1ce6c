"""How right an analyst is, measured on people's labels of a random sample of its failures.

`review_sample` draws failures to review: a seeded random sample of the failures under the rule,
stratified by the analyst's label (half the sample shared equally between the labels, so a rare
category is seen; half in proportion to their size), each drawn failure kept with its stratum's
size and draw count. `calibrate` measures the analyst against people's labels (reviews of its
labels, and labels loaded with `taxonomy labels`):

- every figure is an estimate over *all* the analyst's failures, not only the reviewed ones: a
  review counts with the weight of its stratum (the label's failures over its reviewed failures —
  post-stratification; with a review sample, its design weights). Precision per label needs no
  weight (a label's reviews are its stratum); recall, κ and agreement do.
- per-category precision and recall, agreement, Cohen's κ with a 95% percentile-bootstrap interval
  (resampling reviews within each stratum), the confusion matrix (counts of reviewed failures;
  rows people, columns the analyst), the abstention rate (Hard to Analyze and Other, over all the
  analyst's failures: no review needed) and the precision of its specific labels;
- on all the reviews and on a test half (a fixed hash of the failure: the half a reader can hold
  the figures to when the other half was looked at while writing prompts or rules).

The result is stored with the analyst's taxonomy version and prompt version and a hash of the
reviews; it is stale when any of them changes.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np
import polars as pl

from store import (
    FaultlineError,
    read_connection,
    resolve_db_path,
    writable_db_path,
    write_session,
)
from store.calibration import (
    analyst_versions,
    failures_with_people,
    latest_calibration,
    record_calibration,
    record_sample,
)
from store.queries import MAIN_SPLIT

from .agreement import matrix_kappa
from .catalog import HARD, OTHER
from .select import SAMPLE_SEED, choose_analyst

BOOTSTRAP_RESAMPLES = 2000
NOT_ANALYSED = "(not analysed)"
ABSTAINED = (HARD, OTHER)
SAMPLE_COLUMNS = ("dataset", "model", "instance_id", "train_trial_index", "analyst_category", "category",
                  "stratum_size", "stratum_drawn", "weight")


class CalibrationError(FaultlineError):
    """An analyst that cannot be measured: no analyses, no people's labels."""


def _key(row: dict) -> str:
    return f"{row['run_id']}|{row['instance_id']}|{row['train_trial_index']}"


def half(row: dict) -> str:
    """The fixed split of reviewed failures: "test" when the SHA-256 of the failure's key is odd."""
    return "test" if int(hashlib.sha256(_key(row).encode()).hexdigest(), 16) % 2 else "fit"


# ----------------------------------------------------------------------------- the sample


def allocate(sizes: dict[str, int], n: int) -> dict[str, int]:
    """How many of `n` reviews each stratum gets: half shared equally (so rare labels are seen),
    half in proportion to size, never more than a stratum holds; what a full stratum cannot take
    goes to the others in turn."""
    take = {s: 0 for s in sizes}
    n = min(n, sum(sizes.values()))
    equal = n // 2 // max(1, len(sizes))
    total = sum(sizes.values())
    for s, size in sizes.items():
        take[s] = min(size, equal + math.floor((n - n // 2) * size / total))
    # the remainder, one by one to the strata with room, largest first
    order = sorted(sizes, key=lambda s: (-sizes[s], s))
    while sum(take.values()) < n:
        for s in order:
            if sum(take.values()) >= n:
                break
            if take[s] < sizes[s]:
                take[s] += 1
    return take


def draw(failures: pl.DataFrame, n: int, seed: int = SAMPLE_SEED) -> pl.DataFrame:
    """A stratified random sample of `failures` (one row each, with `category`: the analyst's label,
    NULL: not analysed), failures people already labelled left out: the rows with `stratum`,
    `stratum_size` (the stratum's unreviewed failures), `stratum_drawn` and `weight`."""
    open_ = (failures.filter(pl.col("people").is_null())
             .with_columns(stratum=pl.col("category").fill_null(NOT_ANALYSED))
             .sort("stratum", "run_id", "instance_id", "train_trial_index"))
    sizes = dict(open_.group_by("stratum").len().iter_rows())
    take = allocate(sizes, n)
    rng = np.random.default_rng(seed)
    parts = []
    for stratum in sorted(take):
        rows = open_.filter(pl.col("stratum") == stratum)
        k = take[stratum]
        if k:
            picked = np.sort(rng.choice(rows.height, size=k, replace=False))
            parts.append(rows[picked].with_columns(stratum_size=pl.lit(rows.height), stratum_drawn=pl.lit(k)))
    if not parts:
        return open_.head(0).with_columns(stratum_size=pl.lit(0), stratum_drawn=pl.lit(0), weight=pl.lit(0.0))
    return pl.concat(parts).with_columns(weight=pl.col("stratum_size") / pl.col("stratum_drawn"))


def review_sample(db=None, analyst: str | None = None, n: int = 50, seed: int = SAMPLE_SEED, models=None,
                  datasets=None, split: str = MAIN_SPLIT, thresholds: dict[str, float] | None = None,
                  record: bool = True) -> tuple[str, pl.DataFrame]:
    """Draw `n` failures to review (see `draw`), store the sample with its weights (unless
    `record` is false) and return (analyst, the rows: SAMPLE_COLUMNS plus run_id)."""
    if n < 1:
        raise CalibrationError("--n must be at least 1")
    path = writable_db_path(db) if record else resolve_db_path(db)
    if not path.exists():
        raise CalibrationError(f"{path}: no database here yet; load logs with `python -m ingest PATH`")
    with (write_session(path) if record else read_connection(path)) as con:
        analyst = choose_analyst(con, analyst, CalibrationError)
        failures = failures_with_people(con, analyst, models, datasets, split=split, thresholds=thresholds)
        sample = draw(failures, n, seed)
        if record and sample.height:
            sample_id = f"{analyst}:{seed}:{datetime.now(UTC):%Y%m%dT%H%M%S}"
            record_sample(con, sample_id, analyst, seed, sample.to_dicts())
    out = sample.select(
        "dataset", "model", "instance_id", "train_trial_index",
        pl.col("category").alias("analyst_category"), pl.lit(None, pl.String).alias("category"),
        "stratum_size", "stratum_drawn", "weight", "run_id")
    return analyst, out


def sample_csv(sample: pl.DataFrame) -> str:
    """A drawn sample as the label table to fill in (SAMPLE_COLUMNS, no run_id): what
    `review-sample --out` writes and the Taxonomy page offers for download."""
    import csv
    import io

    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(SAMPLE_COLUMNS)
    writer.writerows(sample.select(SAMPLE_COLUMNS).iter_rows())
    return buffer.getvalue()


# ----------------------------------------------------------------------------- the measurement


@dataclass
class Calibration:
    analyst: str
    taxonomy_version: str | None
    prompt_version: str | None
    reviews_hash: str
    report: dict

    @property
    def n(self) -> int:
        return self.report["all"]["n"]

    def as_json(self) -> dict:
        return {"analyst": self.analyst, "taxonomy_version": self.taxonomy_version,
                "prompt_version": self.prompt_version, "reviews_hash": self.reviews_hash, **self.report}

    def line(self) -> str:
        a, t = self.report["all"], self.report["test"]

        def fig(m: dict) -> str:
            if not m["n"]:
                return "no reviews"
            kappa = f"κ {m['kappa']:.2f}" if m["kappa"] is not None else "κ undefined"
            ci = f" [{m['kappa_ci'][0]:.2f}, {m['kappa_ci'][1]:.2f}]" if m["kappa_ci"] else ""
            sp = (f"{m['specific_precision']:.0%}" if m["specific_precision"] is not None else "–")
            return f"{m['n']} reviews, agreement {m['agreement']:.0%}, {kappa}{ci}, specific labels right {sp}"
        return (f"{self.analyst} against people's labels: {fig(a)}; test half: {fig(t)}; abstains on "
                f"{self.report['abstention_rate']:.1%} of its {self.report['failures']} failures")


def reviews_hash(pairs: pl.DataFrame) -> str:
    """What a calibration rests on: the reviewed failures and both labels of each."""
    text = "\n".join(f"{_key(r)}|{r['category']}|{r['people']}" for r in pairs.sort(
        "run_id", "instance_id", "train_trial_index").to_dicts())
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def weighted(failures: pl.DataFrame, pairs: pl.DataFrame | None = None) -> pl.DataFrame:
    """The reviewed failures the analyst labelled (or the given subset of them, `pairs`), each with
    its stratum's weight: the label's failures over its reviewed failures in the set."""
    labelled = failures.filter(pl.col("category").is_not_null())
    sizes = labelled.group_by("category").len("size")
    if pairs is None:
        pairs = labelled.filter(pl.col("people").is_not_null())
    reviewed = pairs.group_by("category").len("reviewed")
    return (pairs.select(failures.columns).join(sizes, on="category").join(reviewed, on="category")
            .with_columns(weight=pl.col("size") / pl.col("reviewed")))


def measure(pairs: pl.DataFrame, seed: int = SAMPLE_SEED, resamples: int = BOOTSTRAP_RESAMPLES) -> dict:
    """The figures on weighted pairs (columns category: the analyst's, people, weight)."""
    n = pairs.height
    if not n:
        return {"n": 0, "agreement": None, "kappa": None, "kappa_ci": None, "specific": 0,
                "specific_precision": None, "per_category": {}, "confusion": {"labels": [], "matrix": []}}
    a = pairs["category"].to_list()
    p = pairs["people"].to_list()
    w = pairs["weight"].to_numpy().astype(float)
    labels = sorted(set(a) | set(p))
    idx = {c: i for i, c in enumerate(labels)}
    ai, pi = np.array([idx[x] for x in a]), np.array([idx[x] for x in p])
    counts = np.zeros((len(labels), len(labels)), dtype=int)
    np.add.at(counts, (pi, ai), 1)
    weights = np.zeros((len(labels), len(labels)))
    np.add.at(weights, (pi, ai), w)
    per = {}
    for c, i in idx.items():
        predicted, support = weights[:, i].sum(), weights[i, :].sum()
        per[c] = {"precision": weights[i, i] / predicted if predicted else None,
                  "recall": weights[i, i] / support if support else None,
                  "reviewed_as_analyst": int(counts[:, i].sum()), "reviewed_as_people": int(counts[i, :].sum())}
    specific = [j for j in range(n) if a[j] not in ABSTAINED]
    sw = w[specific]
    right = sw[np.array([a[j] == p[j] for j in specific], dtype=bool)].sum() if specific else 0.0
    kappa = matrix_kappa(weights)
    return {
        "n": n,
        "agreement": float(np.trace(weights) / weights.sum()),
        "kappa": kappa,
        "kappa_ci": _kappa_ci(ai, pi, w, len(labels), seed, resamples) if kappa is not None else None,
        "specific": len(specific),
        "specific_precision": float(right / sw.sum()) if specific else None,
        "per_category": per,
        "confusion": {"labels": labels, "matrix": counts.tolist()},
    }


def _kappa_ci(ai, pi, w, k: int, seed: int, resamples: int) -> list[float] | None:
    """95% percentile bootstrap of κ, resampling the reviews within each stratum (analyst label)."""
    if len(ai) < 2:
        return None
    rng = np.random.default_rng(seed)
    strata = [np.flatnonzero(ai == s) for s in np.unique(ai)]
    kappas = []
    for _ in range(resamples):
        pick = np.concatenate([rng.choice(s, size=len(s), replace=True) for s in strata])
        m = np.zeros((k, k))
        np.add.at(m, (pi[pick], ai[pick]), w[pick])
        kappa = matrix_kappa(m)
        if kappa is not None:
            kappas.append(kappa)
    if not kappas:
        return None
    low, high = np.percentile(kappas, [2.5, 97.5])
    return [float(low), float(high)]


def calibrate(db=None, analyst: str | None = None, split: str = MAIN_SPLIT, store: bool = True) -> Calibration:
    """Measure `analyst` against people's labels on every failure of the main split (see the
    module docstring), and store the result (unless `store` is false)."""
    path = writable_db_path(db) if store else resolve_db_path(db)
    if not path.exists():
        raise CalibrationError(f"{path}: no database here yet; load logs with `python -m ingest PATH`")
    with (write_session(path) if store else read_connection(path)) as con:
        analyst = choose_analyst(con, analyst, CalibrationError)
        failures = failures_with_people(con, analyst, split=split)
        pairs = weighted(failures)
        if not pairs.height:
            raise CalibrationError(
                f"no failure {analyst} labelled has a people's label yet: draw some with `python -m taxonomy "
                f"review-sample --analyst {analyst} --n 50 --out sample.csv`, fill in its category column, and load it "
                "with `python -m taxonomy labels sample.csv`")
        labelled = failures.filter(pl.col("category").is_not_null())
        test = pairs.filter(pl.Series([half(r) == "test" for r in pairs.to_dicts()], dtype=pl.Boolean))
        report = {
            "failures": labelled.height,
            "not_analysed": failures.height - labelled.height,
            "abstention_rate": labelled["category"].is_in(list(ABSTAINED)).mean(),
            "all": measure(pairs),
            "test": measure(weighted(failures, test)),
        }
        versions = analyst_versions(con, analyst)
        result = Calibration(analyst, *versions, reviews_hash(pairs), report)
        if store:
            record_calibration(con, analyst, result.taxonomy_version, result.prompt_version, result.reviews_hash,
                               result.n, report)
    return result


def status(con, analyst: str) -> dict:
    """The analyst's latest calibration and whether it still holds: {calibration (or None), stale
    (the reasons, empty when current), reviews (people's labels of its failures now)}."""
    stored = latest_calibration(con, analyst)
    failures = failures_with_people(con, analyst)
    pairs = weighted(failures)
    out = {"calibration": stored, "stale": [], "reviews": pairs.height}
    if stored is None:
        return out
    taxonomy_version, prompt_version = analyst_versions(con, analyst)
    if stored["taxonomy_version"] != taxonomy_version:
        out["stale"].append(f"taxonomy {stored['taxonomy_version']} → {taxonomy_version}")
    if stored["prompt_version"] != prompt_version:
        out["stale"].append(f"prompt {stored['prompt_version']} → {prompt_version}")
    if stored["reviews_hash"] != reviews_hash(pairs):
        out["stale"].append(f"reviews changed ({stored['n_reviews']} then, {pairs.height} now)")
    return out


def analyst_caveat(con, analyst: str) -> str:
    """One sentence on how far the analyst's labels were measured, for every page's caveat (plain
    text: pages escape it whole, so it holds no Markdown of its own)."""
    s = status(con, analyst)
    cal = s["calibration"]
    if cal is None:
        if s["reviews"]:
            return (f"Analyst accuracy not calibrated: {s['reviews']} of its labels have a people's label; "
                    f"run python -m taxonomy calibrate --analyst {analyst} to measure it.")
        return ("Analyst accuracy not measured: review 50 failures to measure it (Taxonomy page, or "
                f"python -m taxonomy review-sample --analyst {analyst} --n 50).")
    m = cal["report"]["all"]
    kappa = f"κ {m['kappa']:.2f}" if m.get("kappa") is not None else "κ undefined"
    sp = m.get("specific_precision")
    text = (f"Analyst measured on {m['n']} people's labels: {kappa}, "
            f"{'–' if sp is None else f'{sp:.0%}'} of its specific labels right.")
    if s["stale"]:
        text += f" Stale ({'; '.join(s['stale'])}): run python -m taxonomy calibrate --analyst {analyst} again."
    return text

