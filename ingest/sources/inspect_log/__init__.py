"""Inspect AI logs: `.eval` zips (header.json + samples/<id>_epoch_<n>.json) or `.json` EvalLogs.

One run per log. Instance ids are the sample ids as text; epochs become trial indexes. The
score that decides pass/fail is the user's `--main-metric`, else the first score the log's
results report, else the first scorer a sample has; a dict-valued scorer is reported by Inspect
per field (`_Judged`). Score values map to numbers as Inspect's own `value_to_float` does (so a
run's mean score is the `accuracy` its header reports, which is checked): C=1, P=0.5, I=0, N (no
answer)=0, yes/true=1, no/false=0, numeric text as the number. Any other value (text Inspect
would warn about and count as 0, a dict, a list) refuses the ingest with what to do, never 0.
Letters and booleans are on a 0–1 scale, so partial credit fails the analysis threshold unless a
threshold says otherwise; booleans decide directly; numeric scorers are on 0–1 when the header
reports their accuracy, else on the registry's scale for the scorer, else the user's --scale.
Task arguments, the solver plan and `eval.created` say what the run is one of (`_identity_settings`).
Logs in format version 1 and logs an R writer boxed into one-element lists are read too
(`_normalized`). A sample with an error is an infrastructure failure.
Cancelled or errored runs keep the samples they have, and `runs.status` says so.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from pydantic import ValidationError

from core.errors import Ask, SettingsNeeded
from core.names import canonical_dataset, question_hash
from core.numbers import number_or_none, whole_or_none
from core.records import (
    InstanceRecord,
    JudgeNote,
    ParsedRun,
    PredictionRecord,
    Reference,
    RunRecord,
    Skipped,
)
from core.times import log_time
from core.verdicts import (
    HarnessAggregate,
    PassRule,
    Scale,
    agreement,
    flag,
    is_finite,
    make_rule,
    unreadable,
)

from ... import clusters, files
from ...errors import IngestError, read_each
from ...evidence import common, judge_score, positive_int, render_messages, system_text
from ...jsonio import expect, load_json, parse_json
from ...limits import ArchiveReader, Limits
from ...options import ReadOptions
from ...source import Source
from ...transcript import Transcript
from ...walk import matching_files
from .steps import ignored_note, sample_steps
from .stream import STREAM_MEMBER_BYTES, stream_sample

FORMAT = "inspect"
LETTER_VALUES = {"C": 1.0, "P": 0.5, "I": 0.0, "N": 0.0}
WORD_VALUES = {"yes": 1.0, "true": 1.0, "no": 0.0, "false": 0.0}
ATTACHMENT = "attachment://"
READ_FIELDS = ("id", "epoch", "input", "target", "choices", "output", "scores", "metadata", "error", "messages")
SAMPLE_NAME = re.compile(r"^samples/(?P<id>.+)_epoch_(?P<epoch>\d+)\.json$")


def looks_like(path: Path) -> bool:
    return bool(matching_files(path, _is_log_file))


def _is_log_file(path: Path) -> bool:
    # .eval is Inspect's own suffix: claim it even when the zip is broken, so the error says why
    if path.suffix.lower() == ".eval":
        return True
    if path.suffix.lower() != ".json":
        return False
    head = (files.head(path, 2048) or b"").decode("utf-8", errors="replace")
    return head.lstrip().startswith("{") and '"eval"' in head and '"status"' in head


def _log_files(path: Path) -> list[Path]:
    return matching_files(path, _is_log_file)


def count_runs(path: Path) -> int:
    return len(_log_files(path)) if path.is_dir() else 1


def read(path: Path, options: ReadOptions) -> Iterator[ParsedRun | Skipped]:
    files = _log_files(path) if path.is_dir() else [path]
    if not files:
        raise IngestError(f"{path}: no Inspect .eval or .json log here")
    for log_file in files:
        try:
            yield from read_each([log_file], lambda f: [read_log(f, options)], "Inspect log")
        except IngestError as exc:
            # a log of a folder that cannot be read does not keep its neighbours out: it is skipped
            # and named with the reason; a named log, or one that needs a flag the load lacks, stops it
            if not path.is_dir() or isinstance(exc, SettingsNeeded):
                raise
            yield Skipped(path=str(log_file), reason=exc.message.removeprefix(f"{log_file}: "))


@dataclass(frozen=True)
class _Log:
    header: dict
    samples: list[tuple[str, dict]]  # (where, sample) for error messages; events and attachments left out
    content_hash: str
    steps: Transcript | None = None  # the samples' transcripts
    ignored: set[str] | None = None  # event types not read as steps


@dataclass(frozen=True)
class _Task:
    """What the log says the run is: its model, dataset and the scorer that decides."""

    model: str
    task: Any
    dataset: str
    dataset_raw: str | None
    judged: "_Judged | None"  # the score the run is judged on
    override: Any
    eval_spec: dict

    @property
    def scorer(self) -> str | None:
        """The main metric as stored: the scorer, or scorer/field."""
        return self.judged.name if self.judged else None


def read_log(path: Path, options: ReadOptions) -> ParsedRun:
    """load → task → instances and predictions → scores → verdict."""
    log, notes = _load(path, options)
    task = _task(log, str(path), options)
    instances, predictions = _instances_and_predictions(log, task, clusters.field_for(options, task.dataset,
                                                                                      task.dataset_raw))
    rule, predictions, n_nonfinite = _scores(log, task, predictions)
    run = _verdict(path, log, task, predictions, rule)
    if note := ignored_note(str(path), log.ignored or ()):
        notes.append(note)
    return ParsedRun(
        run=run, instances=instances, predictions=predictions, n_nonfinite=n_nonfinite, rule=rule,
        notes=notes, steps=log.steps if log.steps is not None and len(log.steps) else None,
    )


def _load(path: Path, options: ReadOptions) -> tuple[_Log, list[str]]:
    """The log's header and samples, in the current layout (notes say what was converted)."""
    log = _read_eval_zip(path, options.limits) if path.suffix.lower() == ".eval" else _read_json_log(path)
    return _normalized(log, str(path))


