"""What a paired comparison could have detected, and how many questions a planned one needs.

- `mcnemar_power(n, discordance, diff)`: the power of the two-sided exact McNemar test at ALPHA on
  n paired questions, when a share `discordance` of the pairs disagree and B's failure rate
  exceeds A's by `diff` (so B fails alone on (discordance + diff)/2 of the pairs, A on
  (discordance − diff)/2). Exact: the number of discordant pairs D ~ Binomial(n, discordance),
  and given D the test rejects when B's count X ~ Binomial(D, (discordance + diff)/(2·discordance))
  falls in the exact test's rejection region (Schork & Williams 1980; the normal formula of
  Connor 1987 misleads below a few hundred pairs).
- `mcnemar_mde(n, discordance)`: the smallest such difference detected with POWER (80%): "no
  difference of X or more detected" reads this X, in shares of the questions.
- `paired_t_mde(n, sd)`: the smallest mean score difference the two-sided paired t-test at ALPHA
  detects with 80% power, given the differences' standard deviation (noncentral t). Faultline
  reports the Wilcoxon signed-rank test on scores; its asymptotic efficiency relative to t is
  ≥ 0.864 for any distribution and 0.955 for normal ones (Hodges & Lehmann 1956), so this is the
  t-test's figure, a close and slightly optimistic stand-in for the Wilcoxon's.
- `pairs_needed(baseline, diff, discordance)`: the fewest paired questions whose exact McNemar
  test has 80% power for `diff` (the first n at which it reaches 80%; exact power is saw-toothed
  in n, so a few more pairs can dip below). Without `discordance`, the models' failures are
  taken as independent — correlated models disagree less and need fewer pairs.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy import special as _sp
from scipy import stats as _st

from .significance import ALPHA

POWER = 0.8


# rejection counts are computed and cached in blocks of this many D, wherever an n's D fall
_BLOCK = 1024


@functools.lru_cache(maxsize=1024)
def _rejection_block(start: int) -> np.ndarray:
    """The rejection counts of D = start .. start + _BLOCK − 1 (see `_rejection_counts`)."""
    d = np.arange(start, start + _BLOCK)
    c = _st.binom.ppf(ALPHA / 2, d, 0.5)
    c = np.where(2 * _st.binom.cdf(c, d, 0.5) <= ALPHA, c, c - 1).astype(np.int64)
    c.setflags(write=False)
    return c


def _rejection_counts(d: np.ndarray) -> np.ndarray:
    """Per number of discordant pairs D in `d` (ascending): the largest k with two-sided exact
    p ≤ ALPHA when one side has k of D (the test rejects at k ≤ c or k ≥ D − c); −1 where no split
    of D can reject. A D's count does not depend on n, so they are cached by blocks of D, and only
    the blocks holding the D that carry probability are computed: on 90,000 pairs scipy's
    binomial ppf over every D from 0 took 0.4 s, over the few thousand kept 0.02 s, and the MDEs
    of a leaderboard's or a comparison's pairs of similar size share their blocks."""
    if not len(d):
        return np.zeros(0, dtype=np.int64)
    first, last = int(d[0]) // _BLOCK, int(d[-1]) // _BLOCK
    blocks = np.concatenate([_rejection_block(k * _BLOCK) for k in range(first, last + 1)])
    return blocks[d - first * _BLOCK]


def _discordant_counts(n: int, discordance: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The numbers of discordant pairs D that carry any probability (pmf above 1e-16: the rest add
    less than n·1e-16 to a power), their rejection counts and their probabilities."""
    d = np.arange(n + 1)
    pmf = _st.binom.pmf(d, n, discordance)
    keep = pmf > 1e-16
    return d[keep], _rejection_counts(d[keep]), pmf[keep]


def _power(parts: tuple[np.ndarray, np.ndarray, np.ndarray], discordance: float, diff: float) -> float:
    d, c, pmf = parts
    diff = min(abs(diff), discordance)
    p_b = (discordance + diff) / (2 * discordance)
    # scipy.special's binomial cdf and survival function (what binom.cdf and binom.sf compute) without
    # scipy.stats' argument checks, which cost more than the sums on a ladder of MDEs
    ok = c >= 0
    reject = np.zeros(len(d))
    reject[ok] = _sp.bdtr(c[ok], d[ok], p_b) + _sp.bdtrc(d[ok] - c[ok] - 1, d[ok], p_b)
    # two tails of one split counted once when they overlap (never, for ALPHA < 0.5)
    return float(np.sum(pmf * np.minimum(reject, 1.0)))


def mcnemar_power(n: int, discordance: float, diff: float) -> float:
    if n <= 0 or discordance <= 0:
        return 0.0
    return _power(_discordant_counts(n, discordance), discordance, diff)


def mcnemar_mde(n: int, discordance: float, tolerance: float = 1e-4) -> float | None:
    """The smallest difference in failure rates (B − A, as a share of the questions) that the exact
    McNemar test detects with POWER on n pairs of this discordance; None when none can be (no
    discordant pairs, or too few for any difference)."""
    if n <= 0 or discordance <= 0:
        return None
    parts = _discordant_counts(n, discordance)
    if _power(parts, discordance, discordance) < POWER:
        return None
    low, high = 0.0, discordance
    while high - low > tolerance:
        mid = (low + high) / 2
        low, high = (mid, high) if _power(parts, discordance, mid) < POWER else (low, mid)
    return high


def paired_t_mde(n: int, sd: float) -> float | None:
    """The smallest mean difference the two-sided paired t-test at ALPHA detects with POWER; None
    with fewer than 2 pairs or no spread."""
    if n < 2 or not sd or not math.isfinite(sd):
        return None
    df = n - 1
    crit = _st.t.ppf(1 - ALPHA / 2, df)

    def power(effect: float) -> float:
        nc = effect * math.sqrt(n)
        value = float(_st.nct.sf(crit, df, nc) + _st.nct.cdf(-crit, df, nc))
        return 1.0 if math.isnan(value) else value  # scipy's nct gives NaN far out in the tail

    from scipy.optimize import brentq

    effect = brentq(lambda e: power(e) - POWER, 1e-9, 50.0)
    return effect * sd


def discordance_if_independent(baseline: float, diff: float) -> float:
    """The share of questions two models disagree on when their failures are independent: A fails
    a share `baseline` of the questions, B `baseline + diff`."""
    a, b = baseline, baseline + diff
    return a * (1 - b) + b * (1 - a)


def pairs_needed(baseline: float, diff: float, discordance: float | None = None, limit: int = 200_000) -> int | None:
    """The fewest paired questions for 80% power (None: more than `limit`)."""
    psi = discordance if discordance is not None else discordance_if_independent(baseline, diff)
    if psi <= 0 or abs(diff) > psi:
        return None
    z = _st.norm.ppf(1 - ALPHA / 2), _st.norm.ppf(POWER)
    guess = ((z[0] * math.sqrt(psi) + z[1] * math.sqrt(psi - diff * diff)) / diff) ** 2  # Connor 1987
    # scan up from a quarter of the normal formula's answer (the exact test needs more pairs, never
    # a quarter as many) to the first n whose power reaches 80%
    for n in range(max(1, int(guess / 4)), limit + 1):
        if mcnemar_power(n, psi, diff) >= POWER:
            return n
    return None
