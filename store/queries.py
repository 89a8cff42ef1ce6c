"""Every read query the dashboard, the stats CLI and the report run, plus the review write.

Each function takes an open connection and returns a polars DataFrame or plain Python. Values
always travel as `?` parameters; the only SQL assembled at run time is placeholder lists and
column names picked from fixed whitelists.

Rules shared by every query:
- A "model" is what pages select: the log's model name, plus " · variant" when the run has one
  (store/runs.py), so two settings of one model are two models here.
- A model's outcome on a question is its row in `latest_outcomes`, which the ingest keeps (one
  scored outcome per model, dataset and question), so re-ingesting never double-counts; the
  analysts' labels of those that failed are `latest_labels`, kept with it.
- `split`: "main" (default) keeps each run's main split (every row of a run without one), "all"
  keeps every split, any other value keeps that split.
- Failure categories count only failures of those outcomes, for one analyst, with a category
  assigned; analysed titles still waiting for classification are counted apart.
- `thresholds` ({dataset: score}): the analyst's own line for datasets judged by a threshold on a
  continuous score, set in the app or with `--threshold` (never stored): an outcome of such a
  dataset fails when its score falls below the line (rises above it for a lower-is-better
  metric). Labels of outcomes that pass under the new line are left out; outcomes that newly
  fail have no label yet (not analysed). Without it, the verdicts the ingest stored count.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Sequence

import duckdb
import polars as pl

from core.schema import REVIEW_COLUMNS

from .runs import model_key_sql
from .writes import insert_row

MAIN_SPLIT, ALL_SPLITS = "main", "all"

# the classified failures among `latest` (one `?`: the analyst)
_CLASSIFIED = """
    SELECT model, dataset, domain, instance_id, run_id, train_trial_index, category, error_title,
           taxonomy_version
    FROM labelled WHERE analyst = ? AND category IS NOT NULL
"""

# A and B paired on one question: by id within the dataset, then the questions left over by the
# hash of their text, the k-th copy of a hash on one side with the k-th on the other, so no
# question is paired twice. Each side carries the analyst's label of its outcome when that failed
# (six `?`: the analyst, A, A, the analyst, B, B; `labelled` holds failed outcomes only, under
# the thresholds of the query) and its score, joined before pairing: one model's outcomes to its
# own labels.
_PAIRED = """
    side_a AS (
        SELECT o.*, l.category, l.error_title FROM latest o
        LEFT JOIN (SELECT * FROM labelled WHERE analyst = ? AND model = ? AND category IS NOT NULL) l
          ON l.run_id = o.run_id AND l.instance_id = o.instance_id AND l.train_trial_index = o.train_trial_index
        WHERE o.model = ?
    ),
    side_b AS (
        SELECT o.*, l.category, l.error_title FROM latest o
        LEFT JOIN (SELECT * FROM labelled WHERE analyst = ? AND model = ? AND category IS NOT NULL) l
          ON l.run_id = o.run_id AND l.instance_id = o.instance_id AND l.train_trial_index = o.train_trial_index
        WHERE o.model = ?
    ),
    joined AS (
        SELECT coalesce(a.dataset, b.dataset) AS dataset, a.domain,
               a.instance_id, a.question_hash AS a_hash, a.run_id AS a_run,
               a.train_trial_index AS a_trial, a.is_correct AS a_correct,
               a.category AS a_category, a.error_title AS a_title, a.score AS a_score,
               b.instance_id AS b_instance_id, b.question_hash AS b_hash, b.run_id AS b_run,
               b.train_trial_index AS b_trial, b.is_correct AS b_correct,
               b.category AS b_category, b.error_title AS b_title, b.score AS b_score
        FROM side_a a FULL JOIN side_b b ON b.dataset = a.dataset AND b.instance_id = a.instance_id
    ),
    rest_a AS (
        SELECT *, row_number() OVER (PARTITION BY dataset, a_hash ORDER BY instance_id) AS k
        FROM joined WHERE b_instance_id IS NULL AND a_hash IS NOT NULL
    ),
    rest_b AS (
        SELECT *, row_number() OVER (PARTITION BY dataset, b_hash ORDER BY b_instance_id) AS k
        FROM joined WHERE instance_id IS NULL AND b_hash IS NOT NULL
    ),
    paired AS (
        SELECT 'id' AS paired_by, dataset, domain, instance_id, b_instance_id,
               a_run, a_trial, a_correct, a_category, a_title, a_score,
               b_run, b_trial, b_correct, b_category, b_title, b_score
        FROM joined WHERE instance_id IS NOT NULL AND b_instance_id IS NOT NULL
        UNION ALL
        SELECT 'content', ra.dataset, ra.domain, ra.instance_id, rb.b_instance_id,
               ra.a_run, ra.a_trial, ra.a_correct, ra.a_category, ra.a_title, ra.a_score,
               rb.b_run, rb.b_trial, rb.b_correct, rb.b_category, rb.b_title, rb.b_score
        FROM rest_a ra JOIN rest_b rb
          ON rb.dataset = ra.dataset AND rb.b_hash = ra.a_hash AND rb.k = ra.k
    )