def _task(log: _Log, where: str, options: ReadOptions) -> _Task:
    eval_spec = expect(log.header.get("eval"), dict, f"{where}: eval")
    task = eval_spec.get("task")
    (model, no_model), (dataset_raw, no_task) = _named(eval_spec, "model"), _named(eval_spec, "task")
    missing = [(problem, flag) for problem, flag, given in ((no_model, "--model NAME", options.model),
                                                            (no_task, "--dataset NAME", options.dataset))
               if problem and not given]
    if missing:
        raise IngestError(f"{where}: {'; '.join(p for p, _ in missing)} (pass {' and '.join(f for _, f in missing)})")
    model = options.model or model
    dataset = options.dataset or canonical_dataset(dataset_raw, options.pass_config.aliases)
    if not log.samples:
        raise IngestError(f"{where}: no samples in the log (was it written with --no-log-samples?)")
    override = options.pass_config.for_dataset(dataset, dataset_raw)
    scorers = {name for _, s in log.samples if isinstance(s.get("scores"), dict) for name in s["scores"]}
    judged = _judged(override.metric or _first_result(log.header, log.samples), log.header, scorers, where)
    if judged and judged.field:
        values = [_Judged(judged.scorer).value(s) for _, s in log.samples]
        fields = sorted({k for v in values if isinstance(v, dict) for k in v})
        if judged.field not in fields:
            raise IngestError(f"{where}: no field {judged.field!r} in the values of scorer {judged.scorer!r} "
                              f"(fields: {', '.join(fields) or 'none, its values are no dicts'})")
    return _Task(model, task, dataset, dataset_raw, judged, override, eval_spec)


def _named(eval_spec: dict, key: str) -> tuple[str | None, str | None]:
    """The log's model or task name, or what is wrong with it. A placeholder without a letter or
    digit ("...", as Inspect's own test logs have) names nothing: said so, never stored as a name."""
    value = eval_spec.get(key)
    if not isinstance(value, str) or not value:
        return None, f"eval.{key} is missing"
    if not any(c.isalnum() for c in value):
        return None, f"eval.{key} is {value!r}, a placeholder, not a name"
    return value, None


def _instances_and_predictions(log: _Log, task: _Task, cluster: str | None = None
                               ) -> tuple[list[InstanceRecord], list[PredictionRecord]]:
    """Each sample's instance (once per id, whatever its epochs) and prediction; `cluster`: the
    metadata field naming the sample's cluster (--cluster)."""
    instances: dict[str, InstanceRecord] = {}
    predictions: list[PredictionRecord] = []
    seen: set[tuple[str, int]] = set()
    for sample_where, sample in log.samples:
        try:
            instance, prediction = _sample(sample, task.judged, sample_where)
        except ValidationError as exc:
            err = exc.errors()[0]
            raise IngestError(f"{sample_where}: {'.'.join(map(str, err['loc']))}: {err['msg']}") from None
        key = (instance.instance_id, prediction.train_trial_index)
        if key in seen:
            raise IngestError(f"{sample_where}: sample {key[0]!r} epoch {key[1] + 1} appears twice")
        seen.add(key)
        if cluster and instance.instance_id not in instances:
            metadata = sample.get("metadata") if isinstance(sample.get("metadata"), dict) else {}
            instance = instance.model_copy(update={"cluster": clusters.value(metadata, cluster, f"{sample_where}: metadata")})
        instances.setdefault(instance.instance_id, instance)
        predictions.append(prediction)
    return list(instances.values()), predictions


def _scores(log: _Log, task: _Task, predictions: list[PredictionRecord]) -> tuple[PassRule, list[PredictionRecord], int]:
    """The pass rule for the scorer's values, and each unjudged prediction judged by it."""
    judged = task.judged
    raw_values = [v for _, s in log.samples if not s.get("error") and (v := judged.value(s)) is not None] if judged else []
    advice, asks = _advice(judged, task.dataset, log) if judged else ("", ())
    rule = make_rule(
        task.scorer, "config" if task.override.metric else "inspect scorer", task.override, lower_is_better=False,
        scale=_value_scale(raw_values), evidence=_accuracy_scale(log.header, judged.result if judged else None),
        unreadable=unreadable(raw_values, advice, _readable, asks) if judged else None,
    )
    n_nonfinite = sum(1 for v in raw_values if _nonfinite(v))
    predictions = [
        p if p.is_correct is not None or p.infra_error else p.model_copy(update={"is_correct": rule.judge(p.score)})
        for p in predictions
    ]
    return rule, predictions, n_nonfinite


