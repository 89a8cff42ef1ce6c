"""Writing parsed runs: each run replaces any earlier copy of itself, inside the caller's transaction.

Writing a run also settles, for its (model, dataset) group, what readers would otherwise work out
on every page load:
- each run's `variant`: what tells it apart from the model's other runs on the dataset (settings
  that differ, else the part of the log path that differs), so "model · variant" is a model of
  its own everywhere;
- `latest_outcomes`: one scored outcome per (model key, dataset, question), and
  `latest_labels`, the analysts' labels of those that failed.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, fields as dataclass_fields
from datetime import datetime
from typing import TYPE_CHECKING, Iterator

import orjson
import pyarrow as pa

from .analysis import refresh_latest_labels

if TYPE_CHECKING:
    import duckdb

    from ingest.records import ParsedRun

_INSTANCE_COLUMNS = (
    "run_id", "instance_id", "raw_instance_id", "split", "sub_split", "perturbation",
    "input_text", "input_messages", "refs", "choices", "question_hash", "prompt_text",
)
_PREDICTION_COLUMNS = (
    "run_id", "instance_id", "train_trial_index", "output_text", "mapped_output", "thinking_text",
    "metrics", "annotations", "score", "is_correct", "infra_error", "error_message", "output_kind",
    "judge_notes", "finish_reason", "output_tokens", "verdict_note",
)
_RUN_COLUMNS = (
    "run_id", "source_format", "source_path", "content_hash", "suite", "run_name", "model",
    "model_deployment", "model_metadata", "dataset", "domain", "method", "run_groups",
    "main_metric", "main_metric_source", "metric_max", "lower_is_better", "pass_threshold",
    "n_predictions", "n_failures", "n_infra_errors", "record_schema_version", "status",
    "dataset_raw", "scale_source", "main_split", "variant", "settings", "harness_metric",
    "harness_split", "harness_value", "harness_n", "harness_agrees", "harness_note", "instructions",
    "max_tokens", "metric_min", "headline_metric", "verdict_rule", "ingested_at",
)


def _json(value) -> str | None:
    if value is None:
        return None
    return orjson.dumps(value).decode()


@dataclass(frozen=True)
class StagedRun:
    """A parsed run in columnar form: compact to hold, fast to insert."""

    run_id: str
    run_values: list
    instances: pa.Table
    predictions: pa.Table
    n_predictions: int
    n_failures: int
    n_infra_errors: int


def stage_run(parsed: "ParsedRun") -> StagedRun:
    run = parsed.run
    values = run.model_dump()
    values.update(
        model_metadata=_json(run.model_metadata),
        run_groups=_json(run.run_groups),
        settings=_json(run.settings),
        n_predictions=len(parsed.predictions),
        n_failures=parsed.n_failures,
        n_infra_errors=parsed.n_infra_errors,
    )
    rid = run.run_id
    instances = pa.table(
        {
            "run_id": pa.array([rid] * len(parsed.instances), pa.string()),
            "instance_id": pa.array([i.instance_id for i in parsed.instances], pa.string()),
            "raw_instance_id": pa.array([i.raw_instance_id for i in parsed.instances], pa.string()),
            "split": pa.array([i.split for i in parsed.instances], pa.string()),
            "sub_split": pa.array([i.sub_split for i in parsed.instances], pa.string()),
            "perturbation": pa.array([i.perturbation for i in parsed.instances], pa.string()),
            "input_text": pa.array([i.input_text for i in parsed.instances], pa.string()),
            "input_messages": pa.array([_json(i.input_messages) for i in parsed.instances], pa.string()),
            "refs": pa.array(
                [orjson.dumps([{"text": r.text, "correct": r.correct} for r in i.refs]).decode() for i in parsed.instances],
                pa.string(),
            ),
            "choices": pa.array([_json(i.choices) for i in parsed.instances], pa.string()),
            "question_hash": pa.array([i.question_hash for i in parsed.instances], pa.string()),
            "prompt_text": pa.array([i.prompt_text for i in parsed.instances], pa.string()),
        }
    )
    preds = parsed.predictions
    predictions = pa.table(
        {
            "run_id": pa.array([rid] * len(preds), pa.string()),
            "instance_id": pa.array([p.instance_id for p in preds], pa.string()),
            "train_trial_index": pa.array([p.train_trial_index for p in preds], pa.int32()),
            "output_text": pa.array([p.output_text for p in preds], pa.string()),
            "mapped_output": pa.array([p.mapped_output for p in preds], pa.string()),
            "thinking_text": pa.array([p.thinking_text for p in preds], pa.string()),
            "metrics": pa.array([orjson.dumps(p.metrics).decode() for p in preds], pa.string()),
            "annotations": pa.array([_json(p.annotations) for p in preds], pa.string()),
            "score": pa.array([p.score for p in preds], pa.float64()),
            "is_correct": pa.array([p.is_correct for p in preds], pa.bool_()),
            "infra_error": pa.array([p.infra_error for p in preds], pa.bool_()),
            "error_message": pa.array([p.error_message for p in preds], pa.string()),
            "output_kind": pa.array([p.output_kind for p in preds], pa.string()),
            "judge_notes": pa.array(
                [None if p.judge_notes is None else orjson.dumps([n.model_dump() for n in p.judge_notes]).decode()
                 for p in preds],
                pa.string(),
            ),
            "finish_reason": pa.array([p.finish_reason for p in preds], pa.string()),
            "output_tokens": pa.array([p.output_tokens for p in preds], pa.int32()),
            "verdict_note": pa.array([p.verdict_note for p in preds], pa.string()),
        }
    )
    return StagedRun(
        run_id=rid,
        run_values=[values[c] for c in _RUN_COLUMNS[:-1]],
        instances=instances,
        predictions=predictions,
        n_predictions=len(preds),
        n_failures=parsed.n_failures,
        n_infra_errors=parsed.n_infra_errors,
    )


@dataclass(frozen=True)
class LateRule:
    """A run's pass rule decided only once every run of its command was read (a metric scale
    taken from the whole dataset column, ingest/report.py `resolve_pending`): the runs columns
    that say how it is judged (ingest.passfail `PassRule.run_fields`)."""

    run_id: str
    metric_min: float | None
    metric_max: float | None
    lower_is_better: bool
    pass_threshold: float | None
    scale_source: str | None
    verdict_rule: str | None


def run_tables(staged: list[StagedRun]) -> tuple[pa.Table, pa.Table, pa.Table]:
    """These runs' rows of the runs (without ingested_at), instances and predictions tables."""
    runs = pa.table({c: pa.array([s.run_values[i] for s in staged]) for i, c in enumerate(_RUN_COLUMNS[:-1])})
    return (runs, pa.concat_tables([s.instances for s in staged]),
            pa.concat_tables([s.predictions for s in staged]))


