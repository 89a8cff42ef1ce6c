"""Failure signatures: each model's failures per category, with the share's error (stats/shares.py)."""

from __future__ import annotations

from dataclasses import replace

import polars as pl

from store import queries as q
from store.calibration import failure_label_counts, failures_with_people
from taxonomy.catalog import NOT_ERROR_TYPES

from .shares import FEW, METHOD_CORRECTED, METHOD_SAMPLING, Shares, estimate

SIGNATURE_COLUMNS = ("category", "error_type", "count", "people", "failures", "labelled", "reviewed", "unmeasured",
                     "share", "share_low", "share_high", "corrected", "few", "questions", "per_100")


def shares(con, analyst: str, models=None, datasets=None, domains=None, by: str | None = None,
           split: str = q.MAIN_SPLIT, thresholds: dict[str, float] | None = None) -> Shares:
    """The corrected shares of every failure under the filters, per model (and `by` slice). The
    analyst's confusion is estimated from every model's failures (people's labels of any model's
    failures measure the analyst); only `models`' rows are kept."""
    if by not in (None, "dataset", "domain"):
        raise ValueError(f"cannot group by {by!r}")
    failures = failure_label_counts(con, analyst, datasets, domains, by=by, split=split, thresholds=thresholds)
    if by:
        # a missing slice value is still a slice; name it so charts and tables keep it
        failures = failures.with_columns(pl.col(by).fill_null("(none)"))
    est = estimate(failures, ["model"] + ([by] if by else []))
    if models:
        keep = set(models)
        est = replace(est, frame=est.frame.filter(pl.col("model").is_in(list(keep))),
                      draws={k: v for k, v in est.draws.items() if k[0] in keep})
    return est


def shares_method(con, analyst: str, datasets=None, domains=None, split: str = q.MAIN_SPLIT) -> str:
    """How `shares` would estimate under these filters (`Shares.method`) without running its
    sampler: corrected where some failure carries both the analyst's label and people's."""
    failures = failures_with_people(con, analyst, None, datasets, domains, split=split)
    reviewed = failures.filter(pl.col("category").is_not_null() & pl.col("people").is_not_null()).height
    return METHOD_CORRECTED if reviewed else METHOD_SAMPLING


def share_rows(est: Shares) -> pl.DataFrame:
    """The estimate's rows under the names `stats signatures --json` uses — `failures` the
    denominator, `reviews_used` the people's labels the correction rests on (0: sampling only) —
    one per category the analyst or people gave the model, or whose corrected share is 1% or more."""
    return (est.frame.filter((pl.col("count") > 0) | (pl.col("people") > 0) | (pl.col("share") >= 0.01))
            .rename({"n": "failures"}).with_columns(reviews_used=pl.lit(est.reviews, pl.Int64)))


def signature(con, analyst: str, models=None, datasets=None, domains=None,
              by: str | None = None, split: str = q.MAIN_SPLIT,
              thresholds: dict[str, float] | None = None) -> pl.DataFrame:
    """Each model's failures per category (within the `by` slice when given): the analyst's
    `count`, people's labels among them (`people`), and the `share` of the model's failures whose
    true category this is — every failure under the rule in the denominator (`failures`), No Model
    Error and Hard to Analyze included — with its 95% interval (`share_low`, `share_high`),
    corrected for the analyst's measured misclassification where people reviewed its labels
    (`corrected`), sampling error only where not. `labelled`: the model's failures with the
    analyst's label; `few`: fewer than FEW labelled failures behind the whole row, so its shares
    are shown as counts. `per_100`: the analyst's count per 100 questions answered.

    Error types and the labels that are not (`NOT_ERROR_TYPES`; `error_type` false) share one
    denominator. A category appears for a model when the analyst or people gave it there, or when
    its corrected share is 1% or more."""
    keys = ["model"] + ([by] if by else [])
    est = share_rows(shares(con, analyst, models, datasets, domains, by, split, thresholds))
    answered = q.questions_answered(con, models, datasets, domains, by=by, split=split, thresholds=thresholds)
    if by:
        answered = answered.with_columns(pl.col(by).fill_null("(none)"))
    return (
        est.with_columns(error_type=~pl.col("category").is_in(list(NOT_ERROR_TYPES)),
                      labelled=pl.col("count").sum().over(keys))
        .join(answered, on=keys, how="left")
        .with_columns(few=pl.col("labelled") < FEW,
                      per_100=100 * pl.col("count") / pl.col("questions"))
        .select(*keys, *SIGNATURE_COLUMNS)
        .sort(*keys, "category")
    )


def most_typed_model(sig: pl.DataFrame) -> str | None:
    """The model of a signature with the most failures filed under an error type (the first by name
    among equals); None when no failure has one."""
    typed = sig.filter(pl.col("error_type")).group_by("model").agg(pl.col("count").sum().alias("n"))
    if typed.is_empty():
        return None
    return typed.sort(["n", "model"], descending=[True, False])["model"][0]