def _verdict(path: Path, log: _Log, task: _Task, predictions: list[PredictionRecord], rule: PassRule) -> RunRecord:
    """The run, with the harness's own aggregate checked against the verdicts."""
    scorer, judged, eval_spec, model = task.scorer, task.judged, task.eval_spec, task.model
    scored = [p for p in predictions if not p.infra_error]
    aggregate = _header_aggregate(log.header, judged.result) if judged else None
    # Inspect reports every scorer's own metrics: the judged scorer's accuracy (else mean) is its headline
    harness = agreement(
        aggregate, [p.score for p in scored if p.score is not None], len(scored),
        headline=scorer if aggregate else None, n_errored=len(predictions) - len(scored),
    )
    status = log.header.get("status")
    run_name = f"{task.task}:{model}"
    config = eval_spec.get("config") if isinstance(eval_spec.get("config"), dict) else {}
    settings = {
        "harness": FORMAT, "task": task.task, "task_id": eval_spec.get("task_id"), "run": eval_spec.get("run_id"),
        "epochs": config.get("epochs"), **_identity_settings(eval_spec, log.header),
    }
    run_key = f"{path.resolve()}|{eval_spec.get('task_id')}|{eval_spec.get('run_id')}"
    return RunRecord(
        run_id=hashlib.sha1(f"{FORMAT}|{run_key}".encode()).hexdigest()[:16],
        source_format=FORMAT,
        source_path=str(path.resolve()),
        content_hash=log.content_hash,
        suite=eval_spec.get("run_id"),
        run_name=run_name,
        status="complete" if status in (None, "success") else str(status),
        model=model,
        dataset=task.dataset,
        dataset_raw=task.dataset_raw,
        main_metric=scorer,
        main_metric_source=rule.source if scorer else "none",
        **rule.run_fields(),
        settings={k: v for k, v in settings.items() if v is not None},
        instructions=common(system_text(s.get("messages")) for _, s in log.samples),
        max_tokens=_max_tokens(log.header),
        started_at=log_time(eval_spec.get("created")),
        **harness,
    )


def _value_scale(values: list) -> tuple[float, float, str] | None:
    """0–1 when the scorer speaks Inspect's letters or booleans (C is 1.0, correct); numbers alone
    say nothing of their scale."""
    words = [v for v in values if isinstance(v, bool) or (isinstance(v, str) and not _numeric_text(v) and _readable(v))]
    if not words:
        return None
    return 0.0, 1.0, "binary" if all(v in ("C", "I", True, False) for v in values) else "inspect value_to_float"


def _accuracy_scale(header: dict, scorer: str | None) -> list[Scale]:
    """0–1 when the log reports the scorer's accuracy: Inspect's accuracy() reads each score as a
    0–1 correctness (its mean is the accuracy)."""
    results = header.get("results") if isinstance(header.get("results"), dict) else {}
    for score in results.get("scores") or []:
        metrics = score.get("metrics") if isinstance(score, dict) and score.get("name") == scorer else None
        if isinstance(metrics, dict) and "accuracy" in metrics:
            return [Scale(0.0, 1.0, "inspect accuracy", f"the log's accuracy metric for {scorer} (0–1 correctness)")]
    return []


# ---------------------------------------------------------------- what the run is one of

# Task arguments that shape the prompt (inspect_evals' cot, fewshot, prompt templates); the
# others pick the data (subjects, language, subset, ...).
PROMPT_ARG = re.compile(r"chain_of_thought|(^|_)cot($|_)|few_?shot|shots?($|_)|prompt|template|instruction|system_message")


def _identity_settings(eval_spec: dict, header: dict) -> dict:
    """Which part of the dataset the run answers (`subset`: the task's data arguments) and how
    the model was asked (chain of thought, shots, other prompt arguments, a short hash of the
    solver plan), for store/runs.py `variants` and `reruns`. Reruns of a task differ in their
    task and run ids only."""
    args = eval_spec.get("task_args") if isinstance(eval_spec.get("task_args"), dict) else {}
    out: dict = {}
    data = {k: v for k, v in args.items() if not PROMPT_ARG.search(k.lower())}
    prompt = {k: v for k, v in args.items() if PROMPT_ARG.search(k.lower())}
    if data:
        out["subset"] = data
    for key in list(prompt):
        if re.search(r"chain_of_thought|(^|_)cot($|_)", key.lower()) and isinstance(prompt[key], bool):
            out["chain_of_thought"] = prompt.pop(key)
        elif re.search(r"few_?shot|shots?($|_)", key.lower()) and isinstance(prompt[key], int) and not isinstance(prompt[key], bool):
            out["n_shot"] = prompt.pop(key)
    if prompt:
        out["prompt_args"] = prompt
    plan = header.get("plan") if isinstance(header.get("plan"), dict) else {}
    steps = plan.get("steps")
    if isinstance(steps, list) and steps:
        text = json.dumps(steps, sort_keys=True, default=str)
        out["prompt_template"] = hashlib.sha1(text.encode()).hexdigest()[:8]
    return out