"""


def _frame(con, sql: str, params: list | None = None) -> pl.DataFrame:
    return con.sql(sql, params=params or None).pl()


def _in(column: str, values: Sequence[str] | None) -> tuple[str, list]:
    if not values:
        return "", []
    return f" AND {column} IN ({', '.join('?' * len(values))})", list(values)


def _filter_sql(models=None, datasets=None, domains=None, instance_ids=None,
                model_column: str = "model") -> tuple[str, list]:
    sql, params = "", []
    for column, values in ((model_column, models), ("dataset", datasets), ("domain", domains),
                           ("instance_id", instance_ids)):
        part, p = _in(column, values)
        sql += part
        params += p
    return sql, params


def _split_sql(split: str) -> tuple[str, list]:
    if split == MAIN_SPLIT:
        return " AND is_main_split", []
    if split == ALL_SPLITS:
        return "", []
    return " AND split = ?", [split]


def _verdict_sql(thresholds: dict[str, float] | None, otherwise: str) -> tuple[str, list]:
    """SQL for a row's verdict under the analyst's `thresholds` (a row of `latest_outcomes` or
    `latest_labels`: dataset, score): the score against its dataset's line, in the direction of
    that dataset's runs; `otherwise` for every other row. Empty without thresholds."""
    if not thresholds:
        return "", []
    cases, params = [], []
    for dataset, line in sorted(thresholds.items()):
        # the direction is one scalar read of the runs table, not a join of every outcome
        cases.append("WHEN dataset = ? AND score IS NOT NULL THEN CASE WHEN (SELECT coalesce(bool_or("
                     "lower_is_better), false) FROM runs WHERE dataset = ?) THEN score <= ? ELSE score >= ? END")
        params += [dataset, dataset, float(line), float(line)]
    return f"CASE {' '.join(cases)} ELSE {otherwise} END", params


def _latest_cte(models=None, datasets=None, domains=None, instance_ids=None,
                split: str = MAIN_SPLIT, thresholds: dict[str, float] | None = None) -> tuple[str, list]:
    """`latest`: the outcomes under the filters (judged by `thresholds` where given);
    `labelled`: the labels of those that failed."""
    where, params = _filter_sql(models, datasets, domains, instance_ids)
    part, extra = _split_sql(split)
    verdict, verdict_params = _verdict_sql(thresholds, "is_correct")
    passes, pass_params = _verdict_sql(thresholds, "false")  # a labelled outcome failed as stored
    columns = f"* REPLACE ({verdict} AS is_correct)" if verdict else "*"
    still_fails = f" AND NOT ({passes})" if passes else ""
    # not materialized: a query that reads `latest` twice, once per model (pairs), reads only
    # each model's rows (both tables are stored by model) instead of a copy of both models' rows
    return (f"WITH latest AS NOT MATERIALIZED (SELECT {columns} FROM latest_outcomes WHERE true {where}{part}), "
            f"labelled AS NOT MATERIALIZED (SELECT * FROM latest_labels WHERE true {where}{part}{still_fails})"), (
        verdict_params + params + extra + params + extra + pass_params)


def has_data(con: duckdb.DuckDBPyConnection) -> bool:
    return con.execute("SELECT count(*) FROM runs").fetchall()[0][0] > 0


def inventory(con: duckdb.DuckDBPyConnection, models=None, datasets=None, domains=None) -> dict:
    """What is loaded (under the filters): counts of runs, models, datasets, domains, formats,
    predictions, failures."""
    where, params = _filter_sql(models, datasets, domains, model_column=model_key_sql("r"))
    row = con.execute(
        f"""
        SELECT count(*), count(DISTINCT {model_key_sql("r")}), count(DISTINCT dataset),
               count(DISTINCT domain),
               string_agg(DISTINCT source_format, ', ' ORDER BY source_format),
               coalesce(sum(n_predictions), 0), coalesce(sum(n_failures), 0),
               coalesce(sum(n_infra_errors), 0)
        FROM runs r WHERE true {where}
        """,
        params,
    ).fetchall()[0]
    keys = ["runs", "models", "datasets", "domains", "formats", "predictions", "failures", "infra_errors"]
    return dict(zip(keys, row))


def filter_options(con: duckdb.DuckDBPyConnection) -> dict[str, list[str]]:
    """Distinct models (with their variants), datasets, (non-null) domains and splits, sorted,
    for the shared filters."""
    out = {}
    for key, column in (("models", model_key_sql("r")), ("datasets", "dataset"), ("domains", "domain")):
        rows = con.execute(
            f"SELECT DISTINCT {column} AS v FROM runs r WHERE v IS NOT NULL ORDER BY 1"
        ).fetchall()
        out[key] = [r[0] for r in rows]
    out["splits"] = [r[0] for r in con.execute(
        "SELECT DISTINCT split FROM latest_outcomes WHERE split IS NOT NULL ORDER BY 1").fetchall()]
    return out


def accuracy(con, models=None, datasets=None, domains=None, by: str | None = None,
             split: str = MAIN_SPLIT, thresholds: dict[str, float] | None = None) -> pl.DataFrame:
    """Per model (× dataset when `by="dataset"`, × dataset × split when `by="split"`): scored
    questions `n` and passed `correct`."""
    keys = {None: "model", "dataset": "model, dataset", "split": "model, dataset, split"}.get(by)
    if keys is None:
        raise ValueError(f"accuracy by {by!r}")
    cte, params = _latest_cte(models, datasets, domains, split=split, thresholds=thresholds)
    return _frame(
        con,
        f"""{cte}
        SELECT {keys}, count(*) AS n, count(*) FILTER (WHERE is_correct) AS correct
        FROM latest GROUP BY {keys} ORDER BY {keys}
        """,
        params,
    )


# what each run says about how it is judged and what its harness reported (outcome_stats)
_RUN_RULES = """
    r.source_format, r.main_metric, r.headline_metric, r.metric_min, r.metric_max, r.lower_is_better,
    r.pass_threshold, r.scale_source, r.main_split, r.harness_metric, r.harness_split,
    r.harness_value, r.harness_n, r.harness_agrees, r.harness_note,
    json_extract(r.settings, '$.group_aggregate')::DOUBLE AS group_aggregate
"""


