"""The first decisive error of agent transcripts (migration 021): which failures have a transcript,
their steps, the analysis of one transcript with its step, where the first error falls per model,
and people's labels of it (reviews with action 'label', e.g. Who&When's).

Read functions take an open connection (read-only is enough); `record_labels` takes a write
connection and commits one transaction. Values travel as `?` parameters.
"""

from __future__ import annotations

import json
from typing import Iterable, Sequence

import duckdb
import polars as pl

from core.schema import REVIEW_COLUMNS

from .analysis import now
from .queries import MAIN_SPLIT, _latest_cte
from .runs import model_key_sql
from .transcripts import transcript_page
from .writes import insert_row, transaction

# Where in the run the first error falls: the share of its steps taken before the error step,
# cut in thirds of the steps (a 9-step run: steps 0-2 early, 3-5 middle, 6-8 late).
POSITIONS = ("early", "middle", "late")
LABEL_ACTION = "label"


def transcript_lengths(con: duckdb.DuckDBPyConnection, run_ids: Sequence[str] | None = None) -> dict[tuple, int]:
    """(run_id, instance_id, train_trial_index) → the number of steps of each prediction that has
    a transcript (in the runs given, else all)."""
    where, params = "", []
    if run_ids is not None:
        where, params = "WHERE run_id IN (SELECT unnest(?::VARCHAR[]))", [list(run_ids)]
    rows = con.execute(
        f"SELECT run_id, instance_id, train_trial_index, count(*) FROM transcript_steps {where} GROUP BY ALL",
        params).fetchall()
    return {(r[0], r[1], r[2]): r[3] for r in rows}


def run_formats(con: duckdb.DuckDBPyConnection, run_ids: Sequence[str]) -> dict[str, str]:
    """run_id → the format of the log it was read from (runs.source_format)."""
    return dict(con.execute("SELECT run_id, source_format FROM runs WHERE run_id IN (SELECT unnest(?::VARCHAR[]))",
                            [list(run_ids)]).fetchall())


def runs_from(con: duckdb.DuckDBPyConnection, source_format: str, source_paths: Sequence[str]) -> dict[str, list[str]]:
    """source_path → the run_ids ingested from it in that format (one per model it was named as)."""
    rows = con.execute(
        "SELECT source_path, run_id FROM runs WHERE source_format = ? AND source_path IN (SELECT unnest(?::VARCHAR[])) "
        "ORDER BY source_path, run_id", [source_format, list(source_paths)]).fetchall()
    out: dict[str, list[str]] = {}
    for path, run_id in rows:
        out.setdefault(path, []).append(run_id)
    return out


def transcript_steps(con: duckdb.DuckDBPyConnection, run_id: str, instance_id: str, trial: int = 0) -> list[dict]:
    """Every step of one prediction's transcript, in order, as dicts of STEP_COLUMNS."""
    n = con.execute("SELECT count(*) FROM transcript_steps WHERE run_id = ? AND instance_id = ? AND train_trial_index = ?",
                    [run_id, instance_id, trial]).fetchall()[0][0]
    return transcript_page(con, run_id, instance_id, trial, 0, n).to_dicts() if n else []


_ANALYSIS_COLUMNS = ("analyst", "prompt_version", "error_title", "error_summary", "category", "taxonomy_version",
                     "no_model_error", "step_index", "step_agent", "step_quote", "n_steps", "segments_read",
                     "required_criteria", "context_note", "created_at")


def transcript_analysis(con: duckdb.DuckDBPyConnection, run_id: str, instance_id: str, trial: int = 0,
                        analyst: str | None = None) -> dict | None:
    """The current analysis of one transcript by `analyst` (else the latest by any analyst): its
    title, summary, label (the category as failure_labels keeps it), no_model_error, the first
    error's step index, agent, quote, the transcript's length, the segments read — and `step`, that
    step's row (STEP_COLUMNS) when the analysis names one. None when it has no analysis."""
    where, params = ("AND a.analyst = ?", [analyst]) if analyst else ("", [])
    row = con.execute(
        f"""SELECT {', '.join('a.' + c for c in _ANALYSIS_COLUMNS)}, l.category AS label
            FROM analyses a
            LEFT JOIN failure_labels l ON l.run_id = a.run_id AND l.instance_id = a.instance_id
                 AND l.train_trial_index = a.train_trial_index AND l.analyst = a.analyst AND l.analysed_at = a.created_at
            WHERE a.run_id = ? AND a.instance_id = ? AND a.train_trial_index = ? {where}
            ORDER BY a.created_at DESC LIMIT 1""",
        [run_id, instance_id, trial, *params]).fetchall()
    if not row:
        return None
    row = row[0]
    out = dict(zip((*_ANALYSIS_COLUMNS, "label"), row))
    for key in ("segments_read", "required_criteria"):
        out[key] = json.loads(out[key]) if out[key] else None
    out["step"] = None
    if out["step_index"] is not None:
        page = transcript_page(con, run_id, instance_id, trial, out["step_index"], 1)
        out["step"] = page.row(0, named=True) if page.height else None
    return out


