"""Which two models /compare opens on: the pair that shares the most questions under the filters
(the first two names alphabetically may share none), two models rather than two settings of one
(phi-3.5 · 0-shot against phi-3.5 · 5-shot) where such a pair shares at least half as many."""

from __future__ import annotations

import polars as pl

from store.runs import MODEL_KEY_SEPARATOR


def _base(model: str) -> str:
    """The model's name without its variant ("phi-3.5" of "phi-3.5 · 5-shot")."""
    return model.split(MODEL_KEY_SEPARATOR, 1)[0]


def _preferred(rows: list[tuple[str, str, int]]) -> tuple[str, str] | None:
    """The first (most shared) pair of two different models among those sharing at least half the
    top count, else the top pair."""
    if not rows:
        return None
    top = rows[0][2]
    for x, y, n in rows:
        if n * 2 < top:
            break
        if _base(x) != _base(y):
            return x, y
    return rows[0][0], rows[0][1]


def best_partner(shared: pl.DataFrame, a: str, models: list[str]) -> str | None:
    """The model sharing the most questions with `a` (ties: by name; another model before another
    setting of `a`, see `_preferred`), else the first other one."""
    rows = [(x, y, n) for x, y, n in shared.iter_rows()  # most shared first
            if a in (x, y) and (y if x == a else x) in models]
    pair = _preferred(rows)
    if pair:
        return pair[1] if pair[0] == a else pair[0]
    return next((m for m in models if m != a), None)


def default_pair(shared: pl.DataFrame, models: list[str], a: str | None = None) -> tuple[str, str]:
    """(A, B): `a` when given (e.g. from the link) with its best partner, else the pair sharing
    the most questions, else the first two models."""
    if a in models:
        return a, best_partner(shared, a, models)
    pair = _preferred([(x, y, n) for x, y, n in shared.iter_rows() if x in models and y in models])
    return pair or (models[0], models[1])