def outcome_stats(con, models=None, datasets=None, domains=None, by_split: bool = False,
                  split: str = MAIN_SPLIT, thresholds: dict[str, float] | None = None) -> pl.DataFrame:
    """Per model × dataset (× split) × domain × run: questions with a verdict `n`, `passed`
    (under `thresholds` where given), `scored`, the scores' `mean` and sum of squared deviations
    `m2`, how many scores are neither 0 nor 1 (`non_binary`), and the run's rule and harness
    aggregate. Aggregated before the join: the runs table is joined once per run, not per outcome."""
    cte, params = _latest_cte(models, datasets, domains, split=split, thresholds=thresholds)
    keys = "model, dataset, " + ("split, " if by_split else "") + "domain, run_id"
    return _frame(
        con,
        f"""{cte},
        per_run AS (
            SELECT {keys}, count(*) AS n, count(*) FILTER (WHERE is_correct) AS passed,
                   count(score) AS scored, avg(score) AS mean,
                   coalesce(var_samp(score), 0) * (count(score) - 1) AS m2,
                   count(*) FILTER (WHERE score NOT IN (0, 1)) AS non_binary
            FROM latest GROUP BY {keys}
        )
        SELECT p.*, {_RUN_RULES}
        FROM per_run p JOIN runs r USING (run_id)
        ORDER BY {", ".join("p." + k.strip() for k in keys.split(","))}
        """,
        params,
    )


def clustered_outcomes(con, models=None, datasets=None, domains=None, split: str = MAIN_SPLIT,
                       thresholds: dict[str, float] | None = None) -> pl.DataFrame:
    """The latest outcome of every question of the datasets where some question has a cluster
    (`instances.cluster`), with its cluster (NULL: its own): columns model, dataset, instance_id,
    is_correct (under `thresholds`), score, cluster."""
    cte, params = _latest_cte(models, datasets, domains, split=split, thresholds=thresholds)
    return _frame(
        con,
        f"""{cte},
        given AS (
            SELECT run_id, instance_id, max(cluster) AS cluster FROM instances
            WHERE cluster IS NOT NULL AND run_id IN (SELECT DISTINCT run_id FROM latest)
            GROUP BY run_id, instance_id
        )
        SELECT o.model, o.dataset, o.instance_id, o.is_correct, o.score, g.cluster
        FROM latest o LEFT JOIN given g ON g.run_id = o.run_id AND g.instance_id = o.instance_id
        WHERE o.dataset IN (SELECT DISTINCT r.dataset FROM given JOIN runs r USING (run_id))
        ORDER BY o.model, o.dataset, o.instance_id
        """,
        params,
    )


def dataset_rules(con, datasets=None) -> pl.DataFrame:
    """Per dataset, how its runs are judged: the metrics, scale bounds, directions, stored
    thresholds and scale sources in use (each a sorted list of the distinct values), the runs
    whose verdicts are the log's own (no threshold), and how many runs."""
    where, params = _filter_sql(datasets=datasets)
    return _frame(
        con,
        f"""
        SELECT dataset,
               list_sort(list(DISTINCT main_metric) FILTER (WHERE main_metric IS NOT NULL)) AS metrics,
               list_sort(list(DISTINCT metric_min) FILTER (WHERE metric_min IS NOT NULL)) AS lows,
               list_sort(list(DISTINCT metric_max) FILTER (WHERE metric_max IS NOT NULL)) AS highs,
               list_sort(list(DISTINCT coalesce(lower_is_better, false))) AS directions,
               list_sort(list(DISTINCT pass_threshold) FILTER (WHERE pass_threshold IS NOT NULL)) AS thresholds,
               list_sort(list(DISTINCT scale_source) FILTER (WHERE scale_source IS NOT NULL)) AS scale_sources,
               count(*) FILTER (WHERE pass_threshold IS NULL) AS log_verdict_runs,
               count(*) AS runs
        FROM runs WHERE true {where} GROUP BY dataset ORDER BY dataset
        """,
        params,
    )


def failures_at(con, lines: dict[str, list[float]], models=None, domains=None,
                split: str = MAIN_SPLIT) -> pl.DataFrame:
    """Per model and dataset of `lines` ({dataset: [score, ...]}): for each line, the questions
    whose score falls below it (rises above it for a lower-is-better dataset): columns model,
    dataset, line, n (questions with a score), failures."""
    if not lines:
        return pl.DataFrame(schema={"model": pl.String, "dataset": pl.String, "line": pl.Float64,
                                    "n": pl.Int64, "failures": pl.Int64})
    cte, params = _latest_cte(models, list(lines), domains, split=split)
    flat = [(d, float(v)) for d, values in sorted(lines.items()) for v in values]
    return _frame(
        con,
        f"""{cte},
        cut AS (SELECT unnest(?::VARCHAR[]) AS dataset, unnest(?::DOUBLE[]) AS line),
        direction AS (SELECT dataset, coalesce(bool_or(lower_is_better), false) AS lower
                      FROM runs WHERE dataset IN (SELECT dataset FROM cut) GROUP BY dataset)
        SELECT o.model, o.dataset, c.line, count(o.score) AS n,
               count(*) FILTER (WHERE CASE WHEN d.lower THEN o.score > c.line ELSE o.score < c.line END)
                   AS failures
        FROM latest o JOIN cut c USING (dataset) JOIN direction d USING (dataset)
        GROUP BY ALL ORDER BY ALL
        """,
        [*params, [d for d, _ in flat], [v for _, v in flat]],
    )


def moved_verdicts(con, thresholds: dict[str, float], models=None, datasets=None, domains=None,
                   split: str = MAIN_SPLIT) -> pl.DataFrame:
    """Per dataset with a moved threshold: outcomes that fail under it but passed as ingested
    (`newly_failing`: no analysis can exist for them yet) and outcomes that pass under it but
    failed as ingested (`newly_passing`: their labels are set aside, not deleted)."""
    moved = [d for d in thresholds if not datasets or d in datasets]
    if not moved:
        return pl.DataFrame(schema={"dataset": pl.String, "newly_failing": pl.Int64, "newly_passing": pl.Int64})
    where, params = _filter_sql(models, moved, domains)
    part, extra = _split_sql(split)
    verdict, verdict_params = _verdict_sql(thresholds, "is_correct")
    return _frame(
        con,
        f"""
        SELECT dataset, count(*) FILTER (WHERE is_correct AND NOT now) AS newly_failing,
               count(*) FILTER (WHERE NOT is_correct AND now) AS newly_passing
        FROM (SELECT dataset, is_correct, {verdict} AS now FROM latest_outcomes WHERE true {where}{part})
        GROUP BY dataset ORDER BY dataset
        """,
        verdict_params + params + extra,
    )


