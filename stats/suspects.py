"""Suspect benchmark items (store.agreement.suspect_items) summed up per dataset: what the taxonomy
page's panel and the agents' `suspects` answer show above the list."""

from __future__ import annotations

import polars as pl


def by_dataset(items: pl.DataFrame) -> pl.DataFrame:
    """dataset, questions (suspect questions), failures (their failures), by dataset name."""
    return (items.group_by("dataset").agg(questions=pl.len(), failures=pl.col("failures").sum())
            .sort("dataset"))
