"""SQL for measuring analysts: their labels, human reviews, the review queue, shared wrong
answers, and the candidate error types (`taxonomy agreement` / `discover`, the taxonomy and
instances pages).

Functions take an open connection; values travel as `?` parameters; the only SQL assembled at
run time is placeholder lists.
"""

from __future__ import annotations

import duckdb
import polars as pl

from .queries import MAIN_SPLIT, _filter_sql, _latest_cte
from .runs import model_key_sql


def analyst_names(con: duckdb.DuckDBPyConnection) -> list[tuple[str, int]]:
    """(analyst, classified failures), most first."""
    return con.execute(
        "SELECT analyst, count(*) FROM failures WHERE category IS NOT NULL GROUP BY analyst ORDER BY 2 DESC, 1"
    ).fetchall()


# a failure's model is the model as pages select it (with its variant)
_LABELLED = f"""
    SELECT f.run_id, f.instance_id, f.train_trial_index, f.dataset,
           {model_key_sql("r")} AS model, f.domain, f.category, f.error_title, f.error_summary
    FROM failures f JOIN runs r USING (run_id)
    WHERE f.analyst = ? AND f.category IS NOT NULL
"""
_LABEL_COLUMNS = ("run_id", "instance_id", "train_trial_index", "dataset", "model", "domain",
                  "category", "error_title", "error_summary")
_ORDER = "ORDER BY dataset, instance_id, model, run_id, train_trial_index"


def analyst_labels(con: duckdb.DuckDBPyConnection, analyst: str, models=None, datasets=None,
                   domains=None) -> list[dict]:
    """The classified failures of one analyst (its latest analysis of each)."""
    where, params = _filter_sql(models, datasets, domains)
    rows = con.execute(
        f"SELECT * FROM ({_LABELLED}) WHERE true {where} {_ORDER}", [analyst, *params],
    ).fetchall()
    return [dict(zip(_LABEL_COLUMNS, r)) for r in rows]


def labelled_by_both(con: duckdb.DuckDBPyConnection, analyst: str, against: str, models=None,
                     datasets=None) -> list[tuple[str, str, str, str, str]]:
    """(dataset, instance_id, model, analyst's category, reference category) of each failure the
    analyst classified that also has a reference: with `against="reviews"` the latest human
    review that confirmed the label (its category kept) or relabelled it (the new one; flags are
    no label), else the category another analyst `against` gave the same failure."""
    where, params = _filter_sql(models, datasets)
    if against == "reviews":
        # a review is of a question's label, whatever the trial; people's own labels (action
        # 'label', no analyst) count when they give a category
        reference = """
            SELECT run_id, instance_id, category FROM reviews
            WHERE analyst = ? OR (analyst IS NULL AND action = 'label' AND coalesce(category, '') <> '')
            QUALIFY row_number() OVER (
                PARTITION BY run_id, instance_id ORDER BY created_at DESC, review_id DESC) = 1
                AND action IN ('confirm', 'relabel', 'label') AND coalesce(category, '') <> ''"""
        same = "ref.run_id = l.run_id AND ref.instance_id = l.instance_id"
        reference_params = [analyst]
    else:
        reference = """
            SELECT run_id, instance_id, train_trial_index, category FROM failures
            WHERE analyst = ? AND category IS NOT NULL"""
        same = ("ref.run_id = l.run_id AND ref.instance_id = l.instance_id"
                " AND ref.train_trial_index = l.train_trial_index")
        reference_params = [against]
    return con.execute(
        f"""WITH labelled AS (SELECT * FROM ({_LABELLED}) WHERE true {where}),
            reference AS ({reference})
            SELECT l.dataset, l.instance_id, l.model, l.category, ref.category AS reference
            FROM labelled l JOIN reference ref ON {same}
            ORDER BY l.dataset, l.instance_id, l.model, l.run_id, l.train_trial_index""",
        [analyst, *params, *reference_params],
    ).fetchall()


