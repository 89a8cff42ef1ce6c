"""SQL for measuring an analyst against people: every failure under the rule with the analyst's
label and people's, the review samples drawn to measure it, and the calibrations stored.

A failure's *people's label* is the latest human review of it that names a category: a review of
this analyst's label that confirmed it (its category kept) or relabelled it, or a label people
made apart from any analyst (action 'label', e.g. loaded by `taxonomy labels`). Flags are no label.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import duckdb
import polars as pl

from core.schema import CALIBRATION_COLUMNS, REVIEW_SAMPLE_COLUMNS

from .queries import MAIN_SPLIT, _latest_cte
from .runs import model_key_sql
from .writes import insert_row, transaction

# the latest human label of each question (a review is of a question's label, whatever the trial,
# unless it names its trial); one `?`: the analyst
_PEOPLE = """
    SELECT run_id, instance_id, train_trial_index, action, category FROM reviews
    WHERE (analyst = ? AND action IN ('confirm', 'relabel', 'flag'))
       OR (analyst IS NULL AND action = 'label' AND coalesce(category, '') <> '')
    QUALIFY row_number() OVER (PARTITION BY run_id, instance_id, train_trial_index
                               ORDER BY created_at DESC, review_id DESC) = 1
"""

FAILURE_COLUMNS = ("model", "dataset", "domain", "run_id", "instance_id", "train_trial_index",
                   "category", "people")


def _failures(keys: str, tail: str, analyst: str, models, datasets, domains, split: str,
              thresholds: dict[str, float] | None, counted: bool = False) -> tuple[str, list]:
    """The failures under the rule: `keys` (columns of `o`, the outcome), the analyst's category
    and people's, and with `counted` how many `failures` (`tail` then groups them)."""
    cte, params = _latest_cte(models, datasets, domains, split=split, thresholds=thresholds)
    return f"""{cte},
        mine AS (SELECT run_id, instance_id, train_trial_index, category FROM labelled WHERE analyst = ?),
        people AS ({_PEOPLE})
        SELECT {keys}, m.category,
               -- a flag is the latest word on a question but names no category
               CASE WHEN p.action <> 'flag' AND coalesce(p.category, '') <> '' THEN p.category END AS people
               {", count(*) AS failures" if counted else ""}
        FROM latest o
        LEFT JOIN mine m ON m.run_id = o.run_id AND m.instance_id = o.instance_id
                        AND m.train_trial_index = o.train_trial_index
        LEFT JOIN people p ON p.run_id = o.run_id AND p.instance_id = o.instance_id
                          AND (p.train_trial_index IS NULL OR p.train_trial_index = o.train_trial_index)
        WHERE NOT o.is_correct
        {tail}""", [*params, analyst, analyst]


def failures_with_people(con: duckdb.DuckDBPyConnection, analyst: str, models=None, datasets=None,
                         domains=None, split: str = MAIN_SPLIT,
                         thresholds: dict[str, float] | None = None) -> pl.DataFrame:
    """Every failure under the rule (latest outcomes that fail, judged by `thresholds`), with the
    analyst's category (NULL: not analysed, or its title not classified yet), people's category
    (NULL: no one labelled it). Columns: FAILURE_COLUMNS."""
    sql, params = _failures(
        "o.model, o.dataset, o.domain, o.run_id, o.instance_id, o.train_trial_index",
        "ORDER BY o.model, o.dataset, o.instance_id, o.run_id, o.train_trial_index",
        analyst, models, datasets, domains, split, thresholds)
    return con.sql(sql, params=params).pl()


def failure_label_counts(con: duckdb.DuckDBPyConnection, analyst: str, datasets=None, domains=None,
                         by: str | None = None, split: str = MAIN_SPLIT,
                         thresholds: dict[str, float] | None = None) -> pl.DataFrame:
    """`failures_with_people` of every model counted: per model (and `by`: "dataset" or "domain"),
    the analyst's category and people's, how many `failures` have them — what the shares'
    estimate reads (stats/shares.py), without fetching a row per failure (at 1,000,000
    predictions, 0.13 s instead of 0.5 s). Columns: model[, by], category, people, failures."""
    if by not in (None, "dataset", "domain"):
        raise ValueError(f"cannot group by {by!r}")
    sql, params = _failures("o.model" + (f", o.{by}" if by else ""), "GROUP BY ALL", analyst, None, datasets,
                            domains, split, thresholds, counted=True)
    return con.sql(sql, params=params).pl()


