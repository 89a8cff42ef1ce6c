"""lm-evaluation-harness logs: `samples_<task>_<datetime>.jsonl` plus the sibling results file.

One run per (samples file, filter): lm-eval writes each doc once per filter (e.g. gsm8k's
`strict-match` and `flexible-extract`), and each filter is a separate score of the same
generations, so instance ids stay the plain doc_id and pair across models within a filter.
The run's main metric is named like lm-eval's results keys, `<metric>,<filter>`.

The model comes from the results file written at the same datetime (its name does not always
start with `results_`), else the folder name. A task listed under a group in `group_subtasks`
becomes a domain of that group's dataset, and its doc ids are qualified with the task name
because they restart per sub-task.

Pass/fail uses the task's own metric that lm-eval means as pass/fail: from the metrics the rows
(else the task config) list, the first of PREFERRED_METRICS, else the first binary metric the
registry knows (`*_acc`, `*exact_match*`), else the first metric listed; so the pass rate equals
the mean the results file reports for it, which is checked (`harness_*`). Direction comes from
results' `higher_is_better`, scale from the metric registry. Metrics lm-eval only aggregates over
the corpus are stored per doc as `[gold, pred]` pairs; those get a per-doc token F1 (0–1) and are
not compared with the corpus aggregate. NaN and infinite values are unscored and reported.

Loglikelihood tasks never generated text: for multiple choice the output is the choice the model
preferred (output_kind 'chosen option'); for a single continuation (e.g. asdiv) it says whether
the target was the model's greedy continuation, with its log-likelihood (output_kind
'loglikelihood'). References come from the doc when `target` is blank (truthfulqa_gen).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Iterator

from pydantic import ValidationError

from core.errors import Ask
from core.names import canonical_dataset, question_hash
from core.numbers import number_or_none, whole_or_none
from core.records import (
    InstanceRecord,
    ParsedRun,
    PredictionRecord,
    Reference,
    RunRecord,
)
from core.times import log_time
from core.verdicts import (
    HarnessAggregate,
    Unreadable,
    agreement,
    lookup,
    make_rule,
    metric_key,
    unreadable,
)

from .. import clusters, files
from ..errors import IngestError, read_each
from ..evidence import common, positive_int, render_messages, system_text
from ..jsonio import (
    expect,
    json_type,
    load_json,
    parse_json,
    read_bytes,
    read_jsonl,
    try_parse,
)
from ..options import ReadOptions
from ..source import Source
from ..walk import matching_files

FORMAT = "lm-eval"
SAMPLES_RE = re.compile(r"^samples_(?P<task>.+)_(?P<stamp>\d{4}-\d{2}-\d{2}T[0-9.:\-]+)\.jsonl?$")
# Keys of a samples row that are not metrics; newer lm-eval versions add some of the later ones.
ROW_KEYS = {
    "doc_id", "doc", "target", "arguments", "resps", "filtered_resps", "filter", "metrics",
    "doc_hash", "prompt_hash", "target_hash", "task_name", "sample_id",
}
# Doc fields that usually hold the question, for rows without `arguments`.
DOC_TEXT_KEYS = ("question", "problem", "query", "prompt", "input", "text", "sentence")
# Doc fields holding the answers, for tasks whose target is blank (truthfulqa_gen).
DOC_GOLD_KEYS = ("best_answer", "correct_answers", "answer", "answers")
DOC_WRONG_KEYS = ("incorrect_answers",)
# lm-eval's pass/fail metrics, most preferred first; binary per doc, so their mean is a pass rate.
PREFERRED_METRICS = (
    "acc", "exact_match", "em", "bleu_acc", "rouge1_acc", "rouge2_acc", "rougeL_acc", "bleurt_acc",
    "acc_norm", "mc1", "pass@1", "prompt_level_strict_acc",
)
RESULTS_RE = re.compile(r"^(?!samples_).*(?P<stamp>\d{4}-\d{2}-\d{2}T[0-9.:\-]+)\.json$")


def looks_like(path: Path) -> bool:
    return bool(matching_files(path, _is_samples_file))


def _is_samples_file(path: Path) -> bool:
    if not SAMPLES_RE.match(path.name):
        return False
    # a user's own JSONL could be named samples_*: recognise lm-eval rows by their keys
    return b'"doc_id"' in (files.head(path, 4096) or b"")


def _samples_files(path: Path) -> list[Path]:
    """Samples files in the folder or below (lm-eval nests them per model, users per setting)."""
    return matching_files(path, _is_samples_file)


def is_results_file(path: Path) -> bool:
    """An lm-eval aggregate results file (named results_<datetime>.json, or renamed around the datetime)."""
    return bool(RESULTS_RE.match(path.name)) and path.is_file()


def results_have_samples(path: Path) -> bool:
    match = RESULTS_RE.match(path.name)
    return bool(match) and any(
        _is_samples_file(p) for p in path.parent.glob(f"samples_*_{glob_escape(match['stamp'])}.json*")
    )


def glob_escape(text: str) -> str:
    return re.sub(r"([*?\[])", r"[\1]", text)


def count_runs(path: Path) -> int:
    return len(_samples_files(path)) if path.is_dir() else 1


def read(path: Path, options: ReadOptions) -> Iterator[ParsedRun]:
    files = _samples_files(path) if path.is_dir() else [path]
    if not files:
        raise IngestError(f"{path}: no lm-eval samples_<task>_<datetime>.jsonl file here or in the folders below")
    yield from read_each(files, lambda samples: read_samples(samples, options), "lm-eval samples file")


def read_samples(samples: Path, options: ReadOptions) -> Iterator[ParsedRun]:
    match = SAMPLES_RE.match(samples.name)
    if not match:
        raise IngestError(f"{samples}: not an lm-eval samples file (expected samples_<task>_<datetime>.jsonl)")
    task = match["task"]
    hasher = hashlib.sha256()
    results_file = _results_file(samples, match["stamp"])
    results = expect(load_json(results_file, hasher), dict, str(results_file)) if results_file else {}
    rows = _rows(samples, hasher)
    if not rows:
        raise IngestError(f"{samples}: no samples in the file")
    model = options.model or _model(results) or samples.parent.name
    group = _group_of(task, results.get("group_subtasks"))
    dataset_raw = group or task
    dataset = options.dataset or canonical_dataset(dataset_raw, options.pass_config.aliases)
    domain = task if group else None
    by_filter: dict[str, list[tuple[str, dict]]] = {}
    for place, row in rows:
        by_filter.setdefault(str(row.get("filter", "none")), []).append((place, row))
    context = _TaskContext(samples, results, task, model, dataset, dataset_raw, domain, hasher.hexdigest())
    for n, (filter_name, filter_rows) in enumerate(by_filter.items()):
        parsed = _build_run(context, filter_name, filter_rows, options)
        original, effective = context.n_samples()
        if n == 0 and original is not None and effective is not None and effective < original:
            parsed.notes.append(f"{samples}: lm-eval evaluated {effective:,} of {task}'s {original:,} documents "
                                "(--limit): its aggregate, and the pass rate here, are over those")
        yield parsed


def _results_file(samples: Path, stamp: str) -> Path | None:
    """The aggregate results written in the same evaluation, whatever the user renamed it to."""
    candidates = sorted(
        p for p in samples.parent.glob(f"*{stamp}.json")
        if not p.name.startswith("samples_") and p.is_file()
    )
    preferred = [p for p in candidates if p.name.startswith("results_")]
    return (preferred or candidates or [None])[0]


def _rows(samples: Path, hasher: "hashlib._Hash") -> list[tuple[str, dict]]:
    # early lm-eval 0.4 releases wrote one JSON array instead of JSON lines
    if (files.head(samples, 4096) or b"").lstrip().startswith(b"["):
        raw = read_bytes(samples, hasher)
        rows = [(f"sample {n}", row) for n, row in enumerate(expect(parse_json(raw, samples), list, str(samples)))]
        del raw
    else:
        # a line at a time, each bounded (ingest/jsonio.py `read_jsonl`)
        rows = [(str(lineno), row) for lineno, row in read_jsonl(samples, hasher, tell_cut=False)]
    for where, row in rows:
        if not isinstance(row, dict):
            raise IngestError(f"{samples}:{where}: expected a JSON object, found {type(row).__name__}")
        if "doc_id" not in row:
            raise IngestError(f"{samples}:{where}: no doc_id; not an lm-eval sample")
        _check_types(row, f"{samples}:{where}")
    return rows


# The types lm-eval writes for the keys of a sample (lm_eval/evaluator.py, the samples it logs);
# a key of another type is a file of another shape, not a sample to store as unscored.
FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "doc_id": (int, str), "doc": (dict,), "filter": (str,), "arguments": (list, dict), "resps": (list,),
    "filtered_resps": (list,), "metrics": (list,), "doc_hash": (str,), "prompt_hash": (str,),
    "target_hash": (str,),
}
_TYPE_NAMES = {int: "an integer", str: "a string", dict: "an object", list: "an array"}


def _check_types(row: dict, where: str) -> None:
    for key, types in FIELD_TYPES.items():
        if key in row and (not isinstance(row[key], types) or isinstance(row[key], bool)):
            expected = " or ".join(_TYPE_NAMES[t] for t in types)
            raise IngestError(f"{where}: {key} is {json_type(row[key])} ({str(row[key])[:60]!r}); lm-eval writes "
                              f"{expected} there: not an lm-eval sample of the shape Faultline reads")
    for name in row.get("metrics") or []:
        if not isinstance(name, str):
            raise IngestError(f"{where}: metrics lists {json_type(name)} ({name!r}); expected metric names")
        if name in row:
            _check_score(row[name], name, where)


def _check_score(value: Any, metric: str, where: str) -> None:
    """A metric value lm-eval writes: a number, true/false, null, or a [gold, prediction] pair."""
    if value is None or _is_pair(value) or (_number(value) is not None and not isinstance(value, str)):
        return
    if isinstance(value, str):
        # numeric text is lm-eval's own spelling of non-finite values ("Infinity", "NaN"); other
        # text is a value of the right type that is no number: if the run is judged on its
        # metric, the verdict rule refuses it once, per metric, with what to do (passfail.unreadable)
        return
    raise IngestError(f"{where}: {metric} is {json_type(value)} ({str(value)[:60]!r}), not a score "
                      "(a number, true/false, or a [gold, prediction] pair)")


def _model(results: dict) -> str | None:
    config = results.get("config")
    args = config.get("model_args") if isinstance(config, dict) else None
    if isinstance(args, str):  # "pretrained=org/name,dtype=bfloat16"
        args = dict(part.partition("=")[::2] for part in args.split(",") if "=" in part)
    if not isinstance(args, dict):
        args = {}
    # local models name the checkpoint with pretrained=, API models with model=
    for candidate in (args.get("pretrained"), results.get("model_name"), args.get("model")):
        if isinstance(candidate, str) and candidate:
            return candidate
    return None


def _group_of(task: str, group_subtasks: Any) -> str | None:
    """The outermost group containing the task, if any (groups nest, e.g. mmlu > mmlu_stem > task)."""
    if not isinstance(group_subtasks, dict):
        return None
    parents = {
        sub: group
        for group, subs in group_subtasks.items()
        if isinstance(subs, list)
        for sub in subs
        if sub != group
    }
    group = None
    seen = {task}
    current = task
    while current in parents and parents[current] not in seen:
        current = group = parents[current]
        seen.add(current)
    return group


@dataclass(frozen=True)
class _TaskContext:
    samples: Path
    results: dict
    task: str
    model: str
    dataset: str
    dataset_raw: str
    domain: str | None
    content_hash: str

    @property
    def config(self) -> dict:
        configs = self.results.get("configs") or {}
        config = configs.get(self.task) if isinstance(configs, dict) else None
        return config if isinstance(config, dict) else {}

    def lower_is_better(self, metric: str | None) -> bool | None:
        """The results file's word on direction; None when it says nothing (the registry decides)."""
        directions = (self.results.get("higher_is_better") or {}).get(self.task) or {}
        if metric is None or not isinstance(directions.get(metric), bool):
            return None
        return not directions[metric]

    def shots(self) -> int | None:
        shots = (self.results.get("n-shot") or {}).get(self.task)
        if not isinstance(shots, int):
            shots = self.config.get("num_fewshot")
        return shots if isinstance(shots, int) and not isinstance(shots, bool) else None

    def n_shot(self) -> str | None:
        shots = self.shots()
        return f"{shots}-shot" if shots is not None else None

    def config_metrics(self) -> list[str]:
        return [m["metric"] for m in self.config.get("metric_list") or [] if isinstance(m, dict) and isinstance(m.get("metric"), str)]

    def aggregate(self, metric: str, filter_name: str, per_doc_pairs: bool) -> HarnessAggregate | None:
        """The results file's mean of the metric for this task and filter, and its sample count;
        for a task of a group, the group's own aggregate said beside it."""
        values = (self.results.get("results") or {}).get(self.task)
        if not isinstance(values, dict) or f"{metric},{filter_name}" not in values:
            return None
        value = values[f"{metric},{filter_name}"]
        n = self.n_samples()[1]
        if n is None:
            n = values.get("sample_len")  # newer lm-eval writes it beside the metrics, too
        aggregation = next(
            (m.get("aggregation") for m in self.config.get("metric_list") or [] if isinstance(m, dict) and m.get("metric") == metric),
            None,
        )
        why = None
        if per_doc_pairs or (aggregation is not None and aggregation != "mean"):
            why = f"lm-eval aggregates {metric} over the corpus, not as a mean of per-doc scores"
        return HarnessAggregate(
            f"{metric},{filter_name}", self.split, _number(value),
            n if isinstance(n, int) and not isinstance(n, bool) else None, why,
            remark=self.group_aggregate(f"{metric},{filter_name}"),
        )

    def n_samples(self) -> tuple[int | None, int | None]:
        """(original, effective): the task's documents, and how many lm-eval evaluated (fewer
        under --limit); its aggregate counts the effective ones."""
        counts = (self.results.get("n-samples") or {}).get(self.task)
        if not isinstance(counts, dict):
            return None, None
        original, effective = (whole_or_none(counts.get(k)) for k in ("original", "effective"))
        return original, effective if effective is not None else original

    def group_value(self, key: str) -> float | None:
        """lm-eval's own number for the group the task is a part of (its `groups` entry, else its
        `results` entry: the group's row above the " - task" rows), on the same metric and filter."""
        if self.domain is None:
            return None
        for section in ("groups", "results"):
            entry = (self.results.get(section) or {}).get(self.dataset_raw)
            value = _number(entry.get(key)) if isinstance(entry, dict) else None
            if value is not None:
                return value
        return None

    def group_aggregate(self, key: str) -> str | None:
        value = self.group_value(key)
        return None if value is None else f"lm-eval's own {key} for the group {self.dataset_raw} is {value:.6g}"

    @property
    def split(self) -> str | None:
        split = self.config.get("test_split") or self.config.get("validation_split")
        return split if isinstance(split, str) else None


