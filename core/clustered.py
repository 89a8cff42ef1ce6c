"""Means and paired differences when the questions are not independent (DESIGN.md, Statistics).

Questions that share a passage, a patient note or a repository, and repeated trials of one task
(Inspect epochs, Terminal-Bench's trials), are clusters: an error shared by the cluster moves all
its members together, and an interval that treats them as independent is too narrow (Miller,
"Adding Error Bars to Evals", 2024, §2.3).

- `clustered_mean(values, clusters)`: the mean of n values and its cluster-robust standard error,
  the sandwich estimator over cluster sums with the CR1 small-sample factor G/(G−1):
  Var = G/(G−1) · Σ_g (Σ_{i∈g} (x_i − x̄))² / n², with a Student t interval on G − 1 degrees of
  freedom (Cameron & Miller, "A Practitioner's Guide to Cluster-Robust Inference", 2015, §2.4 and
  §4.3). It equals statsmodels' OLS of x on a constant with `cov_type="cluster"`, `use_t=True`
  (tests/core/test_clusters.py), and with every question its own cluster it is the ordinary t interval.
- `clustered_paired(differences, clusters)`: the same for the mean of paired differences (B − A
  per question): its two-sided t test on G − 1 degrees of freedom is the paired test — a
  cluster-adjusted McNemar when the differences are of pass/fail (Obuchowski 1998, Durkalski
  et al. 2003), the paired t when they are of scores.
- `clustered_mde(result)`: the smallest mean difference that test detects with 80% power at
  α = 0.05 (noncentral t on G − 1 degrees of freedom at the observed standard error).

Every result says how many clusters it rests on: with few clusters (under ~30) the sandwich is
itself noisy, and the t on G − 1 degrees of freedom is the usual guard (Cameron & Miller §4.3).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats as _st

from .significance import ALPHA


@dataclass(frozen=True)
class ClusteredMean:
    n: int  # values
    clusters: int  # G: the clusters they fall in
    mean: float
    se: float  # cluster-robust (CR1) standard error; nan with fewer than 2 clusters
    low: float  # 95% t interval on G − 1 degrees of freedom
    high: float
    t: float
    p: float  # two-sided test of mean = 0 (the paired test, for differences)


def has_clusters(clusters, trials=None) -> bool:
    """Whether the questions are clustered: some cluster holds two or more of them, or some
    question was tried more than once (`trials`: per question)."""
    labels = np.asarray(clusters)
    if len(labels) and len(np.unique(labels)) < len(labels):
        return True
    return trials is not None and bool(np.any(np.asarray(trials) > 1))


def clustered_mean(values, clusters) -> ClusteredMean:
    """The mean of `values` with its CR1 cluster-robust interval (`clusters`: a label per value)."""
    x = np.asarray(values, dtype=float)
    n = len(x)
    if n == 0:
        return ClusteredMean(0, 0, math.nan, math.nan, math.nan, math.nan, math.nan, math.nan)
    _, group = np.unique(np.asarray(clusters), return_inverse=True)
    g = int(group.max()) + 1
    mean = float(x.mean())
    if g < 2:
        return ClusteredMean(n, g, mean, math.nan, math.nan, math.nan, math.nan, math.nan)
    sums = np.bincount(group, weights=x - mean, minlength=g)
    var = g / (g - 1) * float(np.sum(sums * sums)) / (n * n)
    se = math.sqrt(var)
    half = float(_st.t.ppf(1 - ALPHA / 2, g - 1)) * se
    if se > 0:
        tstat = mean / se
        p = float(2 * _st.t.sf(abs(tstat), g - 1))
    else:  # every cluster's values sit on the mean: nothing varies, nothing to test
        tstat, p = math.nan, (1.0 if mean == 0 else math.nan)
    return ClusteredMean(n, g, mean, se, mean - half, mean + half, tstat, p)


def clustered_paired(differences, clusters) -> ClusteredMean:
    """The mean paired difference (B − A per question), its cluster-robust interval and the
    two-sided paired test on G − 1 degrees of freedom."""
    return clustered_mean(differences, clusters)


def clustered_mde(result: ClusteredMean, power: float = 0.8) -> float | None:
    """The smallest |mean difference| the clustered paired test detects with `power` at ALPHA,
    given its standard error and clusters; None with fewer than 2 clusters or no spread."""
    g, se = result.clusters, result.se
    if g < 2 or not se > 0:
        return None
    df = g - 1
    crit = _st.t.ppf(1 - ALPHA / 2, df)

    def reach(effect: float) -> float:
        value = float(_st.nct.sf(crit, df, effect) + _st.nct.cdf(-crit, df, effect))
        return 1.0 if math.isnan(value) else value

    from scipy.optimize import brentq

    return brentq(lambda e: reach(e) - power, 1e-9, 200.0) * se
