"""What a paired comparison could have detected (issue 36): exact power against simulation, the
planning command, and Benjamini–Hochberg across a comparison's datasets equal to scipy's."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from conftest import run_module
from core.power import mcnemar_mde, mcnemar_power, pairs_needed, paired_t_mde
from core.significance import mcnemar_exact
from store import read_connection
from stats.compare import compare


@pytest.mark.parametrize("n,discordance", [(40, 0.3), (94, 0.2), (300, 0.1)])
def test_the_mcnemar_mde_has_the_power_it_claims_in_simulation(n, discordance):
    mde = mcnemar_mde(n, discordance)
    rng = np.random.default_rng(n)
    draws = rng.multinomial(n, [(discordance - mde) / 2, (discordance + mde) / 2, 1 - discordance], size=4000)
    power = np.mean([mcnemar_exact(int(a), int(b)) <= 0.05 for a, b, _ in draws])
    assert power == pytest.approx(0.8, abs=0.02)
    assert mcnemar_power(n, discordance, mde) == pytest.approx(0.8, abs=0.002)


def test_the_paired_t_mde_has_the_power_it_claims_in_simulation():
    mde = paired_t_mde(40, 0.8)
    rng = np.random.default_rng(4)
    power = np.mean([stats.ttest_1samp(rng.normal(mde, 0.8, 40), 0).pvalue <= 0.05 for _ in range(4000)])
    assert power == pytest.approx(0.8, abs=0.02)


def test_no_difference_can_be_detected_without_disagreement():
    assert mcnemar_mde(100, 0.0) is None
    assert mcnemar_mde(8, 0.1) is None  # under one discordant pair expected: nothing reaches 80%
    assert paired_t_mde(1, 0.5) is None


def test_pairs_needed_is_the_first_n_that_reaches_80_percent():
    n = pairs_needed(0.3, 0.05, 0.15)
    assert n == 498
    assert mcnemar_power(n, 0.15, 0.05) >= 0.8 > mcnemar_power(n - 1, 0.15, 0.05)


def test_the_power_command(tmp_path):
    out = run_module("stats", "power", "--baseline", "0.3", "--diff", "0.05", "--discordance", "0.15", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert (data["pairs"], data["discordance_from"], data["test"]) == (498, "given", "exact McNemar (two-sided)")
    out = run_module("stats", "power", "--baseline", "0.3", "--diff", "0.05")
    assert out.stdout.startswith("1,417 paired questions detect a difference of 5.0% in failure rate")
    out = run_module("stats", "power", "--baseline", "0.9", "--diff", "0.2")
    assert out.returncode == 2 and out.stderr == "error: --baseline 0.9 plus --diff 0.2 is not a failure rate below 1\n"


def test_a_comparison_carries_its_mde_and_the_datasets_q(demo_db):
    with read_connection(demo_db) as con:
        c = compare(con, "demo/atlas-70b", "demo/cirrus-8b")
    ps = [d.p for d in c.by_dataset]
    assert [d.q for d in c.by_dataset] == pytest.approx(list(stats.false_discovery_control(ps)))
    discordant = c.a_only_fail + c.b_only_fail
    assert c.mde == mcnemar_mde(c.n_pairs, discordant / c.n_pairs)
    for d in c.by_dataset:
        assert d.mde == mcnemar_mde(d.n_pairs, (d.a_only_fail + d.b_only_fail) / d.n_pairs)
    data = c.to_json()
    assert set(data["mcnemar"]) == {"a_only_fail", "b_only_fail", "p", "mde", "test", "clusters", "clustered"}
    assert set(data["by_dataset"][0]["mcnemar"]) == {"a_only_fail", "b_only_fail", "p", "q", "mde", "test", "clusters", "clustered"}
