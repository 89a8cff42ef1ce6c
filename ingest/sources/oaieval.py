"""OpenAI evals `oaieval` logs: a JSONL file of a `spec` line, then events, and a `final_report` line.

One run per log. `sampling` and `match` events are paired by `sample_id` (in order, when a sample
has several: those are trials); `raw_sample` events, when present, give the input and the ideal
answer. The model is the spec's `completion_fns` (older logs: `model_name`), `dataset` its
`base_eval` (`eval_name`, e.g. `us-tort-law.dev.v0`, is kept as the raw name), `split` its `split`.
The verdict is the match event's `correct`; a sample with an `error` event and no match is an
infrastructure error. The `final_report` (wherever it is in the file) is the harness's own number:
its `accuracy` is compared with the recomputed pass rate.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Iterator

from core.names import canonical_dataset, question_hash
from core.records import (
    InstanceRecord,
    ParsedRun,
    PredictionRecord,
    Reference,
    RunRecord,
    Skipped,
)
from core.times import log_time
from core.verdicts import HarnessAggregate, agreement

from .. import files
from ..errors import IngestError, read_each
from ..evidence import common, render_messages, system_text
from ..jsonio import expect, load_jsonl, try_parse
from ..options import ReadOptions
from ..source import Source
from ..walk import matching_files

FORMAT = "openai-evals"
HEAD_BYTES = 1 << 20  # a spec line is small; this only bounds a pathological first line
EVENT_KEYS = {"run_id", "event_id", "sample_id", "type", "data"}


def _first_line(path: Path) -> dict | None:
    head = files.head(path, HEAD_BYTES)
    # not this format when it does not parse (deep nesting is reported by the reader that reads it)
    row = try_parse(head.split(b"\n", 1)[0]) if head else None
    return row if isinstance(row, dict) else None


def is_log(path: Path) -> bool:
    """A `{"spec": {... "eval_name" ...}}` first line (oaieval writes it before any event)."""
    row = _first_line(path)
    spec = row.get("spec") if row else None
    return isinstance(spec, dict) and "eval_name" in spec


def is_event_line(row: dict) -> bool:
    return EVENT_KEYS <= set(row)


def _logs(path: Path) -> list[Path]:
    return matching_files(path, is_log)


def looks_like(path: Path) -> bool:
    return bool(_logs(path))


def count_runs(path: Path) -> int:
    return len(_logs(path))


def read(path: Path, options: ReadOptions) -> Iterator[ParsedRun | Skipped]:
    logs = _logs(path) if path.is_dir() else [path]
    if not logs:
        raise IngestError(f"{path}: no OpenAI evals log (a JSONL file starting with a spec line) here")
    yield from read_each(logs, lambda log: [read_log(log, options)], "OpenAI evals log")


def _model(spec: dict) -> str | None:
    fns = spec.get("completion_fns")
    if isinstance(fns, list) and fns and all(isinstance(f, str) for f in fns):
        return ",".join(fns)
    name = spec.get("model_name")
    return name if isinstance(name, str) and name else None


def read_log(path: Path, options: ReadOptions) -> ParsedRun | Skipped:
    hasher = hashlib.sha256()
    rows = load_jsonl(path, hasher)
    spec, report = None, None
    events: dict[str, dict[str, list[tuple[int, dict]]]] = {}
    for lineno, row in rows:
        if "spec" in row:
            spec = expect(row["spec"], dict, f"{path}:{lineno}: spec")
        elif "final_report" in row:
            report = row["final_report"]
        elif is_event_line(row):
            data = expect(row["data"], dict, f"{path}:{lineno}: data")
            sample_id = row["sample_id"]
            if not isinstance(sample_id, (str, int)) or isinstance(sample_id, bool):
                raise IngestError(f"{path}:{lineno}: sample_id {sample_id!r} is not a string")
            events.setdefault(str(sample_id), {}).setdefault(str(row["type"]), []).append((lineno, data))
        else:
            raise IngestError(f"{path}:{lineno}: neither a spec, an event nor a final_report line (keys: {', '.join(sorted(row))})")
    if spec is None:
        raise IngestError(f"{path}: no spec line (oaieval writes it first; is the file cut at the start?)")
    model = options.model or _model(spec)
    if not model:
        raise IngestError(f"{path}: the spec names no model (completion_fns or model_name; pass --model NAME)")
    eval_name = spec.get("eval_name")
    if not isinstance(eval_name, str) or not eval_name:
        raise IngestError(f"{path}: spec.eval_name is missing")
    base_eval = spec.get("base_eval") if isinstance(spec.get("base_eval"), str) else None
    dataset = options.dataset or canonical_dataset(base_eval or eval_name, options.pass_config.aliases)
    split = spec.get("split") if isinstance(spec.get("split"), str) else None
    if not any("match" in by_type for by_type in events.values()):
        kinds = sorted({t for by_type in events.values() for t in by_type})
        return Skipped(
            path=str(path),
            reason=f"no match events (events: {', '.join(kinds) or 'none'}); Faultline reads match-scored evals",
        )
    instances: list[InstanceRecord] = []
    predictions: list[PredictionRecord] = []
    for sample_id, by_type in events.items():
        instance, preds = _sample(path, sample_id, by_type, split)
        instances.append(instance)
        predictions.extend(preds)
    run_config = spec.get("run_config") if isinstance(spec.get("run_config"), dict) else {}
    eval_spec = run_config.get("eval_spec") if isinstance(run_config.get("eval_spec"), dict) else {}
    args = eval_spec.get("args") if isinstance(eval_spec.get("args"), dict) else {}
    settings = {
        "eval_name": eval_name,
        "subset": eval_name,  # base_eval is the dataset; eval_name picks its split and version
        "eval_class": eval_spec.get("cls"),
        "n_shot": args.get("num_few_shot"),
        "max_samples": run_config.get("max_samples"),
        "seed": run_config.get("seed"),
        "harness": "openai-evals",
    }
    judged = [p for p in predictions if p.is_correct is not None]
    accuracy = report.get("accuracy") if isinstance(report, dict) else None
    harness = agreement(
        HarnessAggregate("accuracy", split, float(accuracy), None),
        [float(p.is_correct) for p in judged], sum(1 for p in predictions if not p.infra_error),
    ) if isinstance(accuracy, (int, float)) and not isinstance(accuracy, bool) else {}
    run_key = spec.get("run_id") if isinstance(spec.get("run_id"), str) else str(path.resolve())
    run = RunRecord(
        run_id=hashlib.sha1(f"{FORMAT}|{run_key}".encode()).hexdigest()[:16],
        source_format=FORMAT,
        source_path=str(path.resolve()),
        content_hash=hasher.hexdigest(),
        run_name=f"{eval_name}:{model}",
        model=model,
        dataset=dataset,
        dataset_raw=eval_name,
        main_metric="correct",
        main_metric_source="match event",
        metric_max=1.0,
        lower_is_better=False,
        verdict_rule="the match event's own correct",
        main_split=split,
        settings={k: v for k, v in settings.items() if v is not None},
        status="complete" if report is not None else "started",
        started_at=log_time(spec.get("created_at")),
        instructions=common(system_text(i.input_messages) for i in instances),
        **harness,
    )
    return ParsedRun(run=run, instances=instances, predictions=predictions)


def _text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return value[0]
    return None


def _messages(prompt: Any) -> tuple[str | None, list[dict] | None]:
    """(question text, chat messages) of a sampling prompt: chat messages or a plain completion prompt."""
    if isinstance(prompt, str):
        return prompt, None
    if not isinstance(prompt, list):
        return None, None
    messages = [m for m in prompt if isinstance(m, dict)]
    # few-shot examples are sent as system messages named example_user / example_assistant
    asked = [m for m in messages if not str(m.get("name") or "").startswith("example_") and isinstance(m.get("content"), str)]
    question = next((m["content"] for m in reversed(asked) if m.get("role") == "user"), None)
    if question is None and asked:
        question = asked[-1]["content"]
    return question, messages


def _sample(path: Path, sample_id: str, by_type: dict, split: str | None) -> tuple[InstanceRecord, list[PredictionRecord]]:
    samplings = [d for _, d in by_type.get("sampling", [])]
    matches = [d for _, d in by_type.get("match", [])]
    raws = [d for _, d in by_type.get("raw_sample", [])]
    errors = [d for _, d in by_type.get("error", [])]
    prompt = samplings[0].get("prompt") if samplings else raws[0].get("input") if raws else None
    question, messages = _messages(prompt)
    expected = matches[0].get("expected") if matches else raws[0].get("ideal") if raws else None
    refs = [expected] if isinstance(expected, str) else [e for e in expected if isinstance(e, str)] if isinstance(expected, list) else []
    instance = InstanceRecord(
        instance_id=sample_id,
        raw_instance_id=sample_id,
        split=split,
        input_text=question,
        input_messages=messages,
        refs=[Reference(text=r, correct=True) for r in refs],
        question_hash=question_hash(question),
        prompt_text=render_messages(messages) or (prompt if isinstance(prompt, str) else None),
    )
    predictions = []
    for trial in range(max(len(samplings), len(matches), 1)):
        sampling = samplings[trial] if trial < len(samplings) else {}
        match = matches[trial] if trial < len(matches) else None
        correct = match.get("correct") if match else None
        if match is not None and not isinstance(correct, bool):
            raise IngestError(f"{path}: sample {sample_id}: match.correct {correct!r} is not true/false")
        infra = match is None and bool(errors)
        output = _text(sampling.get("sampled")) if sampling else None
        if output is None and match:
            output = _text(match.get("sampled"))
        picked = match.get("picked") if match else None
        predictions.append(
            PredictionRecord(
                instance_id=sample_id,
                train_trial_index=trial,
                output_text=output,
                mapped_output=picked if isinstance(picked, str) and picked != output else None,
                metrics={"correct": float(correct)} if correct is not None else {},
                score=float(correct) if correct is not None else None,
                is_correct=correct,
                infra_error=infra,
                error_message=json.dumps(errors[0])[:2000] if infra else None,
            )
        )
    return instance, predictions


_SPECLESS = ("OpenAI evals events without the spec line oaieval writes first; the log is cut or was assembled "
             "from another log")
SOURCE = Source(FORMAT, looks_like, read, count_runs, 'JSONL whose first line is {"spec": {"eval_name": ...}}',
                jsonl_lookalikes=((frozenset(EVENT_KEYS), _SPECLESS), (frozenset({"final_report"}), _SPECLESS)))