def _build_run(ctx: _TaskContext, filter_name: str, rows: list[tuple[str, dict]], options: ReadOptions) -> ParsedRun:
    override = options.pass_config.for_dataset(ctx.dataset, ctx.dataset_raw)
    metric = override.metric or _main_metric(rows, ctx.config_metrics())
    split = ctx.split
    seen: dict[str, str] = {}
    instances, predictions = [], []
    cluster = clusters.field_for(options, ctx.dataset, ctx.dataset_raw)
    for place, row in rows:
        where = f"{ctx.samples}:{place}"
        raw_id = str(row["doc_id"])
        instance_id = f"{ctx.task}/{raw_id}" if ctx.domain else raw_id
        if instance_id in seen:
            raise IngestError(
                f"{where}: doc {raw_id} with filter {filter_name!r} already at {ctx.samples.name}:{seen[instance_id]}"
            )
        seen[instance_id] = place
        if metric and metric in row:
            _check_score(row[metric], metric, where)
        try:
            instance = _instance(row, instance_id, raw_id, split, ctx.config.get("doc_to_choice"))
            if cluster:
                doc = row.get("doc") if isinstance(row.get("doc"), dict) else {}
                instance = instance.model_copy(update={"cluster": clusters.value(doc, cluster, f"{where}: doc")})
            instances.append(instance)
            predictions.append(_map_letter(_prediction(row, instance_id, metric), instance))
        except ValidationError as exc:
            err = exc.errors()[0]
            raise IngestError(f"{where}: {'.'.join(map(str, err['loc']))}: {err['msg']}") from None
    if metric and all(metric not in row for _, row in rows):
        raise IngestError(f"{ctx.samples}: no metric {metric!r} in the samples (filter {filter_name!r})")
    source = "config" if override.metric else "lm-eval metrics"
    pairs = bool(metric) and any(_is_pair(row.get(metric)) for _, row in rows)
    if pairs:
        source += "; [gold, pred] pairs scored by token F1 per doc (lm-eval aggregates them over the corpus)"
    rule = make_rule(
        metric, source, override, lower_is_better=ctx.lower_is_better(metric),
        scale=(0.0, 1.0, "token F1") if pairs else None,
        unreadable=_unreadable(rows, metric, ctx.dataset) if metric else None,
    )
    n_nonfinite = sum(1 for _, row in rows if metric and _nonfinite(row.get(metric)))
    predictions = [p.model_copy(update={"is_correct": rule.judge(p.score)}) for p in predictions]
    aggregate = ctx.aggregate(metric, filter_name, pairs) if metric else None
    # lm-eval has no one headline per task: each metric under each filter is reported as it is
    harness = agreement(aggregate, [p.score for p in predictions if p.score is not None], len(predictions),
                        headline=aggregate.metric if aggregate else None)
    run_name = ":".join(x for x in (ctx.task, filter_name, ctx.model, ctx.n_shot()) if x)
    settings = {"harness": FORMAT, "task": ctx.task, "filter": filter_name, "n_shot": ctx.shots(),
                # the group's own number (the Overview's harness's number for the group), never recomputed
                "group_aggregate": ctx.group_value(f"{metric},{filter_name}") if metric else None}
    run = RunRecord(
        run_id=hashlib.sha1(f"{FORMAT}|{ctx.samples.resolve()}|{ctx.task}|{filter_name}".encode()).hexdigest()[:16],
        source_format=FORMAT,
        source_path=str(ctx.samples.resolve()),
        content_hash=ctx.content_hash,
        suite=ctx.samples.parent.name,
        run_name=run_name,
        model=ctx.model,
        dataset=ctx.dataset,
        dataset_raw=ctx.dataset_raw,
        domain=ctx.domain,
        method=ctx.n_shot(),
        main_metric=f"{metric},{filter_name}" if metric else None,
        main_metric_source=source if metric else "none",
        **rule.run_fields(),
        main_split=split,
        settings={k: v for k, v in settings.items() if v is not None},
        instructions=_instructions(ctx, instances),
        max_tokens=_max_gen_toks(rows, ctx.config),
        started_at=_started_at(ctx.samples),
        **harness,
    )
    return ParsedRun(run=run, instances=instances, predictions=predictions, n_nonfinite=n_nonfinite, rule=rule)


