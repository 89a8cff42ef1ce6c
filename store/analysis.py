"""Every statement the failure analysis (taxonomy package) runs against the store.

Read functions take an open connection (read-only is enough); `save_batch` takes a write
connection and commits one transaction. Values always travel as `?` parameters; the only SQL
assembled at run time is placeholder lists.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Iterable, Sequence

import duckdb
import pyarrow as pa

from core.schema import (
    ANALYSIS_COLUMNS,
    ANALYSIS_STEP_COLUMNS,
    CLASSIFICATION_COLUMNS,
    FAILURE_LABEL_COLUMNS,
    LATEST_LABEL_COLUMNS,
    LLM_CACHE_COLUMNS,
    LLM_CALL_COLUMNS,
    TAXONOMY_COLUMNS,
    VERIFICATION_COLUMNS,
)

from .writes import insert_row, transaction


def now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


def _marks(n: int) -> str:
    return ", ".join("?" * n)


def models_and_datasets(con: duckdb.DuckDBPyConnection) -> tuple[list[str], list[str]]:
    models = [r[0] for r in con.execute("SELECT DISTINCT model FROM runs ORDER BY 1").fetchall()]
    datasets = [r[0] for r in con.execute("SELECT DISTINCT dataset FROM runs ORDER BY 1").fetchall()]
    return models, datasets


_FAILURE_COLUMNS = (
    "run_id", "instance_id", "train_trial_index", "model", "dataset", "domain", "main_metric",
    "input_text", "input_messages", "refs", "choices", "output_text", "mapped_output", "score",
    # the evidence the harness kept (migration 009) and the rule that made this a failure
    "instructions", "max_tokens", "prompt_text", "judge_notes", "finish_reason", "output_tokens",
    "verdict_note", "output_kind", "metric_max", "lower_is_better", "pass_threshold", "scale_source",
    # migration 010: the bottom of the scale (1 for 1–5 jury scores) and the rule in words
    "metric_min", "verdict_rule",
)
_JSON_FAILURE_COLUMNS = ("input_messages", "refs", "choices", "judge_notes")


def failures(
    con: duckdb.DuckDBPyConnection, models: Sequence[str] = (), datasets: Sequence[str] = ()
) -> list[dict]:
    """Scored failures (not infrastructure errors) with what an analyst needs, in a stable order.
    An earlier rerun's failures only where they still count (a question its later rerun did not
    ask): analysing the others would pay for labels no page shows."""
    where = ["p.is_correct = false", "NOT p.infra_error",
             "(r.superseded_by IS NULL OR EXISTS (SELECT 1 FROM latest_outcomes o"
             " WHERE o.run_id = p.run_id AND o.instance_id = p.instance_id))"]
    params: list = []
    if models:
        where.append(f"r.model IN ({_marks(len(models))})")
        params += list(models)
    if datasets:
        where.append(f"r.dataset IN ({_marks(len(datasets))})")
        params += list(datasets)
    rows = con.execute(
        f"""
        SELECT p.run_id, p.instance_id, p.train_trial_index, r.model, r.dataset, r.domain,
               r.main_metric, i.input_text, i.input_messages, i.refs, i.choices, p.output_text,
               p.mapped_output, p.score,
               r.instructions, r.max_tokens, i.prompt_text, p.judge_notes, p.finish_reason,
               p.output_tokens, p.verdict_note, p.output_kind, r.metric_max, r.lower_is_better,
               r.pass_threshold, r.scale_source, r.metric_min, r.verdict_rule
        FROM predictions p
        JOIN runs r USING (run_id)
        JOIN instances i ON i.run_id = p.run_id AND i.instance_id = p.instance_id
        WHERE {' AND '.join(where)}
        QUALIFY row_number() OVER (
            PARTITION BY p.run_id, p.instance_id, p.train_trial_index ORDER BY i.perturbation NULLS FIRST) = 1
        ORDER BY r.model, r.dataset, p.run_id, p.instance_id, p.train_trial_index
        """,
        params,
    ).fetchall()
    out = []
    for row in rows:
        rec = dict(zip(_FAILURE_COLUMNS, row))
        for key in _JSON_FAILURE_COLUMNS:
            rec[key] = json.loads(rec[key]) if rec[key] else None
        out.append(rec)
    return out


def correct_outputs(con: duckdb.DuckDBPyConnection, datasets: Sequence[str]) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """(dataset, instance_id) → [(model, output_text)] of passing predictions, one per model."""
    if not datasets:
        return {}
    rows = con.execute(
        f"""
        SELECT r.dataset, p.instance_id, r.model, p.output_text
        FROM predictions p JOIN runs r USING (run_id)
        WHERE p.is_correct AND NOT p.infra_error AND r.dataset IN ({_marks(len(datasets))})
          AND p.output_text IS NOT NULL AND trim(p.output_text) <> ''
        QUALIFY row_number() OVER (
            PARTITION BY r.dataset, p.instance_id, r.model
            ORDER BY r.ingested_at DESC, p.run_id, p.train_trial_index) = 1
        ORDER BY r.dataset, p.instance_id, r.model
        """,
        list(datasets),
    ).fetchall()
    out: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for dataset, instance_id, model, text in rows:
        out.setdefault((dataset, instance_id), []).append((model, text))
    return out


def analyses_of(con: duckdb.DuckDBPyConnection, analyst: str, prompt_version: str) -> list[dict]:
    """The latest analysis per failure for this analyst and prompt version."""
    rows = con.execute(
        """
        SELECT run_id, instance_id, train_trial_index, pair_hash, error_title, error_summary,
               required_criteria, cache_key, no_model_error, context_note
        FROM analyses
        WHERE analyst = ? AND prompt_version = ?
        QUALIFY row_number() OVER (
            PARTITION BY run_id, instance_id, train_trial_index ORDER BY created_at DESC) = 1
        """,
        [analyst, prompt_version],
    ).fetchall()
    return [
        {"key": (r[0], r[1], r[2]), "pair_hash": r[3], "error_title": r[4], "error_summary": r[5],
         "required_criteria": r[6], "cache_key": r[7], "no_model_error": r[8], "context_note": r[9]}
        for r in rows
    ]


def title_summaries(con: duckdb.DuckDBPyConnection, titles: Sequence[str]) -> dict[str, str]:
    """error_title → the summary of its earliest analysis (what stage 3 sends with the title)."""
    if not titles:
        return {}
    rows = con.execute(
        """
        SELECT error_title, error_summary FROM analyses
        WHERE error_title IN (SELECT unnest(?::VARCHAR[])) AND no_model_error IS NULL
        QUALIFY row_number() OVER (
            PARTITION BY error_title ORDER BY created_at, run_id, instance_id, train_trial_index, analyst) = 1
        """,
        [list(titles)],
    ).fetchall()
    return dict(rows)


def latest_analyses(con: duckdb.DuckDBPyConnection, analyst: str) -> dict[tuple, dict]:
    """(run_id, instance_id, train_trial_index) → the analyst's current analysis of that failure:
    title, summary, criteria (parsed), category, no_model_error, context_note and `analysed_at`
    (its created_at, which names it)."""
    rows = con.execute(
        """
        SELECT l.run_id, l.instance_id, l.train_trial_index, l.error_title, l.error_summary,
               a.required_criteria, l.category, l.no_model_error, a.context_note, l.analysed_at
        FROM failure_labels l
        JOIN analyses a ON a.run_id = l.run_id AND a.instance_id = l.instance_id
                       AND a.train_trial_index = l.train_trial_index AND a.analyst = l.analyst
                       AND a.created_at = l.analysed_at
        WHERE l.analyst = ?
        QUALIFY row_number() OVER (PARTITION BY l.run_id, l.instance_id, l.train_trial_index) = 1
        """,
        [analyst],
    ).fetchall()
    keys = ("error_title", "error_summary", "required_criteria", "category", "no_model_error", "context_note", "analysed_at")
    out = {}
    for r in rows:
        rec = dict(zip(keys, r[3:]))
        rec["required_criteria"] = json.loads(rec["required_criteria"]) if rec["required_criteria"] else []
        out[(r[0], r[1], r[2])] = rec
    return out


def verdicts_of(con: duckdb.DuckDBPyConnection, analyst: str, verifier: str, prompt_version: str) -> dict[tuple, tuple[bool, str | None]]:
    """(run_id, instance_id, train_trial_index, analysed_at) → (accepted, reason): the latest
    verdict of `verifier` on each analysis of `analyst` it judged."""
    rows = con.execute(
        """
        SELECT run_id, instance_id, train_trial_index, analysed_at, accepted, reason FROM verifications
        WHERE analyst = ? AND verifier = ? AND prompt_version = ?
        QUALIFY row_number() OVER (
            PARTITION BY run_id, instance_id, train_trial_index, analysed_at ORDER BY created_at DESC) = 1
        """,
        [analyst, verifier, prompt_version],
    ).fetchall()
    return {(r[0], r[1], r[2], r[3]): (bool(r[4]), r[5]) for r in rows}


def question_verdicts(con: duckdb.DuckDBPyConnection, dataset: str, instance_id: str, analyst: str) -> list[dict]:
    """Verdicts on the analyst's current analyses of one question (its failures in every run),
    latest per verifier: run_id, train_trial_index, verifier, accepted, reason."""
    rows = con.execute(
        """
        SELECT v.run_id, v.train_trial_index, v.verifier, v.accepted, v.reason
        FROM verifications v
        JOIN failure_labels l ON l.run_id = v.run_id AND l.instance_id = v.instance_id
                             AND l.train_trial_index = v.train_trial_index AND l.analyst = v.analyst
                             AND l.analysed_at = v.analysed_at
        JOIN runs r ON r.run_id = v.run_id
        WHERE r.dataset = ? AND v.instance_id = ? AND v.analyst = ?
        QUALIFY row_number() OVER (
            PARTITION BY v.run_id, v.train_trial_index, v.verifier ORDER BY v.created_at DESC) = 1
        ORDER BY v.run_id, v.train_trial_index, v.verifier
        """,
        [dataset, instance_id, analyst],
    ).fetchall()
    return [dict(zip(("run_id", "train_trial_index", "verifier", "accepted", "reason"), r)) for r in rows]
# answers cut off at max_tokens are kept apart (cut_off_answers): they are not served as answers
_COMPLETE = "finish_reason IS DISTINCT FROM 'length'"


def cached_responses(con: duckdb.DuckDBPyConnection, keys: Iterable[str]) -> dict[str, str]:
    keys = list(dict.fromkeys(keys))
    out: dict[str, str] = {}
    for start in range(0, len(keys), 1000):
        chunk = keys[start : start + 1000]
        out.update(
            con.execute(
                f"SELECT cache_key, response_text FROM llm_cache WHERE cache_key IN ({_marks(len(chunk))}) AND {_COMPLETE}",
                chunk,
            ).fetchall()
        )
    return out


def cached_for_prompt(con: duckdb.DuckDBPyConnection, model: str, prompt_version: str) -> dict[str, str]:
    """Every cached response of one model for one prompt version (stage 3 has few, small ones)."""
    return dict(
        con.execute(
            f"SELECT cache_key, response_text FROM llm_cache WHERE model = ? AND prompt_version = ? AND {_COMPLETE}",
            [model, prompt_version],
        ).fetchall()
    )


def cut_off_answers(con: duckdb.DuckDBPyConnection, model: str, prompt_version: str) -> dict[str, int | None]:
    """cache key → completion tokens of the answers of one model and prompt version that were
    cut off at max_tokens (paid for, but not an answer)."""
    return dict(con.execute(
        "SELECT cache_key, completion_tokens FROM llm_cache WHERE model = ? AND prompt_version = ? "
        "AND finish_reason = 'length'", [model, prompt_version]).fetchall())


def classifications_of(con: duckdb.DuckDBPyConnection, taxonomy_version: str, classifier: str) -> dict[str, tuple[str, bool]]:
    """error_title → (category, is_fallback), latest per title for this taxonomy and classifier."""
    rows = con.execute(
        """
        SELECT error_title, category, is_fallback FROM classifications
        WHERE taxonomy_version = ? AND classifier = ?
        QUALIFY row_number() OVER (PARTITION BY error_title ORDER BY created_at DESC) = 1
        """,
        [taxonomy_version, classifier],
    ).fetchall()
    return {r[0]: (r[1], bool(r[2])) for r in rows}


def recorded_taxonomy(con: duckdb.DuckDBPyConnection, version: str) -> str | None:
    """The categories JSON stored for a taxonomy version, or None when it was never used."""
    row = next(iter(con.execute("SELECT categories FROM taxonomies WHERE taxonomy_version = ?", [version]).fetchall()), None)
    return row[0] if row else None


def record_taxonomy(con: duckdb.DuckDBPyConnection, version: str, name: str, source: str, categories_json: str) -> None:
    with transaction(con):
        con.execute(
            insert_row("taxonomies", TAXONOMY_COLUMNS) + " ON CONFLICT DO NOTHING",
            [version, name, source, categories_json, now()],
        )


@dataclass
class Batch:
    """Rows that become durable together: a response's cache row with the results it produced."""

    # the rows as core.schema declares their columns: LLM_CACHE_COLUMNS (finish_reason may be left
    # off), LLM_CALL_COLUMNS, ANALYSIS_COLUMNS (+ ANALYSIS_STEP_COLUMNS for a transcript's),
    # CLASSIFICATION_COLUMNS and VERIFICATION_COLUMNS, each in that order
    cache: list[tuple] = field(default_factory=list)
    calls: list[tuple] = field(default_factory=list)
    analyses: list[tuple] = field(default_factory=list)
    classifications: list[tuple] = field(default_factory=list)
    verifications: list[tuple] = field(default_factory=list)

    def extend(self, other: "Batch") -> None:
        self.cache += other.cache
        self.calls += other.calls
        self.analyses += other.analyses
        self.classifications += other.classifications
        self.verifications += other.verifications

    def __bool__(self) -> bool:
        return bool(self.cache or self.calls or self.analyses or self.classifications or self.verifications)