def first_error_steps(con: duckdb.DuckDBPyConnection, analyst: str, models=None, datasets=None, domains=None,
                      split: str = MAIN_SPLIT) -> pl.DataFrame:
    """Each failed latest outcome with a transcript the analyst analysed: model, dataset, domain,
    instance_id, run_id, train_trial_index, category, step_index (NULL: no step named), step_agent,
    n_steps, share (step_index / n_steps: the part of the run before the error) and position
    (early / middle / late: the third of the steps it falls in)."""
    cte, params = _latest_cte(models, datasets, domains, split=split)
    return con.sql(
        f"""{cte}
            SELECT l.model, l.dataset, l.domain, l.instance_id, l.run_id, l.train_trial_index, l.category,
                   a.step_index, a.step_agent, a.n_steps,
                   CASE WHEN a.step_index IS NOT NULL AND a.n_steps > 0 THEN a.step_index / a.n_steps END AS share,
                   CASE WHEN a.step_index IS NULL OR NOT a.n_steps > 0 THEN NULL
                        WHEN 3 * a.step_index < a.n_steps THEN 'early'
                        WHEN 3 * a.step_index < 2 * a.n_steps THEN 'middle' ELSE 'late' END AS position
            FROM labelled l
            JOIN failure_labels f ON f.run_id = l.run_id AND f.instance_id = l.instance_id
                 AND f.train_trial_index = l.train_trial_index AND f.analyst = l.analyst
            JOIN analyses a ON a.run_id = f.run_id AND a.instance_id = f.instance_id
                 AND a.train_trial_index = f.train_trial_index AND a.analyst = f.analyst AND a.created_at = f.analysed_at
            WHERE l.analyst = ? AND a.n_steps IS NOT NULL
            ORDER BY l.model, l.dataset, l.instance_id""",
        params=[*params, analyst]).pl()


def first_error_positions(con: duckdb.DuckDBPyConnection, analyst: str, models=None, datasets=None, domains=None,
                          split: str = MAIN_SPLIT) -> pl.DataFrame:
    """Per model, over its analysed failed transcripts (first_error_steps): how many, how many name
    a step, the median and mean step index, the median transcript length, the mean share of the
    run before the error, and how many first errors fall early, middle and late."""
    steps = first_error_steps(con, analyst, models, datasets, domains, split)
    named = pl.col("step_index").is_not_null()
    return (
        steps.group_by("model")
        .agg(transcripts=pl.len(), with_step=named.sum(),
             median_step=pl.col("step_index").median(), mean_step=pl.col("step_index").mean(),
             median_steps=pl.col("n_steps").median(), mean_share=pl.col("share").mean(),
             **{p: (pl.col("position") == p).sum() for p in POSITIONS})
        .with_columns(pl.col("transcripts", "with_step", *POSITIONS).cast(pl.Int64))
        .sort("model")
    )


# ---------------------------------------------------------------- people's labels