# ---------------------------------------------------------------- evidence beyond the score


def _prompt_text(row: dict) -> str | None:
    """The prompt lm-eval rendered (description, few-shot examples, question; a chat model's
    messages), from the row's first request."""
    pairs = _argument_pairs(row.get("arguments"))
    context = pairs[0][0] if pairs else None
    if isinstance(context, list):
        context = context[0] if context else None
    if not isinstance(context, str):
        return None
    return render_messages(_chat_messages(context)) or context


def _instructions(ctx: _TaskContext, instances: list[InstanceRecord]) -> str | None:
    """The run's system instruction (lm-eval --system_instruction), the task's description and a
    system message every chat prompt shares."""
    parts = [ctx.results.get("system_instruction"), ctx.config.get("description"),
             common(system_text(i.input_messages) for i in instances)]
    parts = list(dict.fromkeys(p.strip() for p in parts if isinstance(p, str) and p.strip()))
    return "\n\n".join(parts) or None


def _max_gen_toks(rows: list[tuple[str, dict]], config: dict) -> int | None:
    """The generation limit of the requests (max_gen_toks), else of the task config."""
    for _, row in rows[:1]:
        for _, kwargs in _argument_pairs(row.get("arguments")):
            if isinstance(kwargs, dict) and "max_gen_toks" in kwargs:
                return positive_int(kwargs["max_gen_toks"])
    kwargs = config.get("generation_kwargs")
    return positive_int(kwargs.get("max_gen_toks")) if isinstance(kwargs, dict) else None