def review_queue(con: duckdb.DuckDBPyConnection, analyst: str, per_stratum: int = 2, models=None,
                 datasets=None, domains=None, split: str = MAIN_SPLIT,
                 thresholds: dict[str, float] | None = None) -> pl.DataFrame:
    """A stratified sample of the analyst's unreviewed labels (latest outcomes) to review next:
    up to `per_stratum` failures per (category, model), drawn in a fixed pseudo-random order, so
    every category and every model gets reviews and a few dozen of them already give a usable κ."""
    cte, params = _latest_cte(models, datasets, domains, split=split, thresholds=thresholds)
    return con.sql(
        f"""{cte}
            SELECT l.dataset, l.instance_id, l.model, l.category, l.error_title
            FROM labelled l
            LEFT JOIN reviews r ON r.run_id = l.run_id AND r.instance_id = l.instance_id
                               AND r.analyst = l.analyst
            WHERE l.analyst = ? AND l.category IS NOT NULL AND r.review_id IS NULL
            QUALIFY row_number() OVER (
                PARTITION BY l.category, l.model
                ORDER BY hash(l.run_id || ':' || l.instance_id || ':' || l.train_trial_index)) <= ?
            ORDER BY l.category, l.model, l.dataset, l.instance_id""",
        params=[*params, analyst, per_stratum],
    ).pl()


def shared_wrong_answers(con: duckdb.DuckDBPyConnection, models=None, datasets=None, domains=None,
                         split: str = MAIN_SPLIT,
                         thresholds: dict[str, float] | None = None, min_models: int = 2) -> pl.DataFrame:
    """Multiple-choice questions where several models gave the same wrong answer.

    The chosen option is the mapped answer when the log has one, else the trimmed output; the
    latest outcome of each model counts once."""
    cte, params = _latest_cte(models, datasets, domains, split=split, thresholds=thresholds)
    return con.sql(
        f"""{cte}
            SELECT l.dataset, l.instance_id,
                   coalesce(p.mapped_output, trim(p.output_text)) AS wrong_answer,
                   count(*) AS models, string_agg(l.model, ', ' ORDER BY l.model) AS chosen_by
            FROM latest l
            JOIN predictions p ON p.run_id = l.run_id AND p.instance_id = l.instance_id
                              AND p.train_trial_index = l.train_trial_index
            JOIN instances i ON i.run_id = l.run_id AND i.instance_id = l.instance_id
            WHERE NOT l.is_correct AND i.choices IS NOT NULL
            GROUP BY ALL HAVING count(*) >= ?
            ORDER BY models DESC, l.dataset, l.instance_id, wrong_answer""",
        params=[*params, min_models],
    ).pl()


_SUSPECT_SCHEMA = {"dataset": pl.String, "instance_id": pl.String, "failures": pl.Int64, "why": pl.String,
                   "answer": pl.String, "models": pl.String}


