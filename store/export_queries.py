"""Reading the store's runs and outcomes for export (`python -m ingest export`)."""

from __future__ import annotations

from typing import Sequence

import duckdb

_RUN_COLUMNS = (
    "run_id", "source_format", "run_name", "model", "dataset", "domain", "main_metric", "metric_max",
    "lower_is_better", "pass_threshold", "main_split", "variant", "settings", "started_at", "metric_min",
    "scale_source", "headline_metric", "verdict_rule",
)
_ROW_COLUMNS = (
    "instance_id", "raw_instance_id", "split", "sub_split", "perturbation", "train_trial_index",
    "input_text", "input_messages", "refs", "choices", "output_text", "mapped_output", "thinking_text",
    "score", "is_correct", "infra_error", "error_message",
)


def _dicts(cursor: duckdb.DuckDBPyConnection, columns: Sequence[str]) -> list[dict]:
    return [dict(zip(columns, row)) for row in cursor.fetchall()]


def stored_names(con: duckdb.DuckDBPyConnection) -> tuple[list[str], list[str]]:
    """(models, datasets) the store has runs of."""
    models = [r[0] for r in con.execute("SELECT DISTINCT model FROM runs ORDER BY 1").fetchall()]
    datasets = [r[0] for r in con.execute("SELECT DISTINCT dataset FROM runs ORDER BY 1").fetchall()]
    return models, datasets


def runs_to_export(
    con: duckdb.DuckDBPyConnection, models: Sequence[str] = (), datasets: Sequence[str] = ()
) -> list[dict]:
    where, params = [], []
    for column, values in (("model", models), ("dataset", datasets)):
        if values:
            where.append(f"{column} IN ({', '.join('?' * len(values))})")
            params.extend(values)
    sql = f"SELECT {', '.join(_RUN_COLUMNS)} FROM runs"
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += " ORDER BY model, dataset, domain NULLS FIRST, run_id"
    return _dicts(con.execute(sql, params), _RUN_COLUMNS)


def outcomes_of_run(con: duckdb.DuckDBPyConnection, run_id: str) -> list[dict]:
    """Every prediction of a run with its instance, in a stable order."""
    sql = """
        SELECT i.instance_id, i.raw_instance_id, i.split, i.sub_split, i.perturbation,
               p.train_trial_index, i.input_text, i.input_messages, i.refs, i.choices,
               p.output_text, p.mapped_output, p.thinking_text, p.score, p.is_correct,
               p.infra_error, p.error_message
        FROM predictions p
        JOIN instances i ON i.run_id = p.run_id AND i.instance_id = p.instance_id
        WHERE p.run_id = ?
        ORDER BY i.instance_id, p.train_trial_index
    """
    return _dicts(con.execute(sql, [run_id]), _ROW_COLUMNS)