def _main_metric(rows: list[tuple[str, dict]], config_metrics: list[str]) -> str | None:
    """The task's pass/fail metric: of the metrics the task lists (its rows' `metrics`, else its
    config's metric_list, else every numeric key), the first of PREFERRED_METRICS, else the first
    binary one the registry knows, else the first listed."""
    row = rows[0][1]
    listed = row.get("metrics")
    names = [n for n in listed if isinstance(n, str)] if isinstance(listed, list) else []
    names = names or config_metrics
    candidates = [n for n in names if any(n in r for _, r in rows)]
    if not candidates:
        candidates = [k for k, v in row.items() if k not in ROW_KEYS and (_number(v) is not None or _is_pair(v))]
    if not candidates:
        return None
    for preferred in PREFERRED_METRICS:
        if preferred in candidates:
            return preferred
    binary = [n for n in candidates if (info := lookup(n)) is not None and info.binary]
    return (binary or candidates)[0]


def _started_at(samples: Path) -> datetime | None:
    """When lm-eval wrote the samples: the (local) time stamp in the file name."""
    match = SAMPLES_RE.match(samples.name)
    return log_time(match["stamp"]) if match else None


def _readable(value: Any) -> bool:
    return _number(value) is not None or _is_pair(value)


def _unreadable(rows: list[tuple[str, dict]], metric: str, dataset: str) -> Unreadable | None:
    """The judged metric's values that are neither numbers nor [gold, pred] pairs: refused, never unscored in silence."""
    values = [row[metric] for _, row in rows if row.get(metric) is not None]
    others = sorted({k for _, row in rows[:1] for k, v in row.items()
                     if k != metric and k not in ROW_KEYS and _readable(v)})
    metric_ask = Ask("--main-metric", dataset, "NAME")
    instead = (f"Judge on another metric with {metric_ask.typed} (metrics with numbers in "
               f"these rows: {', '.join(others)})" if others else "No metric of these rows holds numbers")
    return unreadable(values, instead, _readable, (metric_ask,) if others else ())


