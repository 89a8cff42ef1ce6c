"""Failure signatures: each model's classified failures per category (count, share, per 100 questions)."""

from __future__ import annotations

import polars as pl

from store import queries as q
from taxonomy.catalog import NOT_ERROR_TYPES


def signature(con, analyst: str, models=None, datasets=None, domains=None,
              by: str | None = None, split: str = q.MAIN_SPLIT,
              thresholds: dict[str, float] | None = None) -> pl.DataFrame:
    """Each model's classified failures per category: count, share and count per 100 questions
    it answered (within the `by` slice when given).

    Error types and the labels that are not (`NOT_ERROR_TYPES`: Other, Hard to Analyze, No Model
    Error, Environment Failure; `error_type` false) are kept apart: `failures` counts the model's failures with an
    error type, and an error type's `share` is of those, so a model whose outputs are mostly too
    bare to analyse is not drawn as making few errors of each type; a label that is not an error
    type has its share of all `labelled` failures.

    Columns: model, [by,] category, error_type, count, failures, labelled, share, questions, per_100.
    """
    keys = ["model"] + ([by] if by else [])
    counts = q.signature_counts(con, analyst, models, datasets, domains, by=by, split=split,
                                thresholds=thresholds)
    if by:
        # a missing slice value is still a slice; name it so charts and tables keep it
        counts = counts.with_columns(pl.col(by).fill_null("(none)"))
    is_error = ~pl.col("category").is_in(list(NOT_ERROR_TYPES))
    return (
        counts.with_columns(error_type=is_error)
        .with_columns(labelled=pl.col("count").sum().over(keys),
                      failures=pl.col("count").filter(pl.col("error_type")).sum().over(keys))
        .with_columns(
            share=pl.when(pl.col("error_type")).then(pl.col("count") / pl.col("failures"))
            .otherwise(pl.col("count") / pl.col("labelled")),
            per_100=100 * pl.col("count") / pl.col("questions"),
        )
        .select(*keys, "category", "error_type", "count", "failures", "labelled", "share",
                "questions", "per_100")
        .sort(*keys, "category")
    )


