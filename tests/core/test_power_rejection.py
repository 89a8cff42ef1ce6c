"""The exact McNemar test's rejection counts are computed by blocks of the numbers of discordant
pairs, only where those numbers carry probability, and cached across n (core/power.py): they are
the counts computed over every number from 0, whichever n asked first."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as st

from core.power import _discordant_counts
from core.significance import ALPHA


def _every_count(n: int) -> np.ndarray:
    """The rejection count of every D = 0..n, as core.power computed it before (its index is D)."""
    d = np.arange(n + 1)
    c = st.binom.ppf(ALPHA / 2, d, 0.5)
    return np.where(2 * st.binom.cdf(c, d, 0.5) <= ALPHA, c, c - 1).astype(np.int64)


# 18,000 twice: the second reads blocks the first computed; 90,000 spans several blocks
@pytest.mark.parametrize("n, discordance", [(8, 0.1), (40, 0.5), (1_000, 0.02), (18_000, 0.4), (18_000, 0.38),
                                            (90_000, 0.41)])
def test_the_kept_rejection_counts_are_those_of_every_count(n, discordance):
    d, c, pmf = _discordant_counts(n, discordance)
    every = _every_count(n)
    assert np.array_equal(c, every[d])
    assert len(d) < n + 1 or n < 100  # on many pairs, only the counts with probability are computed
    assert c[d < 6].max(initial=-1) == -1 and (c[d >= 6] >= 0).all()  # 5 or fewer pairs never reject