def _nonfinite(value: Any) -> bool:
    number = _number(value)
    return number is not None and not math.isfinite(number)


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    # ASCII digits only (float() reads "١"); an int too large for a float is no number
    return number_or_none(value)


def _is_pair(value: Any) -> bool:
    return isinstance(value, list) and len(value) == 2


def _score(value: Any) -> float | None:
    """A row's metric value as a stored score; non-finite values (lm-eval's Infinity) are kept out."""
    if _is_pair(value):
        return _token_f1(_first_text(value[0]), _first_text(value[1]))
    number = _number(value)
    return number if number is not None and math.isfinite(number) else None


def _token_f1(gold: str | None, pred: str | None) -> float:
    """SQuAD-style token overlap: a per-doc stand-in for metrics lm-eval only computes over the corpus."""
    gold_tokens, pred_tokens = _tokens(gold), _tokens(pred)
    if not gold_tokens or not pred_tokens:
        return float(gold_tokens == pred_tokens)
    common = sum((Counter(gold_tokens) & Counter(pred_tokens)).values())
    if not common:
        return 0.0
    precision, recall = common / len(pred_tokens), common / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def _tokens(text: str | None) -> list[str]:
    return re.sub(r"[^\w\s]", " ", (text or "").lower()).split()


def _first_text(value: Any) -> str | None:
    while isinstance(value, list) and value:
        value = value[0]
    if value is None or isinstance(value, list):
        return None
    return value if isinstance(value, str) else str(value)