# The label of an analysis that found no model error: outside every taxonomy, never an error type.
NO_MODEL_ERROR = "No Model Error"


def _insert(con: duckdb.DuckDBPyConnection, head: str, rows: list[tuple], tail: str = "") -> None:
    """One multi-row INSERT (executemany runs a statement per row, ~10x slower here)."""
    for start in range(0, len(rows), 500):
        chunk = rows[start : start + 500]
        row_marks = f"({_marks(len(chunk[0]))})"
        params = [v for row in chunk for v in row]
        con.execute(f"{head} VALUES {', '.join([row_marks] * len(chunk))} {tail}", params)


def save_batch(con: duckdb.DuckDBPyConnection, batch: Batch) -> None:
    """Insert everything in one transaction."""
    with transaction(con):
        _insert_batch(con, batch, now())


def save_recovered(con: duckdb.DuckDBPyConnection, batch: Batch) -> int:
    """Store cache and call rows journaled by an earlier run, skipping those already stored (the
    journal may outlive their commit). A call is identified by its model, time and latency.
    Returns how many answers were not in the store yet."""
    with transaction(con):
        keys = list({r[0] for r in batch.cache})
        stored: set[tuple] = set()
        for start in range(0, len(keys), 1000):
            chunk = keys[start : start + 1000]
            stored |= set(con.execute(
                f"SELECT cache_key, response_text FROM llm_cache WHERE cache_key IN ({_marks(len(chunk))})", chunk
            ).fetchall())
        cache = [r for r in batch.cache if (r[0], r[3]) not in stored]
        calls = batch.calls
        if calls:
            times = [c[-1] for c in calls]
            seen = set(con.execute(
                "SELECT model, created_at, latency_ms FROM llm_calls WHERE created_at BETWEEN ? AND ?",
                [min(times), max(times)],
            ).fetchall())
            calls = [c for c in calls if (c[1], c[-1], c[9]) not in seen]
        _insert_batch(con, Batch(cache=cache, calls=calls), now())
    return len({r[0] for r in cache})


