"""The analysed failures with the evidence behind their labels, a page at a time: what an agent
reads when it asks for the failures of one error type (mcp_server/answers.py `failures`).

Rows are the latest outcomes' failures classified by one analyst (`latest_labels`, the same rows
every page counts), in a fixed order so that LIMIT/OFFSET pages never overlap. Values travel as
`?` parameters.
"""

from __future__ import annotations

import json

import duckdb

from .queries import MAIN_SPLIT, _latest_cte

_COLUMNS = ("model", "dataset", "domain", "instance_id", "category", "error_title", "error_summary",
            "no_model_error", "taxonomy_version", "score", "output_text", "mapped_output", "refs",
            "choices", "required_criteria")
_JSON = ("refs", "choices", "required_criteria")


def failure_page(con: duckdb.DuckDBPyConnection, analyst: str, models=None, datasets=None,
                 domains=None, category: str | None = None, split: str = MAIN_SPLIT,
                 limit: int = 20, offset: int = 0) -> list[dict]:
    """Failures classified by `analyst` (of `category` when given), ordered by category, model,
    dataset and question: the label, the analyst's summary and criteria (whose evidence quotes
    the output), the output and the references."""
    cte, params = _latest_cte(models, datasets, domains, split=split)
    where, extra = (" AND category = ?", [category]) if category else ("", [])
    # pick the page's rows before reading any text, then only their latest analyses
    rows = con.execute(
        f"""{cte},
        picked AS (
            SELECT * FROM labelled WHERE analyst = ? AND category IS NOT NULL {where}
            ORDER BY category, model, dataset, instance_id, run_id, train_trial_index
            LIMIT ? OFFSET ?
        ),
        analysis AS (
            SELECT a.run_id, a.instance_id, a.train_trial_index, a.required_criteria
            FROM analyses a
            JOIN picked p ON p.run_id = a.run_id AND p.instance_id = a.instance_id
                         AND p.train_trial_index = a.train_trial_index AND p.analyst = a.analyst
            QUALIFY row_number() OVER (
                PARTITION BY a.run_id, a.instance_id, a.train_trial_index ORDER BY a.created_at DESC) = 1
        )
        SELECT p.model, p.dataset, p.domain, p.instance_id, p.category, p.error_title, f.error_summary,
               f.no_model_error, p.taxonomy_version, pr.score, pr.output_text, pr.mapped_output, i.refs,
               i.choices, a.required_criteria
        FROM picked p
        JOIN failure_labels f ON f.run_id = p.run_id AND f.instance_id = p.instance_id
                             AND f.train_trial_index = p.train_trial_index AND f.analyst = p.analyst
        JOIN predictions pr ON pr.run_id = p.run_id AND pr.instance_id = p.instance_id
                           AND pr.train_trial_index = p.train_trial_index
        JOIN instances i ON i.run_id = p.run_id AND i.instance_id = p.instance_id
        LEFT JOIN analysis a ON a.run_id = p.run_id AND a.instance_id = p.instance_id
                            AND a.train_trial_index = p.train_trial_index
        ORDER BY p.category, p.model, p.dataset, p.instance_id, p.run_id, p.train_trial_index
        """,
        [*params, analyst, *extra, limit, offset],
    ).fetchall()
    out = []
    for values in rows:
        row = dict(zip(_COLUMNS, values))
        for key in _JSON:
            if isinstance(row[key], str):
                row[key] = json.loads(row[key])
        out.append(row)
    return out