def analysts(con, models=None, datasets=None, domains=None, split: str = MAIN_SPLIT,
             thresholds: dict[str, float] | None = None) -> pl.DataFrame:
    """Per analyst: analysed failures among the models' outcomes, how many have a category, and
    which classifiers assigned them; most analyses first."""
    cte, params = _latest_cte(models, datasets, domains, split=split, thresholds=thresholds)
    return _frame(
        con,
        f"""{cte}
        SELECT analyst, count(*) AS analysed, count(category) AS classified,
               string_agg(DISTINCT classifier, ', ') AS classifiers
        FROM labelled
        GROUP BY analyst ORDER BY analysed DESC, analyst
        """,
        params,
    )


def has_analyst(con, analyst: str) -> bool:
    """Whether this analyst has analysed anything."""
    return con.execute("SELECT count(*) FROM analyses WHERE analyst = ?", [analyst]).fetchall()[0][0] > 0


def category_names(con, analyst: str) -> list[str]:
    """The categories this analyst's failures were classified into, sorted."""
    rows = con.execute(
        "SELECT DISTINCT category FROM failure_labels WHERE analyst = ? AND category IS NOT NULL ORDER BY 1",
        [analyst],
    ).fetchall()
    return [r[0] for r in rows]


def questions_answered(con, models=None, datasets=None, domains=None, by: str | None = None,
                       split: str = MAIN_SPLIT, thresholds: dict[str, float] | None = None) -> pl.DataFrame:
    """How many questions each model answered (per dataset or domain with `by`): model, [by,] questions."""
    if by not in (None, "dataset", "domain"):
        raise ValueError(f"cannot group by {by!r}")
    cte, params = _latest_cte(models, datasets, domains, split=split, thresholds=thresholds)
    keys = "model" + (f", {by}" if by else "")
    return _frame(con, f"{cte} SELECT {keys}, count(*) AS questions FROM latest GROUP BY ALL ORDER BY ALL", params)


def category_counts(con, analyst: str, models=None, datasets=None, domains=None,
                    split: str = MAIN_SPLIT, thresholds: dict[str, float] | None = None) -> pl.DataFrame:
    """Classified failures per model × dataset × category."""
    cte, params = _latest_cte(models, datasets, domains, split=split, thresholds=thresholds)
    return _frame(
        con,
        f"""{cte}, classified AS ({_CLASSIFIED})
        SELECT model, dataset, category, count(*) AS count FROM classified
        GROUP BY ALL ORDER BY ALL
        """,
        [*params, analyst],
    )


