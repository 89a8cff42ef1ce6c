"""Per-model rates: accuracy with Wilson intervals and failure signatures (category shares)."""

from __future__ import annotations

import polars as pl

from store import queries as q
from taxonomy.catalog import NOT_ERROR_TYPES

from .tests import wilson


def model_accuracy(con, models=None, datasets=None, domains=None, by: str | None = None,
                   split: str = q.MAIN_SPLIT) -> pl.DataFrame:
    """model, [dataset, [split,]] n, correct, accuracy, ci_low, ci_high (Wilson 95%).

    `accuracy` is pooled over the questions. By dataset, also `helm_headline` and `n_domains`:
    HELM's own headline for a dataset it splits into runs per subject (MMLU: one run per
    subject) is the mean of the runs' accuracies, not the pooled rate (with one subject the two
    are equal); NULL for logs of other harnesses, whose headline is the pooled rate.
    """
    acc = q.accuracy(con, models, datasets, domains, by=by, split=split)
    cis = [wilson(k, n) for k, n in zip(acc["correct"], acc["n"])]
    acc = acc.with_columns(
        accuracy=pl.col("correct") / pl.col("n"),
        ci_low=pl.Series([c[0] for c in cis], dtype=pl.Float64),
        ci_high=pl.Series([c[1] for c in cis], dtype=pl.Float64),
    )
    if by != "dataset":
        return acc
    per_domain = q.domain_accuracy(con, models, datasets, domains, split=split)
    headline = (per_domain.group_by("model", "dataset")
                .agg(mean=(pl.col("correct") / pl.col("n")).mean(), n_domains=pl.len(),
                     helm=pl.col("helm").all())
                .select("model", "dataset", "n_domains",
                        helm_headline=pl.when(pl.col("helm")).then(pl.col("mean"))))
    return acc.join(headline, on=["model", "dataset"], how="left")


def unequal_questions(acc: pl.DataFrame) -> list[str]:
    """Datasets whose models answered different numbers of questions, e.g. "mmlu: 981 vs 1,018
    questions": their accuracies are over different question sets."""
    out = []
    for (dataset,), group in acc.group_by("dataset", maintain_order=True):
        sizes = sorted(set(group["n"].to_list()))
        if len(sizes) > 1:
            shown = " vs ".join(f"{n:,}" for n in sizes) if len(sizes) <= 4 else f"{sizes[0]:,} to {sizes[-1]:,}"
            out.append(f"{dataset}: {shown} questions")
    return out


def signature(con, analyst: str, models=None, datasets=None, domains=None,
              by: str | None = None, split: str = q.MAIN_SPLIT) -> pl.DataFrame:
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
    counts = q.signature_counts(con, analyst, models, datasets, domains, by=by, split=split)
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