def _metrics(row: dict) -> dict[str, float]:
    out = {}
    for key, value in row.items():
        if key in ROW_KEYS:
            continue
        score = _score(value)
        if score is not None:
            out[key] = score
    return out


def _loglikelihood_choices(row: dict) -> list[str] | None:
    """Continuations of a multiple-choice row, whose responses are [loglikelihood, is_greedy] pairs."""
    filtered = row.get("filtered_resps")
    if not isinstance(filtered, list) or not filtered:
        return None
    if not all(isinstance(r, list) and len(r) == 2 and _number(r[0]) is not None for r in filtered):
        return None
    args = _argument_pairs(row.get("arguments"))
    if len(args) != len(filtered):
        return None
    return [str(cont) for _, cont in args]


def _argument_pairs(arguments: Any) -> list[tuple[Any, Any]]:
    """(context, continuation-or-generation-kwargs) per request, in both argument layouts."""
    if isinstance(arguments, dict):  # newer: {"gen_args_0": {"arg_0": ..., "arg_1": ...}, ...}
        return [
            (a.get("arg_0"), a.get("arg_1")) for _, a in sorted(arguments.items(), key=lambda kv: _arg_index(kv[0]))
            if isinstance(a, dict)
        ]
    if isinstance(arguments, list):  # older: [[context, continuation], ...]
        return [(a[0], a[1] if len(a) > 1 else None) for a in arguments if isinstance(a, list) and a]
    return []


