"""Error-type shares with their error: sampling error and the analyst's measured misclassification.

The estimand, for a model (or a model within a slice) and a category c: the share of the model's
failures — every failure under the pass rule, whatever the analyst said of it, No Model Error and
Hard to Analyze included — whose *true* category (the one people give it) is c.

Method (docs/stats.md, "Error-type shares with their error"): a failure people labelled counts
with their label; the others through a latent-class model of the analyst's misclassification,
fitted by data augmentation (`_posterior`): each model's true mix θ_g and its own confusion M_g
(P(analyst's label | true category)), pulled towards a confusion shared by every model. The 95%
interval is the 2.5th and 97.5th percentiles of the posterior draws of θ_g, so it carries both
the reviews' sampling error and the failures'; the share shown is the mean over draws of the
model's own failures' mix (people's share itself where they labelled every failure).

- A label no one reviewed (on any model) cannot be corrected: its failures count at face value in
  the share, and the interval spans every way they could fall (none of them in c, all of them in
  c). `unmeasured` counts them.
- With no review at all the shares are the analyst's, and the interval is Wilson's on the count
  (sampling only): "analyst accuracy not measured".
- Failures the analyst has not analysed (an analysis with --limit) and people did not label are
  left out, taken to be like the analysed ones of the same model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from core.significance import wilson_many

DRAWS = 600
SEED = 20261129
# the Gibbs sampler's warm-up draws, dropped
BURN_IN = 200
# every THIN-th draw is kept (the imputed categories make successive draws alike)
THIN = 4
# how many failures of a true category the shared confusion counts as in each group's own
SHARED_WEIGHT = 10.0
# below this many labelled failures a share is shown as a count, not a saturated colour
FEW = 5
ESTIMAND = ("share: of the model's failures (every failure under the pass rule, whatever the analyst said of it, "
            "No Model Error included), those whose true category — the one people give it — is this one")
METHOD_CORRECTED = ("corrected for the analyst's measured misclassification (a latent-class model fitted "
                    "to people's labels)")
METHOD_SAMPLING = "sampling error only: analyst accuracy not measured"

SHARE_SCHEMA = {"category": pl.String, "count": pl.Int64, "people": pl.Int64, "n": pl.Int64, "reviewed": pl.Int64,
                "unmeasured": pl.Int64, "share": pl.Float64, "share_low": pl.Float64, "share_high": pl.Float64,
                "corrected": pl.Boolean}


@dataclass
class Shares:
    """Corrected shares per group and category, and the posterior draws behind them (for
    differences between groups)."""

    frame: pl.DataFrame
    categories: list[str]
    reviews: int  # reviews the correction rests on (over every model, within the rule)
    draws: dict[tuple, np.ndarray] = field(default_factory=dict)  # group → (DRAWS, K) shares

    @property
    def corrected(self) -> bool:
        return self.reviews > 0

    @property
    def method(self) -> str:
        return METHOD_CORRECTED if self.corrected else METHOD_SAMPLING


def estimate(failures: pl.DataFrame, keys: list[str], draws: int = DRAWS, seed: int = SEED) -> Shares:
    """Shares per group (`keys`) from `failures`: one row per failure with `keys`, `category`
    (the analyst's label, NULL: not analysed) and `people` (people's label, NULL: not reviewed) —
    or, with a column `failures`, one row per that many failures alike
    (`store.calibration.failure_label_counts`).

    Rows: keys, SHARE_SCHEMA's columns, one per category either side used anywhere in the frame."""
    f = failures.filter(pl.col("category").is_not_null() | pl.col("people").is_not_null())
    cats = sorted(set(f["category"].drop_nulls().to_list()) | set(f["people"].drop_nulls().to_list()))
    k = len(cats)
    index = {c: i for i, c in enumerate(cats)}
    grouped = f.group_by(*keys, "category", "people")
    counted = grouped.agg(pl.col("failures").sum()) if "failures" in f.columns else grouped.len()
    groups = sorted({tuple(r) for r in counted.select(keys).iter_rows()},
                    key=lambda key: tuple("" if v is None else str(v) for v in key)) if keys else [()]
    where = {key: gi for gi, key in enumerate(groups)}
    n_groups = len(groups)
    known = np.zeros((n_groups, k))  # people's labels per group
    open_ = np.zeros((n_groups, k))  # unreviewed failures per group and analyst label
    analyst = np.zeros((n_groups, k))
    pairs = np.zeros((n_groups, k, k))  # per group: people's label × analyst's label
    for row in counted.iter_rows():
        gi, (a, p, n) = where[tuple(row[:len(keys)])], row[len(keys):]
        if p is not None:
            known[gi, index[p]] += n
            if a is not None:
                pairs[gi, index[p], index[a]] += n
        else:
            open_[gi, index[a]] += n
        if a is not None:
            analyst[gi, index[a]] += n
    # the analyst reads each model's outputs its own way: one confusion per model, whatever the slice
    models = sorted({key[0] for key in groups}, key=lambda m: "" if m is None else str(m)) if keys else [None]
    reader = np.array([models.index(key[0]) if keys else 0 for key in groups], dtype=np.int64)
    totals = known.sum(axis=1) + open_.sum(axis=1)
    if pairs.sum() == 0:
        theta = None
        rows = [r for gi in range(n_groups) for r in _sampling_only(cats, analyst[gi], int(totals[gi]))]
    else:
        measured = pairs.sum(axis=(0, 1)) > 0  # analyst labels people reviewed somewhere
        theta, own = _posterior(known, open_ * measured, pairs, reader, draws, np.random.default_rng(seed))
        rows = _corrected_rows(cats, theta, own, known, open_, analyst, measured)
    keyed = [{**dict(zip(keys, key)), **r} for gi, key in enumerate(groups) for r in rows[gi * k:(gi + 1) * k]]
    schema = {**{k_: failures.schema[k_] for k_ in keys}, **SHARE_SCHEMA}
    draws_by_group = {}
    if theta is not None:
        for gi, key in enumerate(groups):
            draws_by_group[key] = theta[:, gi, :]
    return Shares(pl.DataFrame(keyed, schema=schema, orient="row"), cats, int(pairs.sum()), draws_by_group)


