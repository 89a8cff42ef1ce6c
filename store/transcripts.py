"""Read queries over agent transcripts (`transcript_steps`, migration 019): one transcript a page
at a time, step counts per prediction, tool calls and their errors per model, and one question
across every model with each model's transcript summarised (for the MCP server).

Each function takes an open connection and returns a polars DataFrame or plain Python; values
travel as `?` parameters. A "model" is what pages select (model · variant, store/runs.py). Where a
query speaks of a model's prediction on a question it means the one that counts, chosen as
`latest_outcomes` chooses it (store/runs.py `LATEST_ORDER`: the rerun that counts, then the latest
ingest, run id, unperturbed first, lowest trial), but an unscored prediction counts where the model
has no scored one: an agent log with no verdict still has a transcript. Agent tables keep the
questions whose counting prediction has a transcript, so their verdicts are the pages' verdicts.
"""

from __future__ import annotations

from typing import Sequence

import duckdb
import polars as pl

from core import schema

from .runs import LATEST_ORDER, model_key_sql

# A page of steps: enough for a screen, few enough to draw at once.
PAGE_STEPS = 100
# How much of a text the summaries carry (the page shows the stored text, itself cut at ingest).
SUMMARY_CHARS = 300

# A step as pages show it: its own columns, without the prediction it belongs to
STEP_COLUMNS = tuple(c for c in schema.STEP_COLUMNS if c not in ("instance_id", "train_trial_index"))

# Per prediction: its steps counted by kind. `{where}` is a fixed filter on `s` (transcript_steps).
_COUNTS = """
    SELECT s.run_id, s.instance_id, s.train_trial_index,
           count(*) AS n_steps,
           count(*) FILTER (WHERE s.kind = 'message') AS n_messages,
           count(*) FILTER (WHERE s.kind = 'tool call') AS n_tool_calls,
           count(*) FILTER (WHERE s.kind = 'tool result') AS n_tool_results,
           count(*) FILTER (WHERE s.kind = 'tool result' AND s.error IS NOT NULL) AS n_tool_errors,
           count(*) FILTER (WHERE s.kind = 'error') AS n_errors,
           count(*) FILTER (WHERE s.kind = 'system event') AS n_events,
           count(*) FILTER (WHERE s.text_chars > length(coalesce(s.text, ''))) AS n_cut,
           min(s.step_index) FILTER (WHERE s.error IS NOT NULL) AS first_error_step,
           list(DISTINCT s.agent ORDER BY s.agent) FILTER (WHERE s.agent IS NOT NULL) AS agents,
           sum(s.input_tokens)::BIGINT AS input_tokens, sum(s.output_tokens)::BIGINT AS output_tokens,
           sum(s.seconds) AS seconds
    FROM transcript_steps s
    WHERE true {where}
    GROUP BY s.run_id, s.instance_id, s.train_trial_index
"""

# Each model's counting prediction per question (a scored one first, as latest_outcomes holds only
# those), kept when it has a transcript: a rerun without one hides the older run's transcript
# rather than pairing the newer verdict with an older run's steps.
_LATEST_WITH_STEPS = f"""
    latest_agent AS (
        SELECT * FROM (
            SELECT {model_key_sql("r")} AS model, r.dataset, r.domain, p.instance_id, p.run_id,
                   p.train_trial_index, p.is_correct, p.score, p.infra_error, p.output_text
            FROM predictions p
            JOIN runs r USING (run_id)
            JOIN instances i ON i.run_id = p.run_id AND i.instance_id = p.instance_id
            WHERE EXISTS (SELECT 1 FROM runs r2 WHERE r2.model = r.model AND r2.dataset = r.dataset
                          AND r2.run_id IN (SELECT DISTINCT run_id FROM transcript_steps)) {{where}}
            -- the model key spelled out: a bare `model` here is the runs column, without the variant
            QUALIFY row_number() OVER (
                PARTITION BY {model_key_sql("r")}, r.dataset, p.instance_id
                ORDER BY p.is_correct IS NULL, {LATEST_ORDER}) = 1
        ) counting
        WHERE EXISTS (SELECT 1 FROM transcript_steps s WHERE s.run_id = counting.run_id
                      AND s.instance_id = counting.instance_id AND s.train_trial_index = counting.train_trial_index)
    )
"""


def _in(column: str, values: Sequence[str] | None) -> tuple[str, list]:
    if not values:
        return "", []
    return f" AND {column} IN ({', '.join('?' * len(values))})", list(values)


def _model_filter(models=None, datasets=None, domains=None) -> tuple[str, list]:
    """Filters on runs `r` (the model as pages select it)."""
    sql, params = "", []
    for column, values in ((model_key_sql("r"), models), ("r.dataset", datasets), ("r.domain", domains)):
        part, p = _in(column, values)
        sql += part
        params += p
    return sql, params


def transcript_size(con: duckdb.DuckDBPyConnection, run_id: str, instance_id: str, trial: int = 0) -> int:
    """How many steps the prediction's transcript has (0: none stored)."""
    return con.execute(
        "SELECT count(*) FROM transcript_steps WHERE run_id = ? AND instance_id = ? AND train_trial_index = ?",
        [run_id, instance_id, trial]).fetchall()[0][0]


