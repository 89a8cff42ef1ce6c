"""Which two models /compare opens on: the pair that shares the most questions under the filters
(the first two names alphabetically may share none)."""

from __future__ import annotations

import polars as pl


def best_partner(shared: pl.DataFrame, a: str, models: list[str]) -> str | None:
    """The model sharing the most questions with `a` (ties: by name), else the first other one."""
    for x, y, _ in shared.iter_rows():  # most shared first
        if a in (x, y):
            other = y if x == a else x
            if other in models:
                return other
    return next((m for m in models if m != a), None)


def default_pair(shared: pl.DataFrame, models: list[str], a: str | None = None) -> tuple[str, str]:
    """(A, B): `a` when given (e.g. from the link) with its best partner, else the pair sharing
    the most questions, else the first two models."""
    if a in models:
        return a, best_partner(shared, a, models)
    for x, y, _ in shared.iter_rows():
        if x in models and y in models:
            return x, y
    return models[0], models[1]