def _columns(*names: str) -> str:
    return f"({', '.join(names)})"


def _insert_batch(con: duckdb.DuckDBPyConnection, batch: Batch, ts: datetime) -> None:
    # a key already present holds an answer the current validation rejected (else it would
    # have been served from the cache): the new, valid answer replaces it
    # a cache row may leave off its last column, the finish reason (given only for an answer cut
    # off at max_tokens)
    width = len(LLM_CACHE_COLUMNS)
    _insert(
        con, f"INSERT INTO llm_cache {_columns(*LLM_CACHE_COLUMNS, 'created_at')}",
        [(*row, *[None] * (width - len(row)), ts) for row in {r[0]: r for r in batch.cache}.values()],
        "ON CONFLICT (cache_key) DO UPDATE SET response_text = EXCLUDED.response_text, "
        "prompt_tokens = EXCLUDED.prompt_tokens, completion_tokens = EXCLUDED.completion_tokens, "
        "finish_reason = EXCLUDED.finish_reason, created_at = EXCLUDED.created_at",
    )
    # a call row carries its own time (when its answer or error arrived), so that a journaled
    # call can be recognised once stored
    _insert(con, f"INSERT INTO llm_calls {_columns(*LLM_CALL_COLUMNS)}", batch.calls)
    width = len(ANALYSIS_COLUMNS) + len(ANALYSIS_STEP_COLUMNS)
    _insert(con, f"INSERT INTO analyses {_columns(*ANALYSIS_COLUMNS, *ANALYSIS_STEP_COLUMNS, 'created_at')}",
            [(*row, *[None] * (width - len(row)), ts) for row in batch.analyses])
    _insert(con, f"INSERT INTO classifications {_columns(*CLASSIFICATION_COLUMNS, 'created_at')}",
            [(*row, ts) for row in batch.classifications])
    _insert(con, f"INSERT INTO verifications {_columns(*VERIFICATION_COLUMNS, 'created_at')}",
            [(*row, ts) for row in batch.verifications])
    if batch.analyses or batch.classifications:
        refresh_labels(con, [row[:4] for row in batch.analyses], [row[0] for row in batch.classifications])