# ---------------------------------------------------------------- evidence beyond the score


def _max_tokens(header: dict) -> int | None:
    """The generation limit of the eval (its model's generate config, else the plan's)."""
    eval_spec = header.get("eval") if isinstance(header.get("eval"), dict) else {}
    plan = header.get("plan") if isinstance(header.get("plan"), dict) else {}
    for config in (eval_spec.get("model_generate_config"), plan.get("config")):
        if isinstance(config, dict) and config.get("max_tokens") is not None:
            return positive_int(config["max_tokens"])
    return None


def _prompt_text(messages: Any) -> str | None:
    """The conversation the model answered: every message before its final answer (the system
    message and the user message as the solvers rendered them, e.g. a multiple-choice template)."""
    if not isinstance(messages, list):
        return None
    last = max((n for n, m in enumerate(messages) if isinstance(m, dict) and m.get("role") == "assistant"), default=len(messages))
    return render_messages(messages[:last])


def _judge_notes(scores: dict, output: str | None) -> list[JudgeNote] | None:
    """Each scorer's value and explanation (left out when it only repeats the output, as the
    choice and match scorers do) and the scalar fields of its metadata."""
    notes = []
    for name, score in scores.items():
        if not isinstance(score, dict):
            continue
        texts = []
        explanation = score.get("explanation")
        if isinstance(explanation, str) and explanation.strip() and explanation.strip() != (output or "").strip():
            texts.append(explanation.strip())
        metadata = score.get("metadata") if isinstance(score.get("metadata"), dict) else {}
        texts += [f"{k}: {v}" for k, v in metadata.items() if isinstance(v, (str, int, float, bool)) and str(v).strip()]
        value = judge_score(score.get("value"))
        if value is not None or texts:
            notes.append(JudgeNote(judge=str(name), score=value, explanation="\n".join(texts) or None))
    return notes or None


def _finish(output: Any) -> tuple[str | None, int | None]:
    """Why generation stopped (Inspect's stop_reason) and the output tokens it used."""
    if not isinstance(output, dict):
        return None, None
    choices = output.get("choices") or []
    reason = choices[0].get("stop_reason") if choices and isinstance(choices[0], dict) else None
    usage = output.get("usage") if isinstance(output.get("usage"), dict) else {}
    return (reason if isinstance(reason, str) and reason != "unknown" else None), positive_int(usage.get("output_tokens"))


def _nonfinite(value: Any) -> bool:
    if isinstance(value, str):
        value = number_or_none(value)
    return isinstance(value, float) and not math.isfinite(value)


def _numeric_text(text: str) -> bool:
    return number_or_none(text) is not None  # ASCII digits only (float() reads "١" too)


def _header_aggregate(header: dict, result: str | None) -> HarnessAggregate | None:
    """The header's accuracy (else mean) for the judged score, and how many samples it counts."""
    results = header.get("results") if isinstance(header.get("results"), dict) else {}
    for score in results.get("scores") or []:
        if not isinstance(score, dict) or result is None or score.get("name") != result:
            continue
        metrics = score.get("metrics") if isinstance(score.get("metrics"), dict) else {}
        for name in ("accuracy", "mean"):
            metric = metrics.get(name)
            value = metric.get("value") if isinstance(metric, dict) else None
            if is_finite(value):
                n = results.get("completed_samples", results.get("total_samples"))
                # logs written by other tools may report a 0–1 scorer's accuracy as a percentage
                return HarnessAggregate(f"{result}/{name}", None, float(value), n if isinstance(n, int) else None,
                                        may_be_percent=True)
    return None


def _read_eval_zip(path: Path, limits: Limits) -> _Log:
    hasher = hashlib.sha256()
    transcript = Transcript()
    ignored: set[str] = set()
    try:
        with os.fdopen(files.open_regular(path, limits), "rb") as handle, zipfile.ZipFile(handle) as archive:
            names = archive.namelist()
            # a log whose run never finished has no header.json, only the journal's start entry
            header_name = "header.json" if "header.json" in names else "_journal/start.json"
            if header_name not in names:
                raise IngestError(f"{path}: not an Inspect log: no header.json in the archive")
            sample_names = sorted((n for n in names if SAMPLE_NAME.match(n)), key=_sample_order)
            streamed = {n for n in sample_names if _streamable(archive.getinfo(n), limits)}
            capped = ArchiveReader(archive, path, limits)
            capped.check_declared([header_name, *(n for n in sample_names if n not in streamed)])
            header = expect(_zip_json(capped, path, header_name, hasher), dict, f"{path}!{header_name}")
            if header_name != "header.json":
                header = {**header, "status": header.get("status", "started")}
            samples = []
            for name in sample_names:
                where = f"{path}!{name}"
                if name in streamed:
                    sample, steps, resolve, lengths, hasher = stream_sample(capped, name, where, hasher, transcript.cap,
                                                                            _kept)
                else:
                    whole = expect(_zip_json(capped, path, name, hasher), dict, where)
                    steps = sample_steps(whole, where, transcript.cap)
                    attachments = whole.get("attachments") if isinstance(whole.get("attachments"), dict) else {}
                    sample, resolve, lengths = _kept(whole), attachments.get, {}
                    del whole
                _emit(transcript, sample, steps, resolve, lengths, where)
                ignored |= steps.ignored
                samples.append((where, _slim(sample, resolve)))
    except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
        raise IngestError(f"{path}: corrupt or truncated .eval archive ({exc})") from None
    except OSError as exc:
        raise IngestError(f"{path}: cannot read: {exc.strerror or exc}") from None
    return _Log(header, samples, hasher.hexdigest(), transcript, ignored)