def replace_runs(con: "duckdb.DuckDBPyConnection", staged: list[StagedRun],
                 late: list[LateRule] = ()) -> dict[str, tuple[int, int]]:
    """Delete any stored copy of these runs, then insert them (call inside a transaction); see
    `replace_from` for `late` and what is returned.

    One statement per table for the whole batch: per-run statements cost more than the rows.
    """
    if not staged:
        return {}
    runs, instances, predictions = run_tables(staged)
    with (registered(con, "_staged_runs", runs), registered(con, "_staged_instances", instances),
          registered(con, "_staged_predictions", predictions)):
        return replace_from(con, "_staged_runs", "_staged_instances", "_staged_predictions", late)


def replace_from(con: "duckdb.DuckDBPyConnection", runs: str, instances: str, predictions: str,
                 late: list[LateRule] = ()) -> dict[str, tuple[int, int]]:
    """The one way runs enter the store: each replaces any earlier copy of itself, every run of
    one write gets the same `ingested_at`, runs with a `late` rule are judged by it, and the
    touched (model, dataset) groups get their variants and latest outcomes recomputed. The
    first three arguments name relations holding the runs' rows (never input). Returns the
    (judged, failed) counts of each run judged by a late rule."""
    # a replaced run may have belonged to another group: its old siblings need new variants too
    groups = set(con.execute(
        f"SELECT model, dataset FROM runs WHERE run_id IN (SELECT run_id FROM {runs})").fetchall())
    for table in ("predictions", "instances", "runs"):
        con.execute(f"DELETE FROM {table} WHERE run_id IN (SELECT run_id FROM {runs})")
    # every value but ingested_at is the staged one; the write's own time stamps the whole command
    cols = ", ".join(_RUN_COLUMNS[:-1])
    con.execute(f"INSERT INTO runs ({cols}, ingested_at) SELECT {cols}, ? FROM {runs}", [datetime.now()])
    for table, columns, source in (("instances", _INSTANCE_COLUMNS, instances),
                                   ("predictions", _PREDICTION_COLUMNS, predictions)):
        cols = ", ".join(columns)
        con.execute(f"INSERT INTO {table} ({cols}) SELECT {cols} FROM {source}")
    failures = _judge_late(con, late) if late else {}
    groups |= set(con.execute(f"SELECT DISTINCT model, dataset FROM {runs}").fetchall())
    refresh_groups(con, groups)
    return failures


