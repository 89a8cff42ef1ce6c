"""The statistical tests Faultline uses, as thin, named wrappers over scipy.

Every function takes counts and returns plain floats so callers (CLI, pages, report) show the
same numbers. `ALPHA` is the one significance level used for verdicts and "too small" flags.
"""

from __future__ import annotations

import math

from scipy import stats as _st

ALPHA = 0.05


def mcnemar_exact(a_only: int, b_only: int) -> float:
    """Two-sided exact McNemar: binomial test on the discordant pairs; 1.0 when there are none."""
    n = a_only + b_only
    if n == 0:
        return 1.0
    return float(_st.binomtest(a_only, n, 0.5).pvalue)


def mcnemar_can_decide(n_discordant: int) -> bool:
    """Whether any split of this many discordant pairs could reach ALPHA.

    The most extreme split of n pairs has two-sided p = 2 * 0.5**n, so with n <= 5 no result can
    be significant and the honest answer is "too few to tell".
    """
    return n_discordant > 0 and 2 * 0.5**n_discordant <= ALPHA


def fisher(a_count: int, a_total: int, b_count: int, b_total: int) -> float:
    """Two-sided Fisher exact test of one category's share of A's vs B's failures."""
    table = [[a_count, a_total - a_count], [b_count, b_total - b_count]]
    return float(_st.fisher_exact(table).pvalue)


def fisher_can_decide(a_count: int, a_total: int, b_count: int, b_total: int) -> bool:
    """Whether the most extreme table with these margins could reach ALPHA.

    The hypergeometric is unimodal, so the smallest attainable p is at one end of the support.
    """
    col = a_count + b_count
    lo, hi = max(0, col - b_total), min(a_total, col)
    return min(
        fisher(lo, a_total, col - lo, b_total),
        fisher(hi, a_total, col - hi, b_total),
    ) <= ALPHA


def bh(pvalues: list[float]) -> list[float]:
    """Benjamini–Hochberg adjusted p-values (q-values), in input order."""
    if not pvalues:
        return []
    return [float(q) for q in _st.false_discovery_control(pvalues)]


def errormap_check(weak_count: int, weak_total: int, strong_share: float) -> float:
    """The ErrorMap paper's check: P(X >= weak_count), X ~ Binomial(weak_total, strong_share).

    It treats the stronger model's share as known, so it overstates significance; shown for
    parity with the paper only.
    """
    if weak_total == 0:
        return 1.0
    return float(_st.binomtest(weak_count, weak_total, strong_share, alternative="greater").pvalue)


def wilson(k: int, n: int) -> tuple[float, float]:
    """Two-sided 95% Wilson interval for k successes in n trials; (nan, nan) when n == 0."""
    if n == 0:
        return (math.nan, math.nan)
    ci = _st.binomtest(k, n).proportion_ci(method="wilson")
    return (float(ci.low), float(ci.high))


def wilson_many(k, n: int):
    """`wilson` for many counts of one n at once (arrays of lows and highs): the same formula as
    scipy's `binomtest(k, n).proportion_ci(method="wilson")` (Newcombe 1998), in the same order
    of operations, so equal to it bit for bit — without building a test per count, which costs a
    page of thousands of cells seconds."""
    import numpy as np
    from scipy.special import ndtri

    k = np.asarray(k, dtype=float)
    if n == 0:
        return np.full(k.shape, math.nan), np.full(k.shape, math.nan)
    p = k / n
    z = ndtri(0.5 + 0.5 * 0.95)
    denom = 2 * (n + z**2)
    center = (2 * n * p + z**2) / denom
    delta = z / denom * np.sqrt(4 * n * p * (1 - p) + z**2)
    return np.where(k == 0, 0.0, center - delta), np.where(k == n, 1.0, center + delta)