# A member larger than the entry cap is streamed only when it compresses like a log: real samples
# compress 10–20:1, a zip bomb hundreds or thousands to one (it is then refused by the entry cap).
MAX_STREAMED_RATIO = 100


def _streamable(info: zipfile.ZipInfo, limits: Limits) -> bool:
    if info.file_size <= STREAM_MEMBER_BYTES:
        return False
    return info.file_size <= limits.entry_bytes or info.file_size <= MAX_STREAMED_RATIO * max(info.compress_size, 1)


# The fields of a sample the reader keeps once its steps are taken (its events and attachments never).
KEPT_FIELDS = (*READ_FIELDS, "score", "limit")


def _kept(sample: dict) -> dict:
    return {k: sample[k] for k in KEPT_FIELDS if k in sample}


def _slim(sample: dict, resolve) -> dict:
    """The kept fields with their attachment references resolved; an agent's messages only up to
    its first answer (what it was asked: the prompt and the instructions are read from them; the
    rest is its transcript, kept as steps)."""
    out = {k: _resolve_attachments(v, _Resolver(resolve)) for k, v in sample.items()}
    messages = out.get("messages")
    if isinstance(messages, list) and _is_agent(messages):
        first = next((n for n, m in enumerate(messages) if isinstance(m, dict) and m.get("role") == "assistant"), len(messages))
        out["messages"] = messages[:first]
    return out


def _is_agent(messages: list) -> bool:
    return any(isinstance(m, dict) and (m.get("tool_calls") or m.get("role") == "tool") for m in messages)


class _Resolver(dict):
    """A mapping view of a resolver function, for `_resolve_attachments`."""

    def __init__(self, resolve) -> None:
        super().__init__()
        self._resolve = resolve

    def get(self, key, default=None):
        found = self._resolve(key)
        return default if found is None else found


def _emit(transcript: Transcript, sample: dict, steps, resolve, lengths: dict[str, int], where: str) -> None:
    """The sample's steps into the run's transcript, under its instance id and epoch."""
    raw_id, epoch = sample.get("id"), sample.get("epoch", 1)
    if isinstance(raw_id, list) and len(raw_id) == 1:  # an R writer's boxed id (see _normalized)
        raw_id = raw_id[0]
    if isinstance(epoch, list) and len(epoch) == 1:
        epoch = epoch[0]
    if raw_id is None or isinstance(raw_id, (bool, dict, list)) or not isinstance(epoch, int) or epoch < 1:
        return  # the sample itself is refused, with a message, when it is read
    if steps.single_turn():
        return
    steps.emit(transcript, str(raw_id), epoch - 1, resolve, lengths)


def _sample_order(name: str) -> tuple:
    match = SAMPLE_NAME.match(name)
    sample_id = match["id"]
    # ASCII digits only: "²".isdigit() is True but int("²") raises, and so do 5,000 digits
    number, epoch = whole_or_none(sample_id), whole_or_none(match["epoch"])
    return (0, number, "") if number is not None else (1, 0, sample_id), epoch if epoch is not None else -1


def _zip_json(archive: ArchiveReader, path: Path, name: str, hasher: "hashlib._Hash") -> Any:
    raw = archive.read(name)
    hasher.update(name.encode())
    hasher.update(raw)
    return parse_json(raw, f"{path}!{name}", limit=archive.limits.entry_bytes)


def _read_json_log(path: Path) -> _Log:
    hasher = hashlib.sha256()
    header = expect(load_json(path, hasher), dict, str(path))
    raw_samples = expect(header.pop("samples", None) or [], list, f"{path}: samples")
    transcript = Transcript()
    ignored: set[str] = set()
    samples = []
    for n in range(len(raw_samples)):
        where = f"{path}: samples[{n}]"
        whole = expect(raw_samples[n], dict, where)
        raw_samples[n] = None  # each sample's events are let go once read
        steps = sample_steps(whole, where, transcript.cap)
        attachments = whole.get("attachments") if isinstance(whole.get("attachments"), dict) else {}
        sample = _kept(whole)
        del whole
        _emit(transcript, sample, steps, attachments.get, {}, where)
        ignored |= steps.ignored
        samples.append((where, _slim(sample, attachments.get)))
    return _Log(header, samples, hasher.hexdigest(), transcript, ignored)