# The label rule: per analysed prediction and analyst, its latest analysis, and the category the
# analysis chose itself (a transcript's, migration 021) or else the classification of its title by
# the analyst's own classifier (the offline analyst: an offline classifier) when there is one, else
# the title's latest classification. An analysis that found no model error is labelled
# NO_MODEL_ERROR whatever its title's classification. `{keys}` narrows the analyses to the
# (run_id, instance_id, train_trial_index, analyst) keys being refreshed.
_LABELS = f"""
    INSERT INTO failure_labels {_columns(*FAILURE_LABEL_COLUMNS)}
    SELECT * FROM (
        WITH latest_analysis AS (
            SELECT a.* FROM analyses a {{keys}}
            QUALIFY row_number() OVER (
                PARTITION BY a.run_id, a.instance_id, a.train_trial_index, a.analyst
                ORDER BY a.created_at DESC) = 1
        ),
        title_class AS (
            SELECT t.error_title, t.analyst, c.category, c.taxonomy_version, c.classifier
            FROM (SELECT DISTINCT error_title, analyst FROM latest_analysis) t
            JOIN classifications c ON c.error_title = t.error_title
            QUALIFY row_number() OVER (
                PARTITION BY t.error_title, t.analyst
                ORDER BY (c.classifier = t.analyst
                          OR (t.analyst = 'offline' AND c.classifier LIKE 'offline/%')) DESC,
                         c.created_at DESC) = 1
        )
        SELECT a.run_id, a.instance_id, a.train_trial_index, a.analyst, a.error_title,
               a.error_summary, a.created_at AS analysed_at,
               CASE WHEN a.no_model_error IS NOT NULL THEN '{NO_MODEL_ERROR}'
                    WHEN a.category IS NOT NULL THEN a.category ELSE t.category END,
               CASE WHEN a.category IS NOT NULL THEN a.taxonomy_version ELSE t.taxonomy_version END,
               CASE WHEN a.category IS NOT NULL THEN a.analyst ELSE t.classifier END, a.no_model_error
        FROM latest_analysis a
        LEFT JOIN title_class t ON t.error_title = a.error_title AND t.analyst = a.analyst
    )
"""
_KEY = ("run_id", "instance_id", "train_trial_index", "analyst")


