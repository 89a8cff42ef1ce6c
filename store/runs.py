"""Writing parsed runs: each run replaces any earlier copy of itself, inside the caller's transaction.

Writing a run also settles, for its (model, dataset) group, what readers would otherwise work out
on every page load:
- each run's `variant`: the settings that change what the model was asked and tell it apart from
  the model's other runs on the dataset (`variants`), so "model · variant" is a model of its own
  everywhere;
- each run's `superseded_by`: reruns of one model on one task are trials of one model, and the
  latest counts (`reruns`);
- `latest_outcomes`: one scored outcome per (model key, dataset, question), and
  `latest_labels`, the analysts' labels of those that failed.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from dataclasses import fields as dataclass_fields
from datetime import datetime
from operator import attrgetter
from typing import TYPE_CHECKING, Iterator

import orjson
import pyarrow as pa

from core.passages import passage_clusters
from core.schema import (
    INSTANCE_COLUMNS,
    LATEST_OUTCOME_COLUMNS,
    PREDICTION_COLUMNS,
    RUN_COLUMNS,
    RUN_TYPES,
    TRANSCRIPT_STEPS_SCHEMA,
)
from core.verdicts import judged_sql

from .analysis import refresh_latest_labels

if TYPE_CHECKING:
    import duckdb

    from core.records import ParsedRun

def _json(value) -> str | None:
    if value is None:
        return None
    return orjson.dumps(value).decode()


def _refs_json(refs) -> bytes:
    return orjson.dumps([{"text": r.text, "correct": r.correct} for r in refs])


def _notes_json(notes) -> bytes:
    return orjson.dumps([n.model_dump() for n in notes])


# Record fields stored as JSON text (NULL stays NULL), and the columns that are not text
_INSTANCE_ENCODE = {"input_messages": orjson.dumps, "refs": _refs_json, "choices": orjson.dumps}
_PREDICTION_ENCODE = {"metrics": orjson.dumps, "annotations": orjson.dumps, "judge_notes": _notes_json}
_COLUMN_TYPES = {"train_trial_index": pa.int32(), "output_tokens": pa.int32(), "score": pa.float64(),
                 "is_correct": pa.bool_(), "infra_error": pa.bool_()}


def _table(run_id: str, records: list, columns: tuple[str, ...], encode: dict) -> pa.Table:
    """`records` (instances or predictions) as the Arrow table of their store columns, `run_id`
    first. The records are read in one pass (their fields' values as rows, turned into columns)
    rather than once per column: at 56,600 predictions that pass is most of the cost."""
    fields = columns[1:]
    values = zip(*map(attrgetter(*fields), records)) if records else [()] * len(fields)
    out = {"run_id": pa.array([run_id] * len(records), pa.string())}
    for name, column in zip(fields, values):
        if name in encode:
            to_json = encode[name]
            column = [None if v is None else to_json(v) for v in column]
        out[name] = pa.array(column, _COLUMN_TYPES.get(name, pa.string()))
    return pa.table(out)


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
    steps: pa.Table | None = None  # transcript_steps rows (agent logs), else None

    @property
    def nbytes(self) -> int:
        return self.instances.nbytes + self.predictions.nbytes + (self.steps.nbytes if self.steps is not None else 0)


# formats whose instance input is the question alone (no in-context examples, which every question
# of a few-shot prompt shares): there, a long shared opening is a passage (core/passages.py)
PASSAGE_FORMATS = {"helm"}


def _with_passages(run, instances: pa.Table) -> pa.Table:
    """`instances` with the questions that share a passage clustered, where the format's inputs
    say so and the log gave no cluster."""
    if run.source_format not in PASSAGE_FORMATS or instances.num_rows < 2:
        return instances
    given = instances.column("cluster").to_pylist()
    if any(c is not None for c in given):
        return instances
    ids = instances.column("instance_id").to_pylist()
    inputs: dict = {}
    for qid, text in zip(ids, instances.column("input_text").to_pylist()):
        inputs.setdefault(qid, text)  # a perturbed copy of a question keeps its question's passage
    found = passage_clusters(inputs)
    if not found:
        return instances
    index = instances.schema.get_field_index("cluster")
    return instances.set_column(index, "cluster", pa.array([found.get(q) for q in ids], pa.string()))


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
    preds = parsed.predictions
    instances = _with_passages(run, _table(rid, parsed.instances, INSTANCE_COLUMNS, _INSTANCE_ENCODE))
    predictions = _table(rid, preds, PREDICTION_COLUMNS, _PREDICTION_ENCODE)
    return StagedRun(
        run_id=rid,
        run_values=[values[c] for c in RUN_COLUMNS[:-1]],
        instances=instances,
        predictions=predictions,
        n_predictions=len(preds),
        n_failures=parsed.n_failures,
        n_infra_errors=parsed.n_infra_errors,
        steps=_steps(rid, parsed.steps),
    )


def _steps(run_id: str, transcript) -> pa.Table | None:
    """A run's transcript steps with its run_id first (ingest.transcript.Transcript), or None."""
    if transcript is None or not len(transcript):
        return None
    table = transcript.table()
    return table.add_column(0, "run_id", pa.array([run_id] * table.num_rows, pa.string()))


@dataclass(frozen=True)
class LateRule:
    """A run's pass rule decided only once every run of its command was read (a metric scale
    taken from the whole dataset column, ingest/report.py `resolve_pending`): the runs columns
    that say how it is judged (core.verdicts `PassRule.run_fields`)."""

    run_id: str
    metric_min: float | None
    metric_max: float | None
    lower_is_better: bool
    pass_threshold: float | None
    scale_source: str | None
    verdict_rule: str | None


def run_tables(staged: list[StagedRun]) -> tuple[pa.Table, pa.Table, pa.Table, pa.Table]:
    """These runs' rows of the runs (without ingested_at), instances, predictions and
    transcript_steps tables."""
    runs = pa.table({c: pa.array([s.run_values[i] for s in staged], RUN_TYPES.get(c, pa.string()))
                     for i, c in enumerate(RUN_COLUMNS[:-1])})
    steps = [s.steps for s in staged if s.steps is not None]
    return (runs, pa.concat_tables([s.instances for s in staged]),
            pa.concat_tables([s.predictions for s in staged]),
            pa.concat_tables(steps) if steps else TRANSCRIPT_STEPS_SCHEMA.empty_table())


def replace_runs(con: "duckdb.DuckDBPyConnection", staged: list[StagedRun],
                 late: list[LateRule] = ()) -> dict[str, tuple[int, int]]:
    """Delete any stored copy of these runs, then insert them (call inside a transaction); see
    `replace_from` for `late` and what is returned.

    One statement per table for the whole batch: per-run statements cost more than the rows.
    """
    if not staged:
        return {}
    runs, instances, predictions, steps = run_tables(staged)
    with (registered(con, "_staged_runs", runs), registered(con, "_staged_instances", instances),
          registered(con, "_staged_predictions", predictions), registered(con, "_staged_steps", steps)):
        return replace_from(con, "_staged_runs", "_staged_instances", "_staged_predictions", "_staged_steps", late)


def replace_from(con: "duckdb.DuckDBPyConnection", runs: str, instances: str, predictions: str, steps: str,
                 late: list[LateRule] = ()) -> dict[str, tuple[int, int]]:
    """The one way runs enter the store: each replaces any earlier copy of itself, every run of
    one write gets the same `ingested_at`, runs with a `late` rule are judged by it, and the
    touched (model, dataset) groups get their variants and latest outcomes recomputed. The
    four relations named hold the runs' rows (never input; `steps` their transcript steps). Returns the
    (judged, failed) counts of each run judged by a late rule."""
    # a replaced run may have belonged to another group: its old siblings need new variants too
    groups = set(con.execute(
        f"SELECT model, dataset FROM runs WHERE run_id IN (SELECT run_id FROM {runs})").fetchall())
    for table in ("transcript_steps", "predictions", "instances", "runs"):
        con.execute(f"DELETE FROM {table} WHERE run_id IN (SELECT run_id FROM {runs})")
    # every value but ingested_at is the staged one; the write's own time stamps the whole command
    cols = ", ".join(RUN_COLUMNS[:-1])
    con.execute(f"INSERT INTO runs ({cols}, ingested_at) SELECT {cols}, ? FROM {runs}", [datetime.now()])
    for table, columns, source in (("instances", INSTANCE_COLUMNS, instances),
                                   ("predictions", PREDICTION_COLUMNS, predictions)):
        cols = ", ".join(columns)
        con.execute(f"INSERT INTO {table} ({cols}) SELECT {cols} FROM {source}")
    # in transcript order: a page of one prediction's steps then reads few row groups
    cols = ", ".join(TRANSCRIPT_STEPS_SCHEMA.names)
    con.execute(f"INSERT INTO transcript_steps ({cols}) SELECT {cols} FROM {steps} "
                "ORDER BY run_id, instance_id, train_trial_index, step_index")
    failures = _judge_late(con, late) if late else {}
    groups |= set(con.execute(f"SELECT DISTINCT model, dataset FROM {runs}").fetchall())
    refresh_groups(con, groups)
    return failures


def _judge_late(con: "duckdb.DuckDBPyConnection", late: list[LateRule]) -> dict[str, tuple[int, int]]:
    """Judge the predictions of runs whose rule came late again, as `PassRule.judge` does
    (core/verdicts.py): pass when the score reaches the threshold (stays at or below it for
    lower-is-better metrics); a failed request and an unscored prediction get no verdict.
    Record the rule on each run; return each run's (judged, failed) counts."""
    fields = [f.name for f in dataclass_fields(LateRule)]
    types = {"run_id": pa.string(), "lower_is_better": pa.bool_(), "scale_source": pa.string(),
             "verdict_rule": pa.string()}
    with registered(con, "_late", pa.table({
        name: pa.array([getattr(r, name) for r in late], types.get(name, pa.float64())) for name in fields
    })):
        con.execute(f"""
            UPDATE predictions SET is_correct = {judged_sql("predictions.score", "r.pass_threshold", "r.lower_is_better",
                                                            "predictions.infra_error")}
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


# Which of a model's predictions on a question counts (aliases: runs `r`, predictions `p`,
# instances `i`): the rerun that counts instead of others first (`superseded_by`), then the latest
# ingest, run id, the unperturbed instance, the lowest trial. Every "latest" query orders by this.
LATEST_ORDER = ("r.superseded_by IS NOT NULL, r.ingested_at DESC, p.run_id DESC, i.perturbation NULLS FIRST, "
                "p.train_trial_index")

_LATEST_INSERT = f"""
    INSERT INTO latest_outcomes ({', '.join(LATEST_OUTCOME_COLUMNS)})
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
        ORDER BY {LATEST_ORDER}) = 1
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
    by_group = _group_runs(con, groups)
    _set_identities(con, by_group)
    for batch in _batches(sorted(groups), {g: sum(r["n"] for r in runs) for g, runs in by_group.items()}):
        with registered(con, "_groups", _groups_table(batch)):
            con.execute("DELETE FROM latest_outcomes USING _groups g"
                        " WHERE latest_outcomes.model_name = g.model AND latest_outcomes.dataset = g.dataset")
            con.execute(_LATEST_INSERT)
            refresh_latest_labels(con, groups="_groups")


def _group_runs(con: "duckdb.DuckDBPyConnection", groups: set[tuple[str, str]] | None) -> dict[tuple, list[dict]]:
    """The runs of these (model, dataset) groups (None: of every group), as `variants` and
    `reruns` read them."""
    select = ("SELECT r.run_id, r.model, r.dataset, r.domain, r.settings, r.source_path, r.variant,"
              " r.superseded_by, r.started_at, r.ingested_at, r.n_predictions FROM runs r")
    if groups is None:
        rows = con.execute(select).fetchall()
    else:
        with registered(con, "_groups", _groups_table(groups)):
            rows = con.execute(select + " JOIN _groups g ON g.model = r.model AND g.dataset = r.dataset").fetchall()
    by_group: dict[tuple, list[dict]] = {}
    for run_id, model, dataset, domain, settings, path, variant, superseded, started, ingested, n in rows:
        by_group.setdefault((model, dataset), []).append(dict(
            run_id=run_id, domain=domain, settings=json.loads(settings) if settings else {}, source_path=path,
            old=(variant, superseded), started_at=started, ingested_at=ingested, n=n))
    return by_group


def _set_identities(con: "duckdb.DuckDBPyConnection", by_group: dict[tuple, list[dict]]) -> set[tuple]:
    """Decide each run's variant and the rerun that counts instead of it, store what changed;
    returns the groups where something did."""
    changed, touched = [], set()
    for group, runs in by_group.items():
        named = variants(runs)
        counts_instead = reruns(runs, named)
        for r in runs:
            new = (named[r["run_id"]], counts_instead[r["run_id"]])
            if new != r["old"]:
                changed.append((r["run_id"], *new))
                touched.add(group)
    if changed:
        ids, names, instead = zip(*changed)
        with registered(con, "_identities", pa.table({
            "run_id": pa.array(ids, pa.string()), "variant": pa.array(names, pa.string()),
            "superseded_by": pa.array(instead, pa.string())})):
            con.execute("UPDATE runs SET variant = v.variant, superseded_by = v.superseded_by"
                        " FROM _identities v WHERE runs.run_id = v.run_id")
    return touched


def refresh_identities(con: "duckdb.DuckDBPyConnection") -> None:
    """Decide every run's variant and reruns again (a store upgraded to these rules), and
    recompute the latest outcomes of the groups whose runs changed."""
    refresh_groups(con, _set_identities(con, _group_runs(con, None)))


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


# Settings that change what the model was asked, or how its answer was read: a model's runs on
# a dataset that differ in one of them are variants, each named by that setting alone. Readers
# record them under these names (`runs.settings`); `prompt_args` holds other prompt-shaping
# arguments by their own names (HELM's use_few_shot, an Inspect task's template argument).
VARIANT_SETTINGS = ("harness", "method", "n_shot", "chain_of_thought", "prompt_template", "prompt", "task",
                    "filter", "eval_class", "metric", "prompt_args")
# What part of the dataset a run answers beyond its domain (HELM's scenario arguments, an
# Inspect task's data arguments): runs on different parts are neither variants nor reruns.
SUBSET = "subset"
# Everything else a reader records (suite, run and task ids, epochs, deployment, generation
# config, ...) tells reruns apart, never models.


def _prompt_settings(settings: dict) -> dict:
    """A run's settings that make variants, `prompt_args` spread out under their own names."""
    out = {k: settings[k] for k in VARIANT_SETTINGS if k in settings and k != "prompt_args"}
    args = settings.get("prompt_args")
    if isinstance(args, dict):
        out.update((k, v) for k, v in args.items() if k not in out)
    return out


def _setting_label(key: str, value) -> str:
    if key in ("n_shot", "num_fewshot") and isinstance(value, int) and not isinstance(value, bool):
        return f"{value}-shot"
    if key == "chain_of_thought" and isinstance(value, bool):
        return "chain of thought" if value else "no chain of thought"
    if key == "prompt_template":
        return f"prompt template {value}"
    if value is _UNKNOWN:
        return f"{key} unknown"
    return f"{key}={value if isinstance(value, str) else json.dumps(value, sort_keys=True)}"


_UNKNOWN = object()  # a setting the run's log does not state: not known to differ from any value


def _key(value) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def variants(runs: list[dict]) -> dict[str, str | None]:
    """run_id -> variant for one model's runs on one dataset (each: run_id, domain, settings).

    A variant exists only where a setting that changes what the model was asked, or how its
    answer was read (VARIANT_SETTINGS: shots, chain of thought, prompt template, filter, …),
    differs between runs on the same domain (a HELM run and an lm-eval run of one MMLU subject
    too, whatever else their logs record); each run is then named by those settings alone
    ("5-shot", "filter=flexible-extract"), the same label on every domain. A setting that only
    changes from one domain to the next (lm-eval's task per MMLU subject, HELM's instructions
    per subject or language pair) names a part, not a variant; one a log does not state never
    differs. Runs alike in these settings are one model: reruns (`reruns`)."""
    if len(runs) < 2:
        return {r["run_id"]: None for r in runs}
    prompt = {r["run_id"]: _prompt_settings(r["settings"]) for r in runs}
    parts: dict[tuple, list[dict]] = {}
    for r in runs:
        parts.setdefault(r["domain"], []).append(r)
    keys = sorted({k for p in prompt.values() for k in p},
                  key=lambda k: (VARIANT_SETTINGS.index(k) if k in VARIANT_SETTINGS else len(VARIANT_SETTINGS), k))
    differing = [k for k in keys if any(
        len({_key(prompt[r["run_id"]][k]) for r in same if k in prompt[r["run_id"]]}) > 1 for same in parts.values())]
    if "prompt_template" in differing and not _template_needed(parts, prompt, differing):
        differing.remove("prompt_template")  # a named setting (shots, chain of thought) already says how they differ

    def label(r: dict) -> str | None:
        return ", ".join(_setting_label(k, prompt[r["run_id"]].get(k, _UNKNOWN)) for k in differing) or None

    return {r["run_id"]: label(r) for r in runs}


def _template_needed(parts: dict, prompt: dict[str, dict], differing: list[str]) -> bool:
    """Whether a prompt template tells apart runs on one domain that no other differing setting does."""
    named = [k for k in differing if k != "prompt_template"]
    for same in parts.values():
        templates: dict[str, set] = {}
        for r in same:
            p = prompt[r["run_id"]]
            templates.setdefault(_key([p.get(k) for k in named]), set()).add(_key(p.get("prompt_template")))
        if any(len(t) > 1 for t in templates.values()):
            return True
    return False


def _part(run: dict) -> tuple:
    """The part of the dataset a run answers: its domain and subset (HELM's scenario arguments, a
    MATH subject's level beside its subject)."""
    return run["domain"], _key(run["settings"].get(SUBSET))


def _recency(runs: list[dict]):
    """How reruns are ordered, latest last: by the logs' own times when every one gives its
    time, else by when they were ingested (then the log's time, then the path, to be stable)."""
    timed = all(r.get("started_at") is not None for r in runs)

    def key(r: dict) -> tuple:
        started = r.get("started_at") or datetime.min
        first = started if timed else r.get("ingested_at") or datetime.min
        return first, r.get("ingested_at") or datetime.min, started, r.get("source_path") or "", r["run_id"]

    return key


def reruns(runs: list[dict], named: dict[str, str | None]) -> dict[str, str | None]:
    """run_id -> the run that counts instead of it (None: it counts), for one model's runs on one
    dataset with their variants `named`. Runs on the same part of the dataset under the same
    variant are reruns of one model on one task — trials, not models: the latest counts
    (`_recency`); the others stay in the store, and their answers count only for questions the
    latest did not ask."""
    groups: dict[tuple, list[dict]] = {}
    for r in runs:
        groups.setdefault((*_part(r), named[r["run_id"]]), []).append(r)
    out: dict[str, str | None] = {r["run_id"]: None for r in runs}
    for same in groups.values():
        if len(same) > 1:
            latest = max(same, key=_recency(same))
            out.update((r["run_id"], latest["run_id"]) for r in same if r is not latest)
    return out


@dataclass(frozen=True)
class Collapsed:
    """Reruns of one model on one dataset collapsed into their latest, for the ingest summary
    and the data page: how many runs, how many are earlier reruns, and how the latest was told."""

    model: str
    dataset: str
    runs: int
    superseded: int
    by: str  # "the logs' own times", "ingest time", or "path order" when neither tells


def collapsed_reruns(con: "duckdb.DuckDBPyConnection", run_ids: list[str] | None = None) -> list[Collapsed]:
    """Per model (as pages select it) and dataset, the reruns collapsed into the run that counts,
    among the groups of `run_ids` (None: every group)."""
    scope = ""
    if run_ids is not None:
        scope = (" WHERE (c.model, c.dataset) IN (SELECT model, dataset FROM runs"
                 " WHERE run_id IN (SELECT run_id FROM _written))")
    query = f"""
        SELECT {model_key_sql("c")} AS model, c.dataset, c.run_id,
               count(*) AS superseded,
               bool_and(s.started_at IS NOT NULL) AND c.started_at IS NOT NULL AS timed,
               count(DISTINCT s.ingested_at) FILTER (WHERE s.ingested_at <> c.ingested_at) > 0 AS by_ingest
        FROM runs c JOIN runs s ON s.superseded_by = c.run_id{scope}
        GROUP BY c.run_id, c.model, c.variant, c.dataset, c.started_at, c.ingested_at
    """
    if run_ids is None:
        rows = con.execute(query).fetchall()
    else:
        with registered(con, "_written", pa.table({"run_id": pa.array(run_ids, pa.string())})):
            rows = con.execute(query).fetchall()
    totals: dict[tuple[str, str], list] = {}
    for model, dataset, _, superseded, timed, by_ingest in rows:
        t = totals.setdefault((model, dataset), [0, 0, set()])
        t[0] += superseded + 1
        t[1] += superseded
        t[2].add("the logs' own times" if timed else "ingest time" if by_ingest else "path order")
    return [Collapsed(model, dataset, runs, superseded, " and ".join(sorted(by)))
            for (model, dataset), (runs, superseded, by) in sorted(totals.items())]