def _first_result(header: dict, samples: list[tuple[str, dict]]) -> str | None:
    """The headline: the first score the header's results report, else the first scorer a sample has."""
    for score in _results(header):
        if isinstance(score.get("name"), str):
            return score["name"]
    for _, sample in samples:
        if isinstance(sample.get("scores"), dict) and sample["scores"]:
            return next(iter(sample["scores"]))
    return None


def _results(header: dict) -> list[dict]:
    results = header.get("results") if isinstance(header.get("results"), dict) else {}
    return [s for s in results.get("scores") or [] if isinstance(s, dict)]


@dataclass(frozen=True)
class _Judged:
    """The score a run is judged on: a scorer's value, or one field of a scorer's dict value.
    Inspect reports a dict-valued scorer's metrics per field (an EvalScore named by the field,
    whose `scorer` is the scorer), so a field the header reports is a documented score."""

    scorer: str
    field: str | None = None
    result: str | None = None  # the header's name for it (the field for a documented one)

    @property
    def name(self) -> str:
        """The main metric as stored: the scorer, or scorer/field."""
        return f"{self.scorer}/{self.field}" if self.field else self.scorer

    def value(self, sample: dict) -> Any:
        scores = sample.get("scores") if isinstance(sample.get("scores"), dict) else {}
        score = scores.get(self.scorer)
        value = score.get("value") if isinstance(score, dict) else None
        if self.field is None:
            return value
        return value.get(self.field) if isinstance(value, dict) else value


def _judged(metric: str | None, header: dict, scorers: set[str], where: str) -> _Judged | None:
    """What `metric` (the user's --main-metric, else the headline) names: a scorer of the
    samples, a score the header reports (a dict field, under its scorer), or SCORER/FIELD."""
    if metric is None:
        return None
    if metric in scorers or not scorers:
        return _Judged(metric, result=metric)
    for score in _results(header):
        scorer = score.get("scorer") if isinstance(score.get("scorer"), str) else score.get("name")
        if score.get("name") == metric and scorer in scorers:
            return _Judged(scorer, None if scorer == metric else metric, metric)
    head, _, tail = metric.partition("/")
    if head in scorers and tail:
        return _Judged(head, tail, next((s.get("name") for s in _results(header)
                                         if s.get("scorer") == head and s.get("name") == tail), None))
    fields = sorted({f"{s.get('scorer')}/{s.get('name')}" for s in _results(header)
                     if s.get("scorer") in scorers and s.get("name") != s.get("scorer")})
    also = f"; fields the log reports: {', '.join(fields)}" if fields else ""
    raise IngestError(f"{where}: no scorer {metric!r} in the samples (scorers: {', '.join(sorted(scorers))}{also})")


def _readable(value: Any) -> bool:
    """Whether Inspect's value_to_float reads the value as a score rather than as its fallback 0."""
    return _as_float(value) is not None or _nonfinite(value)


def _advice(judged: _Judged, dataset: str, log: _Log) -> tuple[str, tuple[Ask, ...]]:
    """What to do about a judged score whose values are not numbers, and the flags it asks this load for."""
    example = next((v for _, s in log.samples if not _readable(v := judged.value(s))), None)
    if isinstance(example, dict):
        fields = [k for k, v in example.items() if _readable(v)]
        if fields:
            field = Ask("--main-metric", dataset, f"{judged.scorer}/FIELD")
            return (f"The log reports no metric for a field of {judged.scorer}'s dicts: name the field that holds "
                    f"the score with {field.typed} (fields with numbers: {', '.join(fields)})", (field,))
    numeric = sorted(
        name for name in {n for _, s in log.samples if isinstance(s.get("scores"), dict) for n in s["scores"]}
        if name != judged.scorer and all(_readable(v) for _, s in log.samples
                                         if (v := _Judged(name).value(s)) is not None)
    )
    scorer = Ask("--main-metric", dataset, "NAME")
    other = (f"Judge on another scorer with {scorer.typed} (scorers with numbers here: "
             f"{', '.join(numeric)}), or t" if numeric else "T")
    # the scale goes with a table of the user's own, another load: it is not asked of this one
    return (f"{other}urn its values into numbers in a table of your own (JSONL or CSV, one row per sample) and "
            f"load that with --map score=COLUMN and {flag('--scale', dataset, 'LOW:HIGH')}", (scorer,) if numeric else ())