def share_difference_ci(b_count: int, b_total: int, a_count: int, a_total: int) -> tuple[float, float, float]:
    """Δ = b_share − a_share with Newcombe's hybrid score interval (built from Wilson intervals).

    Returns (delta, low, high); nan when either total is zero.
    """
    if a_total == 0 or b_total == 0:
        return (math.nan, math.nan, math.nan)
    pb, pa = b_count / b_total, a_count / a_total
    lb, ub = wilson(b_count, b_total)
    la, ua = wilson(a_count, a_total)
    d = pb - pa
    return (d, d - math.hypot(pb - lb, ua - pa), d + math.hypot(ub - pb, pa - la))


# ---------------------------------------------------------------- means and paired scores

# The paired bootstrap of a mean difference: this many resamples from this seed, drawn as
# `numpy.random.default_rng(BOOTSTRAP_SEED).integers(0, n, size=(BOOTSTRAP_REPLICATES, n))`
# (in row blocks, which draws the same numbers), over the differences in the order
# `store.queries.paired_scores` returns them; the 95% interval is the 2.5th and 97.5th
# percentiles of the resampled means (numpy's default, linear interpolation).
BOOTSTRAP_SEED = 20260601
BOOTSTRAP_REPLICATES = 2000
_BLOCK = 4_000_000  # indices drawn at once: memory stays bounded at any number of pairs


def t_interval(n: int, mean: float, m2: float) -> tuple[float, float]:
    """Student-t 95% interval of a mean of n scores with sum of squared deviations m2; (nan,
    nan) with fewer than 2 scores or when every score is the same (nothing says how wide)."""
    if n < 2 or not m2 > 0:
        return (math.nan, math.nan)
    half = float(_st.t.ppf(0.975, n - 1)) * math.sqrt(m2 / (n - 1) / n)
    return (mean - half, mean + half)


def mean_of_means_interval(groups: list[tuple[int, float, float]]) -> tuple[float, float, float]:
    """The unweighted mean of K group means (HELM's headline over subjects) with a 95% t
    interval from its stratified standard error sqrt(sum s_k^2 / n_k) / K and the
    Welch–Satterthwaite degrees of freedom. groups: (n_k, mean_k, m2_k). The interval is (nan,
    nan) when a group has fewer than 2 scores or every group is constant."""
    k = len(groups)
    mean = sum(m for _, m, _ in groups) / k
    if any(n < 2 for n, _, _ in groups):
        return (mean, math.nan, math.nan)
    v = [m2 / (n - 1) / n for n, _, m2 in groups]
    total = sum(v)
    if not total > 0:
        return (mean, math.nan, math.nan)
    df = total ** 2 / sum(vk ** 2 / (n - 1) for vk, (n, _, _) in zip(v, groups))
    half = float(_st.t.ppf(0.975, df)) * math.sqrt(total) / k
    return (mean, mean - half, mean + half)


def wilcoxon_signed_rank(differences) -> tuple[float, int]:
    """Two-sided Wilcoxon signed-rank test of paired differences: (p, the differences it ranks).
    Zero differences are dropped (scipy's zero_method="wilcox"); scipy's method="auto" (exact
    for small samples without ties, else the normal approximation with tie correction). With no
    non-zero difference there is nothing to rank: p = 1."""
    import numpy as np

    d = np.asarray(differences, dtype=float)
    nonzero = int(np.count_nonzero(d))
    if nonzero == 0:
        return (1.0, 0)
    return (float(_st.wilcoxon(d, zero_method="wilcox", alternative="two-sided").pvalue), nonzero)


def paired_bootstrap(differences, seed: int = BOOTSTRAP_SEED,
                     replicates: int = BOOTSTRAP_REPLICATES) -> tuple[float, float, float]:
    """The mean of paired differences and its seeded bootstrap 95% percentile interval (see
    BOOTSTRAP_SEED); (nan, nan, nan) without pairs."""
    import numpy as np

    d = np.asarray(differences, dtype=float)
    n = len(d)
    if n == 0:
        return (math.nan, math.nan, math.nan)
    rng = np.random.default_rng(seed)
    means = np.empty(replicates)
    rows = max(1, _BLOCK // n)
    for start in range(0, replicates, rows):
        k = min(rows, replicates - start)
        means[start:start + k] = d[rng.integers(0, n, size=(k, n))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return (float(d.mean()), float(low), float(high))