def _arg_index(name: str) -> int:
    index = whole_or_none(name.rsplit("_", 1)[-1])  # "²".isdigit() is True, int("²") raises
    return index if index is not None else 0


def _instance(row: dict, instance_id: str, raw_id: str, split: str | None, doc_to_choice: Any = None) -> InstanceRecord:
    prompt, messages = _input(row)
    choices = _loglikelihood_choices(row)
    if choices and len(choices) < 2:
        choices = None  # one continuation: the target itself, not a choice
    refs = _refs(row.get("target"), choices)
    doc = row.get("doc") if isinstance(row.get("doc"), dict) else {}
    choice_map = {str(i): c.strip() for i, c in enumerate(choices)} if choices else None
    if choices is None and (options := _doc_options(doc, doc_to_choice)):
        gold = _gold_index(row.get("target"), len(options))
        if gold is not None:
            # a generated answer to a multiple-choice question: the gold is an index into the options
            choice_map = options
            refs = [Reference(text=text, correct=i == gold) for i, text in enumerate(options.values())]
    if not any(r.text.strip() for r in refs):
        refs = _doc_refs(doc) or refs
    return InstanceRecord(
        instance_id=instance_id,
        raw_instance_id=raw_id,
        split=split,
        input_text=prompt,
        input_messages=messages,
        refs=refs,
        choices=choice_map,
        question_hash=question_hash(_doc_question(doc) or prompt),
        prompt_text=_prompt_text(row),
    )


DOC_OPTION_KEYS = ("choices", "options")


def _doc_options(doc: dict, doc_to_choice: Any) -> dict[str, str] | None:
    """letter → option text of a multiple-choice doc: `choices`/`options` as a list of texts, or
    ARC's {"text": [...], "label": [...]}; letters from the task's doc_to_choice when it lists
    them (["A", "B", "C", "D"]), else A, B, C, …"""
    for key in DOC_OPTION_KEYS:
        value = doc.get(key)
        if isinstance(value, dict) and isinstance(value.get("text"), list) and isinstance(value.get("label"), list):
            texts, labels = value["text"], value["label"]
        elif isinstance(value, list):
            texts, labels = value, None
        else:
            continue
        if not texts or len(texts) > 26 or not all(isinstance(t, str) for t in texts):
            return None
        if labels is None and isinstance(doc_to_choice, list) and len(doc_to_choice) == len(texts):
            labels = doc_to_choice
        if labels is None or len(labels) != len(texts) or not all(isinstance(x, (str, int)) for x in labels):
            labels = [chr(65 + i) for i in range(len(texts))]
        return {str(label): text.strip() for label, text in zip(labels, texts)}
    return None


def _gold_index(target: Any, n: int) -> int | None:
    """The target as an index into n options (lm-eval logs a multiple-choice target as the
    index, e.g. "3", whatever the model was asked to answer)."""
    if isinstance(target, list) and len(target) == 1:
        target = target[0]
    if isinstance(target, bool):
        return None
    if isinstance(target, str) and whole_or_none(target) is not None:
        target = whole_or_none(target)
    return target if isinstance(target, int) and 0 <= target < n else None


def _map_letter(prediction: PredictionRecord, instance: InstanceRecord) -> PredictionRecord:
    """A generated option letter mapped to its option's text, as HELM's mapped_output does."""
    if not instance.choices or prediction.output_kind is not None:
        return prediction
    answer = (prediction.mapped_output or prediction.output_text or "").strip()
    if answer in instance.choices and answer != instance.choices[answer]:
        return prediction.model_copy(update={"mapped_output": instance.choices[answer]})
    return prediction