def _sample(sample: dict, judged: "_Judged | None", where: str) -> tuple[InstanceRecord, PredictionRecord]:
    attachments = sample.get("attachments") if isinstance(sample.get("attachments"), dict) else {}
    # only the fields read: events repeat the whole conversation and are large
    sample = {k: _resolve_attachments(sample.get(k), attachments) for k in READ_FIELDS}
    raw_id = sample.get("id")
    if raw_id is None or isinstance(raw_id, bool):
        raise IngestError(f"{where}: sample has no id")
    instance_id = str(raw_id)
    epoch = sample.get("epoch", 1)
    if not isinstance(epoch, int) or epoch < 1:
        raise IngestError(f"{where}: epoch {epoch!r} is not a positive integer")
    instance = _instance(sample, instance_id, where)
    scores = sample.get("scores") if isinstance(sample.get("scores"), dict) else {}
    metrics = _metrics(scores)
    main = scores.get(judged.scorer) if judged else None
    value = judged.value(sample) if judged else None
    error = sample.get("error")
    output, thinking = _output(sample.get("output"))
    finish_reason, output_tokens = _finish(sample.get("output"))
    prediction = PredictionRecord(
        instance_id=instance_id,
        train_trial_index=epoch - 1,
        output_text=output,
        mapped_output=_text(main.get("answer")) if isinstance(main, dict) else None,
        thinking_text=thinking,
        metrics=metrics,
        annotations=_annotations(scores, sample.get("metadata")),
        score=None if error else _as_float(value),
        is_correct=None if error or not isinstance(value, bool) else value,
        infra_error=bool(error),
        error_message=_error_message(error) if error else None,
        judge_notes=_judge_notes(scores, output),
        finish_reason=finish_reason,
        output_tokens=output_tokens,
    )
    return instance, prediction


def _resolve_attachments(value: Any, attachments: dict) -> Any:
    """Inspect stores long texts once in sample.attachments and refers to them as attachment://<hash>."""
    if isinstance(value, str) and value.startswith(ATTACHMENT):
        return attachments.get(value[len(ATTACHMENT):], value)
    if isinstance(value, list):
        return [_resolve_attachments(v, attachments) for v in value]
    if isinstance(value, dict):
        return {k: _resolve_attachments(v, attachments) for k, v in value.items()}
    return value


def _annotations(scores: dict, metadata: Any) -> dict | None:
    # scorer explanations and sample metadata (e.g. an MMLU subject) help explain a failure
    if not scores and not metadata:
        return None
    return {"scores": scores, "metadata": metadata}


def _instance(sample: dict, instance_id: str, where: str) -> InstanceRecord:
    raw_input = sample.get("input")
    if isinstance(raw_input, str):
        input_text, messages = raw_input, None
    elif isinstance(raw_input, list):
        messages = [m for m in raw_input if isinstance(m, dict)]
        input_text = _last_user_text(messages)
    else:
        raise IngestError(f"{where}: input is neither text nor a list of messages")
    targets = sample.get("target")
    targets = [t for t in (targets if isinstance(targets, list) else [targets]) if isinstance(t, str)]
    choices = sample.get("choices")
    if isinstance(choices, list) and choices and all(isinstance(c, str) for c in choices):
        letters = [chr(ord("A") + i) for i in range(len(choices))]
        choice_map = dict(zip(letters, choices))
        # multiple-choice targets are letters: mark the matching choices as the gold references
        if targets and all(t.strip() in choice_map for t in targets):
            gold = {t.strip() for t in targets}
            refs = [Reference(text=c, correct=letter in gold) for letter, c in choice_map.items()]
        else:
            refs = [Reference(text=t, correct=True) for t in targets]
    else:
        choice_map = None
        refs = [Reference(text=t, correct=True) for t in targets]
    return InstanceRecord(
        instance_id=instance_id,
        raw_instance_id=instance_id,
        input_text=input_text,
        input_messages=messages,
        refs=refs,
        choices=choice_map,
        question_hash=question_hash(input_text),
        prompt_text=_prompt_text(sample.get("messages")),
    )


def _last_user_text(messages: list[dict]) -> str | None:
    for message in reversed(messages):
        if message.get("role") == "user":
            return _content_text(message.get("content"))[0]
    return None


def _content_text(content: Any) -> tuple[str | None, str | None]:
    """(text, reasoning) of a message content: a string or a list of typed parts."""
    if isinstance(content, str):
        return content, None
    if not isinstance(content, list):
        return None, None
    if content and all(isinstance(part, str) for part in content):  # an R writer's boxed string
        return "\n".join(content), None
    texts, reasoning = _parts(content, "text"), _parts(content, "reasoning")
    return ("\n".join(texts) if texts else None), ("\n".join(reasoning) if reasoning else None)


def _parts(content: list, kind: str) -> list[str]:
    """Texts of the content parts of one type; a part of type "text" keeps it under "text", and so on."""
    return [p[kind] for p in content if isinstance(p, dict) and p.get("type") == kind and isinstance(p.get(kind), str)]


def _output(output: Any) -> tuple[str | None, str | None]:
    if not isinstance(output, dict):
        return None, None
    choices = output.get("choices") or []
    message = choices[0].get("message") if choices and isinstance(choices[0], dict) else None
    text, thinking = _content_text(message.get("content")) if isinstance(message, dict) else (None, None)
    # logs before Inspect 0.3.108 have no output.completion
    completion = output.get("completion")
    return (completion if isinstance(completion, str) else text), thinking


def _metrics(scores: dict) -> dict[str, float]:
    """Every scorer's value that reads as a number (a dict value's fields as SCORER/FIELD)."""
    out = {}
    for name, score in scores.items():
        value = score.get("value") if isinstance(score, dict) else None
        items = [(f"{name}/{k}", v) for k, v in value.items()] if isinstance(value, dict) else [(name, value)]
        out.update((key, number) for key, v in items if (number := _as_float(v)) is not None)
    return out