def transcript_page(con: duckdb.DuckDBPyConnection, run_id: str, instance_id: str, trial: int = 0,
                    start: int = 0, limit: int = PAGE_STEPS) -> pl.DataFrame:
    """Steps `start` .. `start + limit - 1` of a prediction's transcript, in order, every column."""
    start, limit = max(0, int(start)), max(0, int(limit))
    return con.sql(
        f"SELECT {', '.join(STEP_COLUMNS)} FROM transcript_steps "
        "WHERE run_id = ? AND instance_id = ? AND train_trial_index = ? AND step_index >= ? AND step_index < ? "
        "ORDER BY step_index",
        params=[run_id, instance_id, trial, start, start + limit]).pl()


def step(con: duckdb.DuckDBPyConnection, run_id: str, instance_id: str, trial: int, step_index: int) -> dict | None:
    """One step, every column, or None when the transcript has no such step."""
    page = transcript_page(con, run_id, instance_id, trial, step_index, 1)
    return page.row(0, named=True) if page.height else None


def step_counts(con: duckdb.DuckDBPyConnection, run_ids: Sequence[str] | None = None,
                instance_ids: Sequence[str] | None = None) -> pl.DataFrame:
    """Per prediction with a transcript: its steps by kind, tool calls and the tool results that
    errored, errors, system events, texts cut at ingest, the first step with an error, the agents
    that acted, tokens and seconds where logged."""
    where, params = "", []
    for column, values in (("s.run_id", run_ids), ("s.instance_id", instance_ids)):
        part, p = _in(column, values)
        where += part
        params += p
    return con.sql(_COUNTS.format(where=where) + " ORDER BY ALL", params=params or None).pl()


def tool_use(con: duckdb.DuckDBPyConnection, models=None, datasets=None, domains=None) -> pl.DataFrame:
    """Per model and tool, over each model's latest prediction per question: how many calls, how
    many of their results carry an error, on how many questions, and the error share; tools that
    fail most first."""
    where, params = _model_filter(models, datasets, domains)
    sql = f"""
        WITH {_LATEST_WITH_STEPS.format(where=where)},
        calls AS (
            SELECT l.model, s.tool_name, s.kind, s.error, l.dataset, l.instance_id
            FROM latest_agent l
            JOIN transcript_steps s ON s.run_id = l.run_id AND s.instance_id = l.instance_id
             AND s.train_trial_index = l.train_trial_index
            WHERE s.kind IN ('tool call', 'tool result')
        )
        SELECT model, coalesce(tool_name, '(unnamed)') AS tool,
               count(*) FILTER (WHERE kind = 'tool call') AS calls,
               count(*) FILTER (WHERE kind = 'tool call' AND error IS NOT NULL) AS malformed_calls,
               count(*) FILTER (WHERE kind = 'tool result') AS results,
               count(*) FILTER (WHERE kind = 'tool result' AND error IS NOT NULL) AS errors,
               count(DISTINCT (dataset, instance_id)) AS questions,
               CASE WHEN count(*) FILTER (WHERE kind = 'tool result') > 0
                    THEN count(*) FILTER (WHERE kind = 'tool result' AND error IS NOT NULL)
                         / count(*) FILTER (WHERE kind = 'tool result') END AS error_share
        FROM calls GROUP BY ALL
        ORDER BY model, errors DESC, calls DESC, tool
    """
    return con.sql(sql, params=params or None).pl()


def transcript_totals(con: duckdb.DuckDBPyConnection, models=None, datasets=None, domains=None) -> pl.DataFrame:
    """Per model, over its latest prediction per question with a transcript: predictions, steps,
    tool calls and tool errors, and the median transcript length, split by verdict."""
    where, params = _model_filter(models, datasets, domains)
    sql = f"""
        WITH {_LATEST_WITH_STEPS.format(where=where)},
        counts AS ({_COUNTS.format(where="")})
        SELECT l.model, l.is_correct,
               count(*) AS predictions, sum(c.n_steps)::BIGINT AS steps, sum(c.n_tool_calls)::BIGINT AS tool_calls,
               sum(c.n_tool_errors)::BIGINT AS tool_errors, sum(c.n_errors)::BIGINT AS errors,
               median(c.n_steps) AS median_steps
        FROM latest_agent l
        JOIN counts c ON c.run_id = l.run_id AND c.instance_id = l.instance_id
         AND c.train_trial_index = l.train_trial_index
        GROUP BY ALL ORDER BY l.model, l.is_correct NULLS LAST
    """
    return con.sql(sql, params=params or None).pl()