def suspect_items(con: duckdb.DuckDBPyConnection, analyst: str | None = None, models=None, datasets=None,
                  domains=None, split: str = MAIN_SPLIT,
                  thresholds: dict[str, float] | None = None) -> pl.DataFrame:
    """Questions whose failures look like scoring or reference problems rather than model errors,
    for the benchmark's creators: failures the analyst found not to be the model's fault (its
    reason), and questions that every model with an outcome (two or more) fails with the same
    answer. One row per question: dataset, instance_id, failures (its failing predictions counted
    once), why, answer (the shared answer), models; by dataset, most failures first."""
    cte, params = _latest_cte(models, datasets, domains, split=split, thresholds=thresholds)
    not_model = con.sql(
        f"""{cte}
            SELECT l.dataset, l.instance_id, count(*) AS failures,
                   'not a model error: ' || string_agg(DISTINCT f.no_model_error, '; ' ORDER BY f.no_model_error) AS why,
                   string_agg(l.model, ', ' ORDER BY l.model) AS models
            FROM latest l
            JOIN failure_labels f ON f.run_id = l.run_id AND f.instance_id = l.instance_id
                                 AND f.train_trial_index = l.train_trial_index
            WHERE NOT l.is_correct AND f.analyst = ? AND f.no_model_error IS NOT NULL
            GROUP BY l.dataset, l.instance_id""",
        params=[*params, analyst],
    ).pl() if analyst else pl.DataFrame(schema={k: _SUSPECT_SCHEMA[k] for k in ("dataset", "instance_id", "failures", "why", "models")})
    # questions every model with an outcome fails, picked from the outcomes alone; only their
    # predictions' answers are then read (at 10,000,000 outcomes, joining the answers in one
    # query scanned every output text: 1.4 s against 0.1 s for these few)
    failed = con.sql(
        f"""{cte}, every_model_fails AS MATERIALIZED (
                SELECT dataset, instance_id, count(*) AS answered FROM latest GROUP BY ALL
                HAVING count(*) >= 2 AND count(*) FILTER (WHERE NOT is_correct) = count(*))
            SELECT l.dataset, l.instance_id, l.model, l.run_id, l.train_trial_index, e.answered
            FROM latest l JOIN every_model_fails e USING (dataset, instance_id)""",
        params=params,
    ).pl()
    answers = con.sql(
        """SELECT run_id, instance_id, train_trial_index, coalesce(mapped_output, trim(output_text)) AS answer
           FROM predictions
           WHERE run_id IN (SELECT unnest(?::VARCHAR[])) AND instance_id IN (SELECT unnest(?::VARCHAR[]))""",
        params=[failed["run_id"].unique().to_list(), failed["instance_id"].unique().to_list()],
    ).pl()
    unanimous = (
        failed.join(answers, on=["run_id", "instance_id", "train_trial_index"])
        .filter(pl.col("answer").str.strip_chars() != "")
        .group_by("dataset", "instance_id", "answer", "answered")
        .agg(failures=pl.len().cast(pl.Int64), models=pl.col("model").sort().str.join(", "))
        .filter(pl.col("failures") == pl.col("answered"))
        .select("dataset", "instance_id", "failures",
                why=pl.format("every model fails with the same answer ({} models)", pl.col("failures")),
                answer="answer", models="models")
    )
    both = pl.concat([not_model.with_columns(answer=pl.lit(None, pl.String)).select(list(_SUSPECT_SCHEMA)),
                      unanimous], how="vertical_relaxed")
    if both.is_empty():
        return pl.DataFrame(schema=_SUSPECT_SCHEMA)
    # a question in both lists: every model fails it, so its failures are the unanimous count
    return (
        both.group_by("dataset", "instance_id")
        .agg(pl.col("failures").max(), pl.col("why").sort().str.join("; "), pl.col("answer").drop_nulls().first(),
             pl.col("models").sort_by("failures", descending=True).first())
        .sort(["dataset", "failures", "instance_id"], descending=[False, True, False])
        .select(list(_SUSPECT_SCHEMA))
    )


_DISCOVERY_COLUMNS = ("run_id", "instance_id", "train_trial_index", "dataset", "model", "error_title",
                      "error_summary", "category", "taxonomy_version", "classifier")


def discovery_rows(con: duckdb.DuckDBPyConnection, analyst: str, category: str | None) -> list[dict]:
    """The analyst's analysed failures (only those filed under `category` unless it is None)."""
    where, params = ("AND category = ?", [category]) if category else ("", [])
    rows = con.execute(
        f"""SELECT {', '.join(_DISCOVERY_COLUMNS)} FROM failures WHERE analyst = ? {where}
            ORDER BY error_title, dataset, instance_id, model""",
        [analyst, *params],
    ).fetchall()
    return [dict(zip(_DISCOVERY_COLUMNS, r)) for r in rows]


def taxonomy_categories(con: duckdb.DuckDBPyConnection, version: str) -> tuple[str, str] | None:
    """(name, categories JSON) of a recorded taxonomy version."""
    return next(iter(con.execute("SELECT name, categories FROM taxonomies WHERE taxonomy_version = ?", [version]).fetchall()), None)