def _as_float(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        number = number_or_none(value)  # None for an int too large for a float
        return number if number is not None and math.isfinite(number) else None
    if isinstance(value, str):
        text = value.strip()
        if text in LETTER_VALUES:
            return LETTER_VALUES[text]
        if text.lower() in WORD_VALUES:
            return WORD_VALUES[text.lower()]
        # Inspect's value_to_float warns and counts any other text as 0; Faultline refuses it
        number = number_or_none(text)
        return number if number is not None and math.isfinite(number) else None
    # a dict (several values) or a list is no one score: the reader asks which field
    return None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _error_message(error: Any) -> str:
    if isinstance(error, dict):
        return str(error.get("message") or error.get("traceback") or "sample failed")
    return str(error)


def _normalized(log: _Log, where: str) -> tuple[_Log, list[str]]:
    """The log in the current layout: scalars an R writer boxed in one-element lists unboxed,
    and format version 1 (inspect_ai ≤ 0.3.9) moved to version 2's places. Notes say what was done."""
    notes: list[str] = []
    header, samples = dict(log.header), [(w, dict(s)) for w, s in log.samples]
    boxed = _unbox_paths(header, HEADER_SCALARS, where)
    for sample_where, sample in samples:
        boxed += _unbox_paths(sample, SAMPLE_SCALARS, sample_where)
    if boxed:
        notes.append(f"{where}: {boxed} value(s) written as one-element lists (an R writer's JSON) read as the values they hold")
    if header.get("version") == 1 or "scorer" in (header.get("results") or {}) or any("score" in s for _, s in samples):
        header, samples = _from_version_1(header, samples, where)
        notes.append(f"{where}: Inspect log format version 1 (inspect_ai 0.3.9 or older): sample.score and results.metrics read as version 2's scores")
    return _Log(header, samples, log.content_hash, log.steps, log.ignored), notes


# Fields Inspect writes as one value; "*" stands for every item of a list or value of a mapping.
HEADER_SCALARS = (
    ("version",), ("status",), ("eval", "task"), ("eval", "model"), ("eval", "task_id"), ("eval", "run_id"),
    ("results", "total_samples"), ("results", "completed_samples"),
    ("results", "scores", "*", "name"), ("results", "scores", "*", "scorer"),
    ("results", "scores", "*", "metrics", "*", "value"),
    ("results", "scorer", "name"), ("results", "metrics", "*", "value"),
)
SAMPLE_SCALARS = (
    ("id",), ("epoch",), ("input",), ("output", "completion"),
    ("scores", "*", "value"), ("scores", "*", "answer"), ("scores", "*", "explanation"),
    ("score", "value"), ("score", "answer"), ("score", "explanation"),
)


def _unbox_paths(obj: dict, paths: tuple[tuple[str, ...], ...], where: str) -> int:
    """Unbox, in place, a one-element list found where Inspect writes one value; how many."""
    return sum(_unbox_path(obj, path, where, path) for path in paths)


def _unbox_path(node: Any, path: tuple[str, ...], where: str, full: tuple[str, ...]) -> int:
    head, rest = path[0], path[1:]
    if head == "*":
        children = list(node.items()) if isinstance(node, dict) else list(enumerate(node)) if isinstance(node, list) else []
    else:
        children = [(head, node[head])] if isinstance(node, dict) and head in node else []
    count = 0
    for key, child in children:
        if rest:
            count += _unbox_path(child, rest, where, full)
            continue
        if isinstance(child, list) and child and all(not isinstance(v, (list, dict)) for v in child):
            if len(child) > 1:
                if head == "input" or (full[-1] == "value" and full[0] in ("scores", "score")):
                    continue  # a list here can be meant (several values); the reader decides
                raise IngestError(f"{where}: {'.'.join(full)}: a list of {len(child)} values where Inspect writes one ({child[:3]!r})")
            node[key] = child[0]
            count += 1
    return count


def _from_version_1(header: dict, samples: list[tuple[str, dict]], where: str) -> tuple[dict, list[tuple[str, dict]]]:
    """Version 1 kept one scorer: `sample.score` and `results.scorer` + `results.metrics`.
    Inspect's own reader moves them to `sample.scores[name]` and `results.scores[0]`; so does this."""
    results = dict(header.get("results") or {})
    scorer = results.pop("scorer", None)
    name = scorer.get("name") if isinstance(scorer, dict) and isinstance(scorer.get("name"), str) else "score"
    metrics = results.pop("metrics", None)
    if "scores" not in results and (scorer is not None or metrics):
        results["scores"] = [{"name": name, "scorer": name, "metrics": metrics if isinstance(metrics, dict) else {}}]
    upgraded = []
    for sample_where, sample in samples:
        if "score" in sample:
            if "scores" in sample:
                raise IngestError(f"{sample_where}: both score (format version 1) and scores (version 2)")
            sample = {**sample, "scores": {name: sample["score"]} if sample["score"] is not None else {}}
            del sample["score"]
        upgraded.append((sample_where, sample))
    return {**header, "results": results}, upgraded


SOURCE = Source(FORMAT, looks_like, read, count_runs,
                "an .eval archive or a .json EvalLog with eval and status keys")