def refresh_labels(con: duckdb.DuckDBPyConnection, analysed: Sequence[tuple] | None = None,
                   titles: Sequence[str] = ()) -> None:
    """Bring `failure_labels` up to date after analyses or classifications were written (call
    inside that transaction): the labels of the `analysed` (run_id, instance_id,
    train_trial_index, analyst) keys and of every failure whose title is in `titles`; with
    `analysed=None`, every label."""
    if analysed is None:
        con.execute("DELETE FROM failure_labels")
        con.execute(_LABELS.format(keys=""))
        refresh_latest_labels(con)
        return
    columns = list(zip(*analysed)) if analysed else [[], [], [], []]
    con.register("_analysed", pa.table(
        {c: pa.array(v, pa.int32() if c == "train_trial_index" else pa.string())
         for c, v in zip(_KEY, columns)}))
    try:
        con.execute(
            "CREATE OR REPLACE TEMP TABLE _label_keys AS SELECT * FROM _analysed UNION "
            f"SELECT {', '.join(_KEY)} FROM failure_labels WHERE error_title IN (SELECT unnest(?::VARCHAR[]))",
            [list(titles)],
        )
    finally:
        con.unregister("_analysed")
    try:
        on = " AND ".join(f"{{t}}.{c} = k.{c}" for c in _KEY)
        con.execute(f"DELETE FROM failure_labels USING _label_keys k WHERE {on.format(t='failure_labels')}")
        con.execute(_LABELS.format(keys=f"JOIN _label_keys k ON {on.format(t='a')}"))
        refresh_latest_labels(con, "_label_keys")
    finally:
        con.execute("DROP TABLE _label_keys")