def _judge_late(con: "duckdb.DuckDBPyConnection", late: list[LateRule]) -> dict[str, tuple[int, int]]:
    """Judge the predictions of runs whose rule came late again, as `PassRule.judge` does
    (ingest/passfail.py): pass when the score reaches the threshold (stays at or below it for
    lower-is-better metrics); a failed request and an unscored prediction get no verdict.
    Record the rule on each run; return each run's (judged, failed) counts."""
    fields = [f.name for f in dataclass_fields(LateRule)]
    types = {"run_id": pa.string(), "lower_is_better": pa.bool_(), "scale_source": pa.string(),
             "verdict_rule": pa.string()}
    with registered(con, "_late", pa.table({
        name: pa.array([getattr(r, name) for r in late], types.get(name, pa.float64())) for name in fields
    })):
        con.execute("""
            UPDATE predictions SET is_correct = CASE
                WHEN predictions.infra_error OR r.pass_threshold IS NULL OR NOT isfinite(predictions.score) THEN NULL
                WHEN r.lower_is_better THEN predictions.score <= r.pass_threshold
                ELSE predictions.score >= r.pass_threshold END
            FROM _late r WHERE predictions.run_id = r.run_id
        """)
        counts = con.execute("""
            SELECT r.run_id, count(p.is_correct), count(*) FILTER (WHERE p.is_correct = false)
            FROM _late r LEFT JOIN predictions p USING (run_id) GROUP BY r.run_id
        """).fetchall()
        failed = pa.table({"run_id": pa.array([c[0] for c in counts], pa.string()),
                           "n_failures": pa.array([c[2] for c in counts], pa.int64())})
        with registered(con, "_late_failed", failed):
            con.execute(f"""
                UPDATE runs SET {', '.join(f'{n} = r.{n}' for n in fields[1:])}, n_failures = f.n_failures
                FROM _late r JOIN _late_failed f USING (run_id)
                WHERE runs.run_id = r.run_id
            """)
    return {run_id: (judged, failed) for run_id, judged, failed in counts}


MODEL_KEY_SEPARATOR = " · "


def model_key_sql(alias: str) -> str:
    """SQL for the model as pages and stats select it: its name, plus " · variant" when the run
    has one. `alias` is a table alias from the query text, never input."""
    return (f"CASE WHEN {alias}.variant IS NULL THEN {alias}.model "
            f"ELSE {alias}.model || '{MODEL_KEY_SEPARATOR}' || {alias}.variant END")