def question_across_models(con: duckdb.DuckDBPyConnection, dataset: str, instance_id: str,
                           models=None, chars: int = SUMMARY_CHARS, run_ids=None) -> pl.DataFrame:
    """One question, every model's latest prediction on it (with a transcript or not): its
    verdict and score, the output and the transcript summarised — step and tool-call counts, tool
    errors, the tools used, the first step with an error and what it said, the last step. Texts
    are cut at `chars` characters; `*_chars` give their full stored length. `run_ids`: only
    those runs (the ones a caller's outcomes come from, reruns decided elsewhere)."""
    mwhere, mparams = _in(model_key_sql("r"), models)
    rwhere, rparams = _in("p.run_id", run_ids)
    mwhere, mparams = mwhere + rwhere, mparams + rparams
    sql = f"""
        WITH latest AS (
            SELECT {model_key_sql("r")} AS model, p.run_id, p.instance_id, p.train_trial_index,
                   p.is_correct, p.score, p.infra_error, p.output_text
            FROM predictions p
            JOIN runs r USING (run_id)
            JOIN instances i ON i.run_id = p.run_id AND i.instance_id = p.instance_id
            WHERE r.dataset = ? AND p.instance_id = ? {mwhere}
            QUALIFY row_number() OVER (
                PARTITION BY {model_key_sql("r")} ORDER BY p.is_correct IS NULL, {LATEST_ORDER}) = 1
        ),
        steps AS (
            SELECT s.* FROM transcript_steps s
            JOIN latest l ON s.run_id = l.run_id AND s.instance_id = l.instance_id
             AND s.train_trial_index = l.train_trial_index
        ),
        counts AS (
            SELECT run_id,
                   count(*) AS n_steps,
                   count(*) FILTER (WHERE kind = 'tool call') AS n_tool_calls,
                   count(*) FILTER (WHERE kind = 'tool result' AND error IS NOT NULL) AS n_tool_errors,
                   list(DISTINCT tool_name ORDER BY tool_name) FILTER (WHERE tool_name IS NOT NULL) AS tools,
                   min(step_index) FILTER (WHERE error IS NOT NULL) AS first_error_step,
                   max(step_index) AS last_step
            FROM steps GROUP BY run_id
        )
        SELECT l.model, l.run_id, l.train_trial_index, l.is_correct, l.score, l.infra_error,
               left(l.output_text, ?) AS output, length(l.output_text) AS output_chars,
               coalesce(c.n_steps, 0) AS n_steps, coalesce(c.n_tool_calls, 0) AS n_tool_calls,
               coalesce(c.n_tool_errors, 0) AS n_tool_errors, c.tools, c.first_error_step,
               left(e.error, ?) AS first_error, left(z.text, ?) AS last_step_text, z.kind AS last_step_kind
        FROM latest l
        LEFT JOIN counts c USING (run_id)
        LEFT JOIN steps e ON e.run_id = l.run_id AND e.step_index = c.first_error_step
        LEFT JOIN steps z ON z.run_id = l.run_id AND z.step_index = c.last_step
        ORDER BY l.model
    """
    return con.sql(sql, params=[dataset, instance_id, *mparams, chars, chars, chars]).pl()


def agent_tasks(con: duckdb.DuckDBPyConnection, models=None, datasets=None, domains=None) -> pl.DataFrame:
    """Per model and question with a transcript, its latest prediction: model, dataset,
    instance_id, run_id, train_trial_index, is_correct, n_steps, n_tool_calls, n_tool_errors."""
    where, params = _model_filter(models, datasets, domains)
    sql = f"""
        WITH {_LATEST_WITH_STEPS.format(where=where)},
        counts AS ({_COUNTS.format(where="")})
        SELECT l.model, l.dataset, l.instance_id, l.run_id, l.train_trial_index, l.is_correct,
               c.n_steps, c.n_tool_calls, c.n_tool_errors
        FROM latest_agent l
        JOIN counts c ON c.run_id = l.run_id AND c.instance_id = l.instance_id
         AND c.train_trial_index = l.train_trial_index
        ORDER BY l.model, l.dataset, l.instance_id
    """
    return con.sql(sql, params=params or None).pl()


def tool_use_by_task(con: duckdb.DuckDBPyConnection, models=None, datasets=None, domains=None) -> pl.DataFrame:
    """`tool_use` before it is summed over questions: per model, dataset, question and tool, the
    calls, the calls that were malformed, the results and the results that errored (so a caller
    can keep only the questions two models both ran)."""
    where, params = _model_filter(models, datasets, domains)
    sql = f"""
        WITH {_LATEST_WITH_STEPS.format(where=where)}
        SELECT l.model, l.dataset, l.instance_id, coalesce(s.tool_name, '(unnamed)') AS tool,
               count(*) FILTER (WHERE s.kind = 'tool call') AS calls,
               count(*) FILTER (WHERE s.kind = 'tool call' AND s.error IS NOT NULL) AS malformed_calls,
               count(*) FILTER (WHERE s.kind = 'tool result') AS results,
               count(*) FILTER (WHERE s.kind = 'tool result' AND s.error IS NOT NULL) AS errors
        FROM latest_agent l
        JOIN transcript_steps s ON s.run_id = l.run_id AND s.instance_id = l.instance_id
         AND s.train_trial_index = l.train_trial_index
        WHERE s.kind IN ('tool call', 'tool result')
        GROUP BY ALL ORDER BY ALL
    """
    return con.sql(sql, params=params or None).pl()