def record_sample(con: duckdb.DuckDBPyConnection, sample_id: str, analyst: str, seed: int,
                  rows: list[dict]) -> None:
    """Store one drawn review sample (each row: run_id, instance_id, train_trial_index, stratum,
    stratum_size, stratum_drawn)."""
    now = datetime.now(UTC).replace(tzinfo=None)
    with transaction(con):
        con.executemany(
            insert_row("review_samples", REVIEW_SAMPLE_COLUMNS),
            [[sample_id, analyst, seed, r["run_id"], r["instance_id"], r["train_trial_index"], r["stratum"],
              r["stratum_size"], r["stratum_drawn"], now] for r in rows],
        )


def record_calibration(con: duckdb.DuckDBPyConnection, analyst: str, taxonomy_version: str | None,
                       prompt_version: str | None, reviews_hash: str, n_reviews: int, report: dict) -> None:
    con.execute(
        insert_row("calibrations", CALIBRATION_COLUMNS),
        [analyst, taxonomy_version, prompt_version, reviews_hash, n_reviews, json.dumps(report),
         datetime.now(UTC).replace(tzinfo=None)],
    )


def latest_calibration(con: duckdb.DuckDBPyConnection, analyst: str) -> dict | None:
    """The analyst's latest stored calibration: {taxonomy_version, prompt_version, reviews_hash,
    n_reviews, report, created_at}, or None."""
    keys = tuple(c for c in CALIBRATION_COLUMNS if c != "analyst")
    row = con.execute(
        f"SELECT {', '.join(keys)} FROM calibrations WHERE analyst = ? ORDER BY created_at DESC LIMIT 1",
        [analyst]).fetchall()
    if not row:
        return None
    out = dict(zip(keys, row[0]))
    out["report"] = json.loads(out["report"]) if isinstance(out["report"], str) else out["report"]
    return out


def analyst_versions(con: duckdb.DuckDBPyConnection, analyst: str) -> tuple[str | None, str | None]:
    """The taxonomy version and prompt version of the analyst's latest analyses (what a
    calibration is valid for)."""
    row = con.execute(
        """SELECT l.taxonomy_version, a.prompt_version FROM latest_labels l
           JOIN analyses a ON a.run_id = l.run_id AND a.instance_id = l.instance_id
                          AND a.train_trial_index = l.train_trial_index AND a.analyst = l.analyst
           WHERE l.analyst = ? AND l.category IS NOT NULL
           ORDER BY a.created_at DESC LIMIT 1""", [analyst]).fetchall()
    return (row[0][0], row[0][1]) if row else (None, None)


def predictions_for(con: duckdb.DuckDBPyConnection, keys: list[tuple[str, str, str]]) -> dict[tuple, list[tuple]]:
    """(dataset, model, instance_id) → the (run_id, train_trial_index) predictions the store holds
    for it, the model as pages name it (with its variant)."""
    if not keys:
        return {}
    rows = con.execute(
        f"""WITH wanted AS (SELECT unnest(?::VARCHAR[]) AS dataset, unnest(?::VARCHAR[]) AS model,
                                   unnest(?::VARCHAR[]) AS instance_id)
            SELECT w.dataset, w.model, w.instance_id, p.run_id, p.train_trial_index
            FROM wanted w
            JOIN runs r ON r.dataset = w.dataset AND {model_key_sql("r")} = w.model
            JOIN predictions p ON p.run_id = r.run_id AND p.instance_id = w.instance_id
            ORDER BY ALL""",
        [[k[0] for k in keys], [k[1] for k in keys], [k[2] for k in keys]]).fetchall()
    out: dict[tuple, list[tuple]] = {}
    for dataset, model, instance_id, run_id, trial in rows:
        out.setdefault((dataset, model, instance_id), []).append((run_id, trial))
    return out


def known_categories(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Every category of every taxonomy version the store holds."""
    rows = con.execute("SELECT categories FROM taxonomies").fetchall()
    names: set[str] = set()
    for (cats,) in rows:
        for c in json.loads(cats) if isinstance(cats, str) else cats:
            names.add(c["name"] if isinstance(c, dict) else str(c))
    return sorted(names)