_LATEST_INSERT = f"""
    INSERT INTO latest_outcomes (model, model_name, variant, dataset, domain, split, is_main_split,
                                 instance_id, question_hash, run_id, train_trial_index, is_correct, score)
    SELECT {model_key_sql("r")} AS model_key, r.model, r.variant, r.dataset, r.domain, i.split,
           r.main_split IS NULL OR coalesce(i.split = r.main_split, false),
           p.instance_id, i.question_hash, p.run_id, p.train_trial_index, p.is_correct, p.score
    FROM runs r
    JOIN _groups g ON g.model = r.model AND g.dataset = r.dataset
    JOIN predictions p ON p.run_id = r.run_id
    JOIN instances i ON i.run_id = p.run_id AND i.instance_id = p.instance_id
    WHERE p.is_correct IS NOT NULL
    QUALIFY row_number() OVER (
        PARTITION BY model_key, r.dataset, p.instance_id
        ORDER BY r.ingested_at DESC, p.run_id DESC, i.perturbation NULLS FIRST,
                 p.train_trial_index) = 1
    -- stored by model: a query for one model reads only that model's row groups
    ORDER BY model_key, r.dataset
"""


# Latest outcomes are recomputed a batch of groups at a time, each batch holding at most this
# many predictions: the window that picks each question's outcome then needs memory for one
# batch, whatever the size of the write (10,000,000 predictions at once ran out of a 256 MB limit).
LATEST_BATCH_PREDICTIONS = 2_000_000


def refresh_groups(con: "duckdb.DuckDBPyConnection", groups: set[tuple[str, str]]) -> None:
    """Recompute the variants and latest outcomes of these (model, dataset) groups (call inside
    the transaction that changed their runs)."""
    if not groups:
        return
    with registered(con, "_groups", _groups_table(groups)):
        rows = con.execute(
            "SELECT r.run_id, r.model, r.dataset, r.domain, r.settings, r.source_path, r.variant, r.n_predictions"
            " FROM runs r JOIN _groups g ON g.model = r.model AND g.dataset = r.dataset"
        ).fetchall()
    by_group: dict[tuple, list[dict]] = {}
    for run_id, model, dataset, domain, settings, path, old, n in rows:
        by_group.setdefault((model, dataset), []).append(dict(
            run_id=run_id, domain=domain, settings=json.loads(settings) if settings else {},
            source_path=path, old=old, n=n))
    changed = []
    for group in by_group.values():
        new = variants(group)
        changed += [(r["run_id"], new[r["run_id"]]) for r in group if new[r["run_id"]] != r["old"]]
    if changed:
        with registered(con, "_variants", pa.table({"run_id": pa.array([c[0] for c in changed], pa.string()),
                                                    "variant": pa.array([c[1] for c in changed], pa.string())})):
            con.execute("UPDATE runs SET variant = v.variant FROM _variants v WHERE runs.run_id = v.run_id")
    for batch in _batches(sorted(groups), {g: sum(r["n"] for r in runs) for g, runs in by_group.items()}):
        with registered(con, "_groups", _groups_table(batch)):
            con.execute("DELETE FROM latest_outcomes USING _groups g"
                        " WHERE latest_outcomes.model_name = g.model AND latest_outcomes.dataset = g.dataset")
            con.execute(_LATEST_INSERT)
            refresh_latest_labels(con, groups="_groups")


def _groups_table(groups) -> pa.Table:
    models, datasets = zip(*groups)
    return pa.table({"model": pa.array(models, pa.string()), "dataset": pa.array(datasets, pa.string())})


def _batches(groups: list[tuple[str, str]], sizes: dict[tuple[str, str], int]) -> list[list[tuple[str, str]]]:
    """Consecutive groups, up to LATEST_BATCH_PREDICTIONS predictions a batch (a bigger group alone)."""
    out: list[list[tuple[str, str]]] = [[]]
    total = 0
    for group in groups:
        size = sizes.get(group, 0)
        if out[-1] and total + size > LATEST_BATCH_PREDICTIONS:
            out.append([])
            total = 0
        out[-1].append(group)
        total += size
    return out