def record_labels(con: duckdb.DuckDBPyConnection, labels: Iterable[dict], reviewer: str) -> tuple[int, int]:
    """Append people's labels of first errors as reviews (action 'label', no analyst): each a dict
    with run_id, instance_id, train_trial_index, step_index, agent, category (or None) and note.
    A label already stored with the same content is not added again. Returns (added, already)."""
    labels = list(labels)
    added = 0
    with transaction(con):
        for lab in labels:
            values = [lab["run_id"], lab["instance_id"], lab["train_trial_index"], lab.get("step_index"),
                      lab.get("agent"), lab.get("category"), lab.get("note"), reviewer]
            present = con.execute(
                """SELECT count(*) FROM reviews WHERE action = 'label' AND analyst IS NULL AND run_id = ?
                   AND instance_id = ? AND train_trial_index IS NOT DISTINCT FROM ? AND step_index IS NOT DISTINCT FROM ?
                   AND agent IS NOT DISTINCT FROM ? AND category IS NOT DISTINCT FROM ? AND note IS NOT DISTINCT FROM ?
                   AND reviewer = ?""", values).fetchall()[0][0]
            if present:
                continue
            # `values` are REVIEW_COLUMNS up to the reviewer; a label people made names no analyst
            con.execute(insert_row("reviews", REVIEW_COLUMNS), [*values, None, LABEL_ACTION, None, now()])
            added += 1
    return added, len(labels) - added


# the latest people's label of each prediction (a label without a trial applies to every trial)
_LABELS = """
    SELECT run_id, instance_id, train_trial_index, step_index, agent, category, note, reviewer FROM reviews
    WHERE action = 'label' AND analyst IS NULL
    QUALIFY row_number() OVER (PARTITION BY run_id, instance_id, train_trial_index
                               ORDER BY created_at DESC, review_id DESC) = 1
"""
STEP_PAIR_COLUMNS = ("dataset", "instance_id", "model", "run_id", "train_trial_index", "n_steps", "step_index",
                     "step_agent", "category", "ref_step", "ref_agent", "ref_category")


def labelled_steps(con: duckdb.DuckDBPyConnection, analyst: str, against: str = "reviews", models=None,
                   datasets=None) -> list[dict]:
    """Each failed transcript the analyst analysed that also has a reference: people's latest
    label (`against="reviews"`) or another analyst's analysis of the same transcript. Per pair:
    STEP_PAIR_COLUMNS — the analyst's step_index, step_agent, category (NULL where it named none)
    and the reference's."""
    where, params = "", []
    for column, values in ((model_key_sql("r"), models), ("r.dataset", datasets)):
        if values:
            where += f" AND {column} IN ({', '.join('?' * len(values))})"
            params += list(values)
    if against == "reviews":
        reference = f"""SELECT run_id, instance_id, train_trial_index, step_index AS ref_step, agent AS ref_agent,
                               category AS ref_category FROM ({_LABELS})
                        WHERE step_index IS NOT NULL OR agent IS NOT NULL"""
        same = ("ref.run_id = a.run_id AND ref.instance_id = a.instance_id"
                " AND (ref.train_trial_index IS NULL OR ref.train_trial_index = a.train_trial_index)")
        ref_params = []
    else:
        reference = """SELECT a.run_id, a.instance_id, a.train_trial_index, a.step_index AS ref_step,
                              a.step_agent AS ref_agent, l.category AS ref_category
                       FROM analyses a JOIN failure_labels l ON l.run_id = a.run_id AND l.instance_id = a.instance_id
                            AND l.train_trial_index = a.train_trial_index AND l.analyst = a.analyst
                            AND l.analysed_at = a.created_at
                       WHERE a.analyst = ? AND a.n_steps IS NOT NULL"""
        same = ("ref.run_id = a.run_id AND ref.instance_id = a.instance_id"
                " AND ref.train_trial_index = a.train_trial_index")
        ref_params = [against]
    rows = con.execute(
        f"""WITH reference AS ({reference})
            SELECT r.dataset, a.instance_id, {model_key_sql("r")} AS model, a.run_id, a.train_trial_index,
                   a.n_steps, a.step_index, a.step_agent, l.category, ref.ref_step, ref.ref_agent, ref.ref_category
            FROM analyses a
            JOIN failure_labels l ON l.run_id = a.run_id AND l.instance_id = a.instance_id
                 AND l.train_trial_index = a.train_trial_index AND l.analyst = a.analyst AND l.analysed_at = a.created_at
            JOIN runs r ON r.run_id = a.run_id
            JOIN reference ref ON {same}
            WHERE a.analyst = ? AND a.n_steps IS NOT NULL {where}
            ORDER BY r.dataset, a.instance_id, model, a.run_id, a.train_trial_index""",
        [*ref_params, analyst, *params]).fetchall()
    return [dict(zip(STEP_PAIR_COLUMNS, r)) for r in rows]