# The label of each failed latest outcome, per analyst (migration 014); `{keys}` narrows it.
_LATEST_LABELS = f"""
    INSERT INTO latest_labels {_columns(*LATEST_LABEL_COLUMNS)}
    SELECT o.model, o.model_name, o.dataset, o.domain, o.split, o.is_main_split, o.instance_id,
           o.run_id, o.train_trial_index, f.analyst, f.error_title, f.category, f.taxonomy_version,
           f.classifier, o.score
    FROM latest_outcomes o
    JOIN failure_labels f ON f.run_id = o.run_id AND f.instance_id = o.instance_id
                         AND f.train_trial_index = o.train_trial_index
    {{keys}}
    WHERE NOT o.is_correct
    ORDER BY o.model, o.dataset
"""


def refresh_latest_labels(con: duckdb.DuckDBPyConnection, keys: str | None = None,
                          groups: str | None = None) -> None:
    """Bring `latest_labels` up to date (call inside the transaction that changed the labels or
    the latest outcomes): for the labels whose (run_id, instance_id, train_trial_index, analyst)
    are in the relation `keys`, or the outcomes of the (model, dataset) groups in the relation
    `groups`, or else all of it. Relation names come from the callers' code, never input."""
    if keys is not None:
        on = " AND ".join(f"{{t}}.{c} = k.{c}" for c in _KEY)
        con.execute(f"DELETE FROM latest_labels USING {keys} k WHERE {on.format(t='latest_labels')}")
        con.execute(_LATEST_LABELS.format(keys=f"JOIN {keys} k ON {on.format(t='f')}"))
    elif groups is not None:
        con.execute(f"DELETE FROM latest_labels USING {groups} g "
                    "WHERE latest_labels.model_name = g.model AND latest_labels.dataset = g.dataset")
        con.execute(_LATEST_LABELS.format(keys=f"JOIN {groups} g ON g.model = o.model_name AND g.dataset = o.dataset"))
    else:
        con.execute("DELETE FROM latest_labels")
        con.execute(_LATEST_LABELS.format(keys=""))