@contextlib.contextmanager
def registered(con: "duckdb.DuckDBPyConnection", name: str, table) -> Iterator[None]:
    """`table` (Arrow, or anything DuckDB scans) visible to SQL as `name` for the block. When the
    block fails, dropping the name again may fail too (an aborted transaction): the block's own
    error is the one raised."""
    con.register(name, table)
    try:
        yield
    except BaseException:
        with contextlib.suppress(Exception):
            con.unregister(name)
        raise
    con.unregister(name)


def _setting_label(key: str, value) -> str:
    if key in ("n_shot", "num_fewshot") and isinstance(value, int):
        return f"{value}-shot"
    if value is None:
        return f"{key}=none"
    return f"{key}={value if isinstance(value, str) else json.dumps(value, sort_keys=True)}"


def _differing_part(paths: list[str]) -> list[str]:
    """Each path without the folders and file-name tail that all of `paths` share."""
    parts = [p.split("/") for p in paths]
    shortest = min(len(p) for p in parts)
    head = 0
    while head < shortest and len({p[head] for p in parts}) == 1:
        head += 1
    tail = 0
    while tail < shortest - head and len({p[-1 - tail] for p in parts}) == 1:
        tail += 1
    return ["/".join(p[head:len(p) - tail]) or p[-1] for p in parts]


def _add(out: dict, run_id: str, name: str) -> None:
    out[run_id] = name if out[run_id] is None else f"{out[run_id]}, {name}"


def _name_logs(runs: list[dict], out: dict) -> None:
    """Tell apart runs with the same settings that answer the same domain: by the log folder
    that differs (one name for every run of that folder, whatever its domain), else within each
    such domain by the differing part of the path (or run id)."""
    domains = [r["domain"] for r in runs]
    if len(set(domains)) == len(domains):
        return
    folders = [r["source_path"].replace("\\", "/").rsplit("/", 1)[0] for r in runs]
    if len(set(zip(domains, folders))) == len(runs):
        distinct = sorted(set(folders))
        names = dict(zip(distinct, _differing_part(distinct)))
        for r, folder in zip(runs, folders):
            _add(out, r["run_id"], names[folder])
        return
    by_domain: dict[str | None, list[dict]] = {}
    for r in runs:
        by_domain.setdefault(r["domain"], []).append(r)
    for same in by_domain.values():
        if len(same) < 2:
            continue
        paths = [r["source_path"] for r in same]
        keys = paths if len(set(paths)) == len(paths) else [r["run_id"] for r in same]
        for r, name in zip(same, _differing_part(keys)):
            _add(out, r["run_id"], name)


def variants(runs: list[dict]) -> dict[str, str | None]:
    """run_id -> variant for one model's runs on one dataset (each: run_id, domain, settings,
    source_path).

    A lone run has none. Otherwise the settings whose values differ between runs on the same
    domain name each run ("5-shot", "filter=flexible-extract", "suite=v2"); runs still alike on
    a domain (same settings, different logs) add the part of their log's folder that differs,
    else of its path. Runs that only split the dataset into domains (one run per subject) are
    parts of one evaluation, not variants.
    """
    if len(runs) < 2:
        return {r["run_id"]: None for r in runs}
    by_domain: dict[str | None, list[dict]] = {}
    for r in runs:
        by_domain.setdefault(r["domain"], []).append(r)
    keys = sorted({k for r in runs for k in r["settings"]})
    # a setting that only changes from one domain to the next (lm-eval's task per MMLU subject)
    # names a part of the dataset; one that differs between runs on the same domain names a variant
    differing = [k for k in keys if any(
        len({json.dumps(r["settings"].get(k), sort_keys=True) for r in same}) > 1
        for same in by_domain.values())]
    out = {r["run_id"]: ", ".join(_setting_label(k, r["settings"].get(k)) for k in differing) or None
           for r in runs}
    classes: dict[str | None, list[dict]] = {}
    for r in runs:
        classes.setdefault(out[r["run_id"]], []).append(r)
    for same in classes.values():
        _name_logs(same, out)
    return out
