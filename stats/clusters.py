"""Paired tests on clustered questions: which clusters a dataset's questions fall in, and the
cluster-robust paired test that replaces McNemar and the Wilcoxon there (core/clustered.py).

A question's cluster is the one its log or the user gave (`instances.cluster`: `--map
cluster=COLUMN`, HELM questions on one passage), else the question itself — its trials (Inspect
epochs, Terminal-Bench trials) are then one cluster. Each model's result on a question is the mean
over its trials (the pass rate, or the mean score), every question weighing the same; the paired
difference B − A per question is tested with the cluster-robust t on G − 1 degrees of freedom.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from core.clustered import ClusteredMean, clustered_mde, clustered_paired, has_clusters
from core.passages import PREFIX as PASSAGE


@dataclass(frozen=True)
class ClusteredTest:
    """The paired test on one dataset's clustered questions: B − A in the failure rate (pass/fail)
    or in the mean score, its interval, p and the smallest difference it could detect."""

    n: int  # paired questions
    trials: int  # the two models' trials on them (2n when each question was tried once by each)
    clusters: int
    kind: str  # what the clusters are, in words
    result: ClusteredMean
    mde: float | None

    @property
    def p(self) -> float:
        return self.result.p

    def to_json(self) -> dict:
        r = self.result
        return {"test": "cluster-robust paired t (CR1, G − 1 df)", "n": self.n, "trials": self.trials,
                "clusters": self.clusters, "clusters_are": self.kind, "difference": _num(r.mean),
                "se": _num(r.se), "low": _num(r.low), "high": _num(r.high), "p": _num(r.p), "mde": self.mde}


def _num(v: float):
    return None if v != v else v


def cluster_labels(units: pl.DataFrame) -> list[str]:
    """Each question's cluster: the given one, else the question itself."""
    return [c if c is not None else "question:" + q for c, q in zip(units["cluster"], units["instance_id"])]


def cluster_kind(units: pl.DataFrame) -> str:
    """What the clusters of these questions are, as the pages and the CLI say it."""
    given = units["cluster"].drop_nulls()
    parts = []
    if given.len():
        passages = int(given.str.starts_with(PASSAGE).sum())
        if passages:
            parts.append("questions sharing a passage")
        if passages < given.len():
            parts.append("clusters given in the log")
    if int((units["a_trials"] > 1).sum() + (units["b_trials"] > 1).sum()):
        parts.append("repeated trials of a question")
    return "; ".join(parts) or "none"


def is_clustered(units: pl.DataFrame) -> bool:
    if units.is_empty():
        return False
    return has_clusters(cluster_labels(units), np.maximum(units["a_trials"].to_numpy(), units["b_trials"].to_numpy()))


def paired_test(units: pl.DataFrame, on: str) -> ClusteredTest | None:
    """The cluster-robust paired test of B − A for one dataset's questions (`units`:
    `store.queries.paired_units` rows of that dataset): `on="failures"` (the failure rate, B − A) or
    `"score"` (the mean score, B − A, questions both models scored); None without clusters."""
    if on == "score":
        units = units.filter(pl.col("a_score").is_not_null() & pl.col("b_score").is_not_null())
        diff = (units["b_score"] - units["a_score"]).to_numpy()
    else:
        diff = (units["a_pass"] - units["b_pass"]).to_numpy()  # failure rate B − A
    if not is_clustered(units):
        return None
    result = clustered_paired(diff, cluster_labels(units))
    return ClusteredTest(n=units.height, trials=int(units["a_trials"].sum() + units["b_trials"].sum()),
                         clusters=result.clusters, kind=cluster_kind(units), result=result,
                         mde=clustered_mde(result))