def _doc_question(doc: dict) -> str | None:
    """The question as the dataset words it: the same in every harness, unlike the prompt."""
    lowered = {k.lower(): v for k, v in doc.items()}
    return next((lowered[k] for k in DOC_TEXT_KEYS if isinstance(lowered.get(k), str)), None)


def _doc_refs(doc: dict) -> list[Reference]:
    refs: list[Reference] = []
    for keys, correct in ((DOC_GOLD_KEYS, True), (DOC_WRONG_KEYS, False)):
        for key in keys:
            value = doc.get(key)
            for text in value if isinstance(value, list) else [value]:
                if isinstance(text, str) and text.strip() and all(r.text != text for r in refs):
                    refs.append(Reference(text=text, correct=correct))
    return refs


def _input(row: dict) -> tuple[str | None, list[dict] | None]:
    pairs = _argument_pairs(row.get("arguments"))
    context = pairs[0][0] if pairs else None
    if isinstance(context, list):  # chat-completions models get [serialised messages]
        context = context[0] if context else None
    if isinstance(context, str):
        messages = _chat_messages(context)
        if messages:
            return _last_user_text(messages), messages
        return context, None
    doc = row.get("doc")
    if isinstance(doc, dict):
        lowered = {k.lower(): v for k, v in doc.items()}
        for key in DOC_TEXT_KEYS:
            if isinstance(lowered.get(key), str):
                return lowered[key], None
    return None, None


def _chat_messages(text: str) -> list[dict] | None:
    if not text.startswith("[{"):
        return None
    value = try_parse(text)
    if isinstance(value, list) and value and all(isinstance(m, dict) and "role" in m for m in value):
        return value
    return None


def _last_user_text(messages: list[dict]) -> str | None:
    for message in reversed(messages):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                return "\n".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("text"))
            return content if isinstance(content, str) else None
    return None


def _refs(target: Any, choices: list[str] | None) -> list[Reference]:
    targets = target if isinstance(target, list) else [target]
    refs = []
    for t in targets:
        if t is None:
            continue
        # multiple-choice targets are often the index of the right continuation
        if isinstance(t, int) and not isinstance(t, bool) and choices and 0 <= t < len(choices):
            refs.append(Reference(text=choices[t].strip(), correct=True))
        else:
            refs.append(Reference(text=t if isinstance(t, str) else json.dumps(t), correct=True))
    return refs


def _prediction(row: dict, instance_id: str, metric: str | None) -> PredictionRecord:
    choices = _loglikelihood_choices(row)
    kind = None
    if choices and len(choices) == 1:
        # the model only scored the target: there is no text of its own to show
        ll, greedy = row["filtered_resps"][0]
        is_greedy = greedy is True or str(greedy).strip().lower() == "true"
        output = (
            "(loglikelihood task, no generated text: the target "
            f"{'is' if is_greedy else 'is not'} the model's greedy continuation; "
            f"log-likelihood of the target {float(_number(ll)):.4g})"
        )
        mapped, kind = None, "loglikelihood"
    elif choices:
        lls = [float(_number(r[0])) for r in row["filtered_resps"]]
        if metric and metric_key(metric) == "acc_norm":  # lm-eval normalises by the choice's length in characters
            lls = [ll / max(1, len(c)) for ll, c in zip(lls, choices)]
        best = max(range(len(lls)), key=lls.__getitem__)
        output, mapped, kind = choices[best].strip(), None, "chosen option"
    else:
        output, mapped = _first_text(row.get("resps")), _first_text(row.get("filtered_resps"))
    return PredictionRecord(
        instance_id=instance_id,
        output_text=output,
        mapped_output=mapped,
        metrics=_metrics(row),
        score=_score(row.get(metric)) if metric else None,
        output_kind=kind,
    )


SOURCE = Source(
    FORMAT, looks_like, read, count_runs, "samples_<task>_<datetime>.jsonl whose rows have doc_id",
    jsonl_lookalikes=((frozenset({"doc_id", "resps"}), "lm-evaluation-harness samples whose file name is not "
                       "samples_<task>_<datetime>.jsonl; keep lm-eval's name (the model comes from the results "
                       "file beside it)"),),
)