def _posterior(known: np.ndarray, open_: np.ndarray, pairs: np.ndarray, reader: np.ndarray, draws: int,
               rng) -> tuple[np.ndarray, np.ndarray]:
    """Draws of each group's true mix (draws × groups × K), by data augmentation (a Gibbs
    sampler). The analyst's confusion M_m (rows: the true category; P(analyst's label | true))
    is each model's own (`reader`: the model of each group; a model's slices share it), drawn
    towards a confusion shared by all (`SHARED_WEIGHT` pseudo-failures per true category): an
    analyst may read one model's outputs worse than another's (a surface symptom that paints one
    model), and a model with few reviews borrows the others'. An unreviewed failure's true
    category is drawn from θ_g[y]·M_m[y, a]; θ_g from the group's known and drawn categories;
    M_m from its model's reviewed pairs and drawn ones; the shared M from all of them. The review
    sample depends on the analyst's label only, which is observed, so it is ignorable. Perks
    priors (1/K per cell) on θ_g and on each row of the shared M.

    Returns the draws of θ_g (the group's mix: what the interval is read from, carrying the
    failures' sampling error) and the mean over draws of each group's own failures' mix (known
    plus drawn categories: the share shown, which is the people's share itself when people
    labelled every failure)."""
    n_groups, k = known.shape
    n_models = int(reader.max()) + 1
    prior = 1.0 / k
    counts = open_.astype(np.int64)
    cells = np.argwhere(counts > 0)  # (group, analyst label) cells with failures to draw
    cell_group, cell_label = cells[:, 0], cells[:, 1]
    cell_counts = counts[cell_group, cell_label]

    reviewed = np.zeros((n_models, k, k))  # people's label × analyst's label, per model
    np.add.at(reviewed, reader, pairs)
    # where each cell's drawn categories add up (np.bincount: far faster than np.add.at in the loop)
    y = np.arange(k)
    to_group = (cell_group[:, None] * k + y).ravel()
    to_model = ((reader[cell_group][:, None] * k + y) * k + cell_label[:, None]).ravel()
    theta = _dirichlet(rng, known + open_ + prior)
    shared = _dirichlet(rng, reviewed.sum(axis=0) + prior)
    confusion = _dirichlet(rng, reviewed + SHARED_WEIGHT * shared + prior)  # (models, y, a)
    out = np.empty((draws, n_groups, k))
    own = np.zeros((n_groups, k))
    for t in range(BURN_IN + draws * THIN):
        # P(true y | analyst said a, group g) ∝ θ[g, y] · M_m(g)[y, a], for the cells with failures
        # (a floor: draws of tiny Dirichlet parameters can underflow to 0 everywhere)
        weights = theta[cell_group] * confusion[reader[cell_group], :, cell_label] + 1e-300
        drawn = rng.multinomial(cell_counts, weights / weights.sum(axis=1, keepdims=True))  # (cells, y)
        flat = drawn.ravel()
        imputed = np.bincount(to_group, flat, n_groups * k).reshape(n_groups, k)
        mine = reviewed + np.bincount(to_model, flat, n_models * k * k).reshape(n_models, k, k)
        theta = _dirichlet(rng, known + imputed + prior)
        shared = _dirichlet(rng, mine.sum(axis=0) + prior)
        confusion = _dirichlet(rng, mine + SHARED_WEIGHT * shared)
        if t >= BURN_IN and (t - BURN_IN) % THIN == 0:
            out[(t - BURN_IN) // THIN] = theta
            own += known + imputed
    total = known.sum(axis=1, keepdims=True) + counts.sum(axis=1, keepdims=True)
    return out, np.divide(own / draws, total, out=np.zeros_like(own), where=total > 0)


def _dirichlet(rng, alpha: np.ndarray) -> np.ndarray:
    """One Dirichlet draw per row of `alpha` (last axis)."""
    g = rng.standard_gamma(alpha) + 1e-300
    return g / g.sum(axis=-1, keepdims=True)


def _corrected_rows(cats, theta, own, known, open_, analyst, measured) -> list[dict]:
    """Per group and category: the posterior mean share and its 95% interval, the failures of
    labels no one reviewed counted at face value in the share and as anything in the interval."""
    k = len(cats)
    rows = []
    for gi in range(known.shape[0]):
        unmeasured = open_[gi] * ~measured
        n_meas = known[gi].sum() + (open_[gi] * measured).sum()
        n = n_meas + unmeasured.sum()
        share = (n_meas * own[gi] + unmeasured) / n if n else np.full(k, np.nan)
        low = np.percentile(n_meas * theta[:, gi, :] / n, 2.5, axis=0) if n else np.full(k, np.nan)
        high = (np.percentile((n_meas * theta[:, gi, :] + unmeasured.sum()) / n, 97.5, axis=0)
                if n else np.full(k, np.nan))
        for i, c in enumerate(cats):
            rows.append({"category": c, "count": int(analyst[gi, i]), "people": int(known[gi, i]), "n": int(n),
                         "reviewed": int(known[gi].sum()), "unmeasured": int(unmeasured.sum()),
                         "share": float(share[i]), "share_low": float(low[i]),
                         "share_high": float(min(1.0, high[i])), "corrected": True})
    return rows


def _sampling_only(cats: list[str], analyst: np.ndarray, n: int) -> list[dict]:
    lows, highs = wilson_many(analyst, n)
    return [{"category": c, "count": int(analyst[i]), "people": 0, "n": n, "reviewed": 0,
             "unmeasured": 0, "share": analyst[i] / n if n else math.nan, "share_low": float(lows[i]),
             "share_high": float(highs[i]), "corrected": False} for i, c in enumerate(cats)]


def difference(shares: Shares, a: tuple, b: tuple, category: str) -> tuple[float, float, float] | None:
    """b's share of `category` minus a's, with the 95% interval of the posterior draws (None when
    the shares are not corrected: then the difference's test is the uncorrected one)."""
    da, db = shares.draws.get(a), shares.draws.get(b)
    if da is None or db is None or category not in shares.categories:
        return None
    i = shares.categories.index(category)
    d = db[:, i] - da[:, i]
    low, high = np.percentile(d, [2.5, 97.5])
    return float(d.mean()), float(low), float(high)