def shared_questions(con, models=None, datasets=None, domains=None,
                     split: str = MAIN_SPLIT,
                     thresholds: dict[str, float] | None = None) -> pl.DataFrame:
    """How many questions each pair of models both answered (paired by dataset and question id):
    columns a, b (a < b), shared; most shared first, then by name.

    Counted from the sets of models that answered each question: one pass over the outcomes and
    a handful of distinct sets, never a self-join of every model's outcomes. A set is a bitmask
    over the models in name order, 64 models a word (at 10,000,000 outcomes, ten times faster
    than a sorted list of names per question).
    """
    cte, params = _latest_cte(models, datasets, domains, split=split, thresholds=thresholds)
    names = [r[0] for r in con.execute(f"{cte} SELECT DISTINCT model FROM latest ORDER BY 1", params).fetchall()]
    words = [f"bit_or(CASE WHEN m.i // 64 = {w} THEN 1::UBIGINT << (m.i % 64) ELSE 0::UBIGINT END)"
             for w in range((len(names) + 63) // 64)]
    sets = con.execute(
        f"""{cte}, m AS (SELECT unnest(?::VARCHAR[]) AS model, unnest(range(?)) AS i)
        SELECT count(*), * EXCLUDE (dataset, instance_id) FROM (
            SELECT latest.dataset, latest.instance_id, {', '.join(f'{w} AS w{n}' for n, w in enumerate(words))}
            FROM latest JOIN m USING (model) GROUP BY latest.dataset, latest.instance_id)
        GROUP BY ALL
        """,
        [*params, names, len(names)],
    ).fetchall() if len(names) > 1 else []
    shared: dict[tuple[str, str], int] = {}
    for n, *answered in sets:
        members = [names[w * 64 + bit] for w, word in enumerate(answered) for bit in range(64) if word >> bit & 1]
        for i, a in enumerate(members):
            for b in members[i + 1:]:
                shared[(a, b)] = shared.get((a, b), 0) + n
    rows = sorted(((a, b, n) for (a, b), n in shared.items()), key=lambda r: (-r[2], r[0], r[1]))
    return pl.DataFrame(rows, schema={"a": pl.String, "b": pl.String, "shared": pl.Int64}, orient="row")


def pair_counts(con, a: str, b: str, analyst: str | None, datasets=None, domains=None,
                split: str = MAIN_SPLIT, thresholds: dict[str, float] | None = None) -> pl.DataFrame:
    """Questions both models answered, counted by dataset, by how they were paired ("id" or
    "content"), each side's correctness and, where it failed, the analyst's category of its
    failure: columns dataset, paired_by, a_correct, b_correct, a_category, b_category, n."""
    cte, params = _latest_cte([a, b], datasets, domains, split=split, thresholds=thresholds)
    return _frame(
        con,
        f"""{cte}, {_PAIRED}
        SELECT dataset, paired_by, a_correct, b_correct, a_category, b_category, count(*) AS n
        FROM paired
        GROUP BY ALL ORDER BY ALL
        """,
        [*params, analyst, a, a, analyst, b, b],
    )


def adjacent_pairs(con, dataset: str, pairs: list[tuple[str, str]], domains=None, split: str = MAIN_SPLIT,
                   thresholds: dict[str, float] | None = None) -> pl.DataFrame:
    """For each (a, b) of `pairs`, the questions of `dataset` both answered, paired by id (the
    leaderboard's adjacent ranks, in one query): columns a, b, instance_id, a_correct, b_correct,
    a_score, b_score, ordered by a, b and question."""
    empty = pl.DataFrame(schema={"a": pl.String, "b": pl.String, "instance_id": pl.String, "a_correct": pl.Boolean,
                                 "b_correct": pl.Boolean, "a_score": pl.Float64, "b_score": pl.Float64})
    if not pairs:
        return empty
    models = sorted({m for pair in pairs for m in pair})
    cte, params = _latest_cte(models, [dataset], domains, split=split, thresholds=thresholds)
    values = ", ".join("(?, ?)" for _ in pairs)
    return _frame(
        con,
        f"""{cte}, steps(a, b) AS (VALUES {values})
        SELECT s.a, s.b, x.instance_id, x.is_correct AS a_correct, y.is_correct AS b_correct,
               x.score AS a_score, y.score AS b_score
        FROM steps s
        JOIN latest x ON x.model = s.a
        JOIN latest y ON y.model = s.b AND y.dataset = x.dataset AND y.instance_id = x.instance_id
        ORDER BY s.a, s.b, x.instance_id
        """,
        [*params, *(m for pair in pairs for m in pair)],
    )


def clustered_datasets(con, datasets=None) -> set[str]:
    """The datasets (of `datasets`, else all) whose questions are not independent: some instance
    has a cluster (core/clustered.py), or some question was tried more than once (epochs, trials)."""
    where, params = _in("r.dataset", datasets)
    rows = con.execute(
        f"""
        SELECT DISTINCT r.dataset FROM runs r
        WHERE (EXISTS (SELECT 1 FROM instances i WHERE i.run_id = r.run_id AND i.cluster IS NOT NULL)
               OR EXISTS (SELECT 1 FROM predictions p WHERE p.run_id = r.run_id AND p.train_trial_index <> 0))
          {where}
        """, params).fetchall()
    return {r[0] for r in rows}


def paired_units(con, a: str, b: str, datasets, domains=None, split: str = MAIN_SPLIT,
                 thresholds: dict[str, float] | None = None) -> pl.DataFrame:
    """The questions both models answered (paired as in `pair_counts`), each with every trial of
    the run that holds each model's latest outcome on it: columns dataset, instance_id, a_trials,
    a_pass (the share of A's trials that pass, judged by `thresholds` where given), a_score (the
    mean of its trials' scores), the same for B, and cluster (the question's cluster, A's run's
    else B's; NULL when it has none), ordered by dataset and question."""
    cte, params = _latest_cte([a, b], datasets, domains, split=split, thresholds=thresholds)
    verdict, verdict_params = _verdict_sql(thresholds, "is_correct")
    return _frame(
        con,
        f"""{cte}, {_PAIRED},
        trials AS (
            SELECT p.run_id, p.instance_id, r.dataset, p.score, p.is_correct FROM predictions p
            JOIN runs r ON r.run_id = p.run_id
            WHERE p.is_correct IS NOT NULL
              AND p.run_id IN (SELECT a_run FROM paired UNION SELECT b_run FROM paired)
        ),
        judged AS (
            SELECT run_id, instance_id, count(*) AS trials,
                   avg(CASE WHEN {verdict or "is_correct"} THEN 1.0 ELSE 0.0 END) AS pass_rate,
                   avg(score) AS score
            FROM trials GROUP BY run_id, instance_id
        ),
        clusters AS (
            SELECT run_id, instance_id, max(cluster) AS cluster FROM instances
            WHERE cluster IS NOT NULL
              AND run_id IN (SELECT a_run FROM paired UNION SELECT b_run FROM paired)
            GROUP BY run_id, instance_id
        )
        SELECT pr.dataset, pr.instance_id, ja.trials AS a_trials, ja.pass_rate AS a_pass, ja.score AS a_score,
               jb.trials AS b_trials, jb.pass_rate AS b_pass, jb.score AS b_score,
               coalesce(ca.cluster, cb.cluster) AS cluster
        FROM paired pr
        JOIN judged ja ON ja.run_id = pr.a_run AND ja.instance_id = pr.instance_id
        JOIN judged jb ON jb.run_id = pr.b_run AND jb.instance_id = pr.b_instance_id
        LEFT JOIN clusters ca ON ca.run_id = pr.a_run AND ca.instance_id = pr.instance_id
        LEFT JOIN clusters cb ON cb.run_id = pr.b_run AND cb.instance_id = pr.b_instance_id
        ORDER BY pr.dataset, pr.instance_id, pr.b_instance_id
        """,
        [*params, None, a, a, None, b, b, *verdict_params],
    )


def paired_scores(con, a: str, b: str, datasets, domains=None, split: str = MAIN_SPLIT) -> pl.DataFrame:
    """The two scores of every question of `datasets` both models answered (paired as in
    `pair_counts`), both scored: columns dataset, a_score, b_score, in the order of dataset,
    A's question id, B's question id (the order a seeded bootstrap draws from)."""
    cte, params = _latest_cte([a, b], datasets, domains, split=split)
    return _frame(
        con,
        f"""{cte}, {_PAIRED}
        SELECT dataset, a_score, b_score FROM paired
        WHERE a_score IS NOT NULL AND b_score IS NOT NULL
        ORDER BY dataset, instance_id, b_instance_id
        """,
        [*params, None, a, a, None, b, b],
    )


# the texts of the picked pairs (`picked`: rows of `paired` with `which`), in the order shown
_DISCORDANT_TEXTS = """
        SELECT p.which, p.dataset, p.domain, p.instance_id, p.b_instance_id, i.input_text, i.refs,
               i.choices, pa.output_text AS a_output, pa.mapped_output AS a_mapped,
               pb.output_text AS b_output, pb.mapped_output AS b_mapped,
               coalesce(p.a_category, p.b_category) AS category,
               coalesce(p.a_title, p.b_title) AS error_title
        FROM picked p
        JOIN instances i ON i.run_id = p.a_run AND i.instance_id = p.instance_id
        JOIN predictions pa ON pa.run_id = p.a_run AND pa.instance_id = p.instance_id
                           AND pa.train_trial_index = p.a_trial
        JOIN predictions pb ON pb.run_id = p.b_run AND pb.instance_id = p.b_instance_id
                           AND pb.train_trial_index = p.b_trial
        ORDER BY p.which, p.dataset, p.instance_id
"""


def discordant(con, a: str, b: str, analyst: str | None, datasets=None, domains=None,
               limit: int = 200, split: str = MAIN_SPLIT,
               thresholds: dict[str, float] | None = None, offset: int = 0,
               which: str | None = None) -> pl.DataFrame:
    """Questions exactly one of A and B fails (paired as in `pairs`), with both outputs, the
    input, the references and categories; `which` ("only A fails" / "only B fails") and
    `offset` page through one side."""
    if which not in (None, "only A fails", "only B fails"):
        raise ValueError(f"which={which!r}")
    cte, params = _latest_cte([a, b], datasets, domains, split=split, thresholds=thresholds)
    # pick the rows before reading their texts: joining every pair to the text tables costs more
    # than the whole comparison
    return _frame(
        con,
        f"""{cte}, {_PAIRED},
        picked AS (
            SELECT CASE WHEN a_correct THEN 'only B fails' ELSE 'only A fails' END AS which, *
            FROM paired WHERE a_correct <> b_correct
              AND (? IS NULL OR a_correct = (? = 'only B fails'))
            ORDER BY which, dataset, instance_id
            LIMIT ? OFFSET ?
        )
        {_DISCORDANT_TEXTS}""",
        [*params, analyst, a, a, analyst, b, b, which, which, limit, offset],
    )


def discordant_pages(con, a: str, b: str, analyst: str | None, datasets=None, domains=None,
                     limit: int = 50, split: str = MAIN_SPLIT, thresholds: dict[str, float] | None = None,
                     offset_a: int = 0, offset_b: int = 0) -> pl.DataFrame:
    """One page of each side of `discordant` in one pass over the pairs (the compare page's two
    tabs; pairing twice cost a tenth of a second at 1,000,000 predictions): `limit` questions only
    A fails from `offset_a`, `limit` only B fails from `offset_b`, each in `discordant`'s order."""
    cte, params = _latest_cte([a, b], datasets, domains, split=split, thresholds=thresholds)
    # a side's (dataset, question) is unique, so its row numbers are `discordant`'s LIMIT and OFFSET
    return _frame(
        con,
        f"""{cte}, {_PAIRED},
        sided AS (
            SELECT CASE WHEN a_correct THEN 'only B fails' ELSE 'only A fails' END AS which, *
            FROM paired WHERE a_correct <> b_correct
        ),
        picked AS (
            SELECT * EXCLUDE (k) FROM (
                SELECT *, row_number() OVER (PARTITION BY which ORDER BY dataset, instance_id) - 1 AS k
                FROM sided)
            WHERE k >= CASE which WHEN 'only A fails' THEN ? ELSE ? END
              AND k < CASE which WHEN 'only A fails' THEN ? ELSE ? END + ?
        )
        {_DISCORDANT_TEXTS}""",
        [*params, analyst, a, a, analyst, b, b, offset_a, offset_b, offset_a, offset_b, limit],
    )


def review_summary(con, analyst: str, models=None, datasets=None, domains=None,
                   split: str = MAIN_SPLIT, thresholds: dict[str, float] | None = None) -> pl.DataFrame:
    """Per model: classified labels with a human review, and how many reviews confirmed them."""
    cte, params = _latest_cte(models, datasets, domains, split=split, thresholds=thresholds)
    return _frame(
        con,
        f"""{cte}, classified AS ({_CLASSIFIED}),
        latest_review AS (
            SELECT * FROM reviews WHERE analyst = ?
            QUALIFY row_number() OVER (
                PARTITION BY run_id, instance_id, analyst ORDER BY created_at DESC, review_id DESC) = 1
        )
        SELECT c.model, count(r.review_id) AS reviewed,
               count(*) FILTER (WHERE r.action = 'confirm') AS agreed
        FROM classified c
        LEFT JOIN latest_review r ON r.run_id = c.run_id AND r.instance_id = c.instance_id
        GROUP BY c.model ORDER BY c.model
        """,
        [*params, analyst, analyst],
    )


_OUTCOME_FILTERS = {"failed": " AND NOT o.is_correct", "passed": " AND o.is_correct"}


def _outcome_filter(outcome: str | None, category: str | None) -> tuple[str, list]:
    """The pass/fail and category conditions on outcomes `o` labelled `c`."""
    where, extra = _OUTCOME_FILTERS[outcome] if outcome else "", []
    if category:
        where += " AND c.category = ?"
        extra.append(category)
    return where, extra


def instance_list(con, analyst: str | None, models=None, datasets=None, domains=None,
                  category: str | None = None, outcome: str | None = None, text: str = "",
                  limit: int = 500, split: str = MAIN_SPLIT,
                  thresholds: dict[str, float] | None = None) -> pl.DataFrame:
    """Outcomes matching the filters: one row per model × question, with its category if any."""
    cte, params = _latest_cte(models, datasets, domains, split=split, thresholds=thresholds)
    where, extra = _outcome_filter(outcome, category)
    text_where, text_params = "", []
    if text:
        # plain substring match: % and _ in the search text are not wildcards
        text_where = (" AND (contains(lower(i.input_text), ?) OR contains(lower(p.output_text), ?)"
                      " OR contains(lower(o.instance_id), ?) OR contains(lower(o.error_title), ?))")
        text_params = [text.lower()] * 4
    # without a text search the first rows are picked before their texts are read, and without
    # a category too before their labels are
    first = "" if text else "ORDER BY o.dataset, o.instance_id, o.model LIMIT ?"
    source = "latest"
    if not (category or text):
        source, first = (f"(SELECT dataset, instance_id, model, domain, is_correct, run_id, train_trial_index"
                         f" FROM latest o WHERE true {where} {first})"), ""
    return _frame(
        con,
        f"""{cte}, classified AS ({_CLASSIFIED}),
        picked AS (
            SELECT o.*, c.category, c.error_title
            FROM {source} o
            LEFT JOIN classified c ON c.run_id = o.run_id AND c.instance_id = o.instance_id
                                  AND c.train_trial_index = o.train_trial_index
            WHERE true {where}
            {first}
        )
        SELECT o.dataset, o.instance_id, o.model, o.domain, o.is_correct, o.category,
               o.error_title, left(p.output_text, 160) AS output
        FROM picked o
        JOIN instances i ON i.run_id = o.run_id AND i.instance_id = o.instance_id
        JOIN predictions p ON p.run_id = o.run_id AND p.instance_id = o.instance_id
                          AND p.train_trial_index = o.train_trial_index
        WHERE true {text_where}
        ORDER BY o.dataset, o.instance_id, o.model
        LIMIT ?
        """,
        [*params, analyst, *extra, *([] if text else [limit]), *text_params, limit],
    )


def instance_count(con, analyst: str | None, models=None, datasets=None, domains=None,
                   category: str | None = None, outcome: str | None = None, text: str = "",
                   split: str = MAIN_SPLIT, thresholds: dict[str, float] | None = None) -> int:
    """How many outcomes `instance_list` would list without its limit."""
    cte, params = _latest_cte(models, datasets, domains, split=split, thresholds=thresholds)
    where, extra = _outcome_filter(outcome, category)
    texts = ""
    if text:
        texts = """JOIN instances i ON i.run_id = o.run_id AND i.instance_id = o.instance_id
        JOIN predictions p ON p.run_id = o.run_id AND p.instance_id = o.instance_id
                          AND p.train_trial_index = o.train_trial_index"""
        where += (" AND (contains(lower(i.input_text), ?) OR contains(lower(p.output_text), ?)"
                  " OR contains(lower(o.instance_id), ?) OR contains(lower(c.error_title), ?))")
        extra += [text.lower()] * 4
    return con.execute(
        f"""{cte}, classified AS ({_CLASSIFIED})
        SELECT count(*) FROM latest o
        LEFT JOIN classified c ON c.run_id = o.run_id AND c.instance_id = o.instance_id
                              AND c.train_trial_index = o.train_trial_index
        {texts}
        WHERE true {where}
        """,
        [*params, analyst, *extra],
    ).fetchall()[0][0]


def instance_detail(con, dataset: str, instance_id: str, analyst: str | None,
                    models=None, thresholds: dict[str, float] | None = None) -> list[dict]:
    """Everything about one question for each model that answered it (whatever its split):
    input, references, output, stage-1 analysis (criteria, summary, title), category and the
    latest human review; `is_correct` under `thresholds`, `stored_correct` as ingested."""
    cte, params = _latest_cte(models, [dataset], None, [instance_id], split=ALL_SPLITS, thresholds=thresholds)
    rows = con.execute(
        f"""{cte},
        analysis AS (
            SELECT * FROM analyses WHERE analyst = ? AND instance_id = ?
            QUALIFY row_number() OVER (
                PARTITION BY run_id, instance_id, train_trial_index ORDER BY created_at DESC) = 1
        ),
        latest_class AS (
            SELECT * FROM classifications WHERE error_title IN (SELECT error_title FROM analysis)
            QUALIFY row_number() OVER (PARTITION BY error_title ORDER BY created_at DESC) = 1
        ),
        review AS (
            SELECT * FROM reviews WHERE analyst = ? AND instance_id = ?
            QUALIFY row_number() OVER (
                PARTITION BY run_id, instance_id ORDER BY created_at DESC, review_id DESC) = 1
        )
        SELECT o.model, o.run_id, o.train_trial_index, o.dataset, o.domain, o.split, o.instance_id, o.is_correct,
               p.score, p.output_text, i.raw_instance_id, i.input_text, i.input_messages, i.refs,
               i.choices, p.mapped_output, a.analyst, a.error_title, a.error_summary,
               a.required_criteria,
               -- a transcript's analysis chose its category itself and names its step (migration 021)
               coalesce(a.category, c.category) AS category,
               CASE WHEN a.category IS NOT NULL THEN a.taxonomy_version ELSE c.taxonomy_version END AS taxonomy_version,
               CASE WHEN a.category IS NOT NULL THEN a.analyst ELSE c.classifier END AS classifier,
               a.step_index, a.step_agent, a.step_quote, a.n_steps,
               r.action AS review_action, r.category AS review_category, r.note AS review_note,
               r.reviewer, r.created_at AS reviewed_at,
               -- how the verdict was reached, and what the harness kept (migration 009)
               run.main_metric, run.pass_threshold, run.metric_max, run.lower_is_better,
               run.scale_source, run.metric_min, p.is_correct AS stored_correct, p.verdict_note, p.judge_notes, p.finish_reason, p.output_tokens,
               p.infra_error, run.max_tokens, run.instructions, i.prompt_text
        FROM latest o
        JOIN runs run ON run.run_id = o.run_id
        JOIN instances i ON i.run_id = o.run_id AND i.instance_id = o.instance_id
        JOIN predictions p ON p.run_id = o.run_id AND p.instance_id = o.instance_id
                          AND p.train_trial_index = o.train_trial_index
        LEFT JOIN analysis a ON a.run_id = o.run_id AND a.instance_id = o.instance_id
                            AND a.train_trial_index = o.train_trial_index AND NOT o.is_correct
        LEFT JOIN latest_class c ON c.error_title = a.error_title
        LEFT JOIN review r ON r.run_id = o.run_id AND r.instance_id = o.instance_id
        ORDER BY o.model
        """,
        [*params, analyst, instance_id, analyst, instance_id],
    )
    columns = [d[0] for d in rows.description]
    out = []
    for values in rows.fetchall():
        row = dict(zip(columns, values))
        for key in ("input_messages", "refs", "choices", "required_criteria", "judge_notes"):
            if isinstance(row[key], str):
                row[key] = json.loads(row[key])
        out.append(row)
    return out


def taxonomy_tree(con, analyst: str, models=None, datasets=None, domains=None,
                  split: str = MAIN_SPLIT, thresholds: dict[str, float] | None = None) -> pl.DataFrame:
    """Category → error title → count per model, with the taxonomy version that classified it."""
    cte, params = _latest_cte(models, datasets, domains, split=split, thresholds=thresholds)
    return _frame(
        con,
        f"""{cte}, classified AS ({_CLASSIFIED})
        SELECT category, error_title, taxonomy_version, model, count(*) AS count
        FROM classified GROUP BY ALL ORDER BY category, count DESC, error_title, model
        """,
        [*params, analyst],
    )


def taxonomies(con) -> list[dict]:
    """The taxonomies the analysis pipeline stored, categories parsed from JSON."""
    rows = con.execute(
        "SELECT taxonomy_version, name, source, categories, created_at FROM taxonomies "
        "ORDER BY created_at DESC"
    ).fetchall()
    return [
        {"taxonomy_version": v, "name": n, "source": s, "categories": json.loads(c), "created_at": t}
        for v, n, s, c, t in rows
    ]


def runs(con, models=None, datasets=None, domains=None) -> pl.DataFrame:
    """The loaded runs: the model as pages select it, the log's file name, format, main split,
    variant, whether it is a rerun (and which run counts instead), settings, the
    harness-agreement check, counts, when it was made and when it was ingested."""
    where, params = _filter_sql(models, datasets, domains)
    return _frame(
        con,
        f"""
        SELECT * FROM (
            SELECT {model_key_sql("r")} AS model, r.dataset, r.domain, r.variant,
                   CASE WHEN r.superseded_by IS NOT NULL
                        THEN 'earlier; counts: ' || regexp_extract(s.source_path, '[^/\\\\]*$')
                        WHEN k.n IS NOT NULL THEN 'latest of ' || (k.n + 1) || ' reruns: counts' END AS rerun,
                   r.source_format, regexp_extract(r.source_path, '[^/\\\\]*$') AS file, r.main_split,
                   r.main_metric, r.metric_min, r.metric_max, r.headline_metric, r.harness_agrees, r.harness_note, r.verdict_rule,
                   r.n_predictions, r.n_failures, r.n_infra_errors, r.settings, r.harness_metric, r.harness_split,
                   r.harness_value, r.harness_n, r.suite, r.run_name, r.run_id, r.superseded_by, r.started_at,
                   r.ingested_at
            FROM runs r
            LEFT JOIN runs s ON s.run_id = r.superseded_by
            LEFT JOIN (SELECT superseded_by AS run_id, count(*) AS n FROM runs WHERE superseded_by IS NOT NULL
                       GROUP BY 1) k ON k.run_id = r.run_id
        ) WHERE true {where}
        -- reruns together, the one that counts first, then the latest earlier ones
        ORDER BY model, dataset, domain, superseded_by IS NOT NULL, started_at DESC NULLS LAST, ingested_at DESC,
                 run_id
        """,
        params,
    )


def impossible_rates(con, models=None, datasets=None, domains=None) -> pl.DataFrame:
    """Model × dataset pairs judged by a threshold where every prediction fails, or none does,
    although the scores vary: the rule is probably wrong for these scores (the ingest summary
    warns about the same pairs)."""
    where, params = _filter_sql(models, datasets, domains, model_column=model_key_sql("r"))
    return _frame(
        con,
        f"""
        SELECT {model_key_sql("r")} AS model, r.dataset, count(p.is_correct) AS judged,
               count(*) FILTER (WHERE NOT p.is_correct) AS failed, min(p.score) AS score_min,
               max(p.score) AS score_max, string_agg(DISTINCT r.verdict_rule, '; ') AS verdict_rule
        FROM runs r JOIN predictions p USING (run_id)
        WHERE r.pass_threshold IS NOT NULL AND r.main_metric IS NOT NULL AND NOT p.infra_error {where}
        GROUP BY ALL
        HAVING count(p.is_correct) > 0 AND min(p.score) < max(p.score)
           AND count(*) FILTER (WHERE NOT p.is_correct) IN (0, count(p.is_correct))
        ORDER BY 1, 2
        """,
        params,
    )


REVIEW_ACTIONS = ("confirm", "relabel", "flag")


def record_review(con, run_id: str, instance_id: str, analyst: str, action: str,
                  original_category: str | None, category: str | None, note: str | None,
                  reviewer: str) -> None:
    """Append one human review of a classification (reviews are never updated in place)."""
    if action not in REVIEW_ACTIONS:
        raise ValueError(f"unknown review action {action!r}")
    # a review of a label on the Instances page: of a whole prediction, no trial, step or agent named
    row = {"run_id": run_id, "instance_id": instance_id, "train_trial_index": None, "step_index": None,
           "agent": None, "category": category, "note": note, "reviewer": reviewer, "analyst": analyst,
           "action": action, "original_category": original_category,
           "created_at": datetime.now(timezone.utc).replace(tzinfo=None)}
    con.execute(insert_row("reviews", REVIEW_COLUMNS), [row[c] for c in REVIEW_COLUMNS])
