"""Every Eval Ever (schema 0.2.x / 0.3.0): `{uuid}.json` aggregate + `{uuid}_samples.jsonl` instances.

An instance file may also come alone (the older `*_samples.jsonl` converted from HELM). Records
group into runs by (evaluation, model, evaluation_result_id or evaluation_name, domain); `dataset`
is the `evaluation_name`, `domain` the record's `metadata.domain` (else `metadata.subject`),
`split` its `metadata.split` (else the linked result's `source_data.hf_split`); with a domain,
`instance_id` is `<domain>/<sample_id>` (ids may restart per subject), `raw_instance_id` the
`sample_id`. The verdict is the record's own `evaluation.is_correct`; only when that is null does
`evaluation.score` decide, against the linked result's `metric_config` scale. The aggregate's score for the linked result is kept as
the harness's own number and compared with the recomputed pass rate (binary or is_correct-scored
results) or mean score (continuous ones).

Not analysable, and reported as skipped: aggregates without instance-level samples and records of
a non-text modality (e.g. text-to-image). A sample_id repeated within one run is read as
repeated trials (epochs), in file order.
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from core.names import canonical_dataset, question_hash
from core.numbers import whole_or_none
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
from core.verdicts import HarnessAggregate, agreement, lookup, make_rule

from .. import files
from ..errors import MALFORMED, IngestError, malformed
from ..evidence import (
    EXPLANATION_FIELDS,
    common,
    judge_score,
    positive_int,
    render_messages,
    system_text,
)
from ..jsonio import expect, json_type, load_json, load_jsonl, try_parse
from ..options import ReadOptions
from ..source import Source
from ..walk import files_below

FORMAT = "eee"
HEAD_BYTES = 65536
_STRING_FIELD = r'"{}"\s*:\s*"'
TEXT_MODALITIES = {None, "text", "text_to_text"}
# metadata keys Faultline's own export writes so that a round trip keeps every outcome column
FAULTLINE_KEYS = ("domain", "split", "raw_instance_id", "sub_split", "perturbation", "train_trial_index", "infra_error", "faultline_null")


def _head(path: Path) -> str | None:
    head = files.head(path, HEAD_BYTES)
    return None if head is None else head.decode("utf-8", errors="replace")


def kind(path: Path) -> str | None:
    """'aggregate', 'samples' or None, from the file's first bytes (never its name)."""
    if not path.is_file():
        return None
    head = _head(path)
    if not head or not head.lstrip().startswith("{"):
        return None
    if not all(re.search(_STRING_FIELD.format(k), head) for k in ("schema_version", "evaluation_id")):
        return None
    if '"sample_id"' in head.lstrip().split("\n", 1)[0]:
        return "samples"
    if any(f'"{k}"' in head for k in ("evaluation_results", "model_info", "source_metadata")):
        return "aggregate"
    return None


@dataclass(frozen=True)
class _Unit:
    aggregate: Path | None
    samples: Path | None


def _declared_sidecar(aggregate: Path) -> str | None:
    try:
        data = load_json(aggregate)
    except IngestError:
        return None
    detailed = data.get("detailed_evaluation_results") if isinstance(data, dict) else None
    file_path = detailed.get("file_path") if isinstance(detailed, dict) else None
    return Path(file_path).name if isinstance(file_path, str) and file_path else None


def _sidecar(aggregate: Path) -> Path | None:
    """The aggregate's instance file: the one it names, else `{stem}_samples.jsonl`, beside it."""
    for name in (_declared_sidecar(aggregate), f"{aggregate.stem}_samples.jsonl"):
        if name and (candidate := aggregate.parent / name).is_file() and kind(candidate) == "samples":
            return candidate
    return None


def _aggregate_for(samples: Path) -> Path | None:
    if samples.name.endswith("_samples.jsonl"):
        candidate = samples.with_name(samples.name[: -len("_samples.jsonl")] + ".json")
        if kind(candidate) == "aggregate":
            return candidate
    return None


def _units(path: Path) -> list[_Unit]:
    if path.is_file():
        found = kind(path)
        if found == "aggregate":
            return [_Unit(path, _sidecar(path))]
        return [_Unit(_aggregate_for(path), path)] if found == "samples" else []
    kinds = {f: kind(f) for f in files_below(path, lambda p: kind(p) is not None)}
    aggregates = [f for f, k in kinds.items() if k == "aggregate"]
    units = [_Unit(f, _sidecar(f)) for f in aggregates]
    claimed = {u.samples for u in units}
    return units + [_Unit(None, f) for f, k in kinds.items() if k == "samples" and f not in claimed]


def looks_like(path: Path) -> bool:
    return bool(_units(path))


def count_runs(path: Path) -> int:
    return len(_units(path))


def _forced_unit(path: Path) -> _Unit:
    """`--format eee` on a file its first bytes do not identify (e.g. a damaged first line)."""
    if path.suffix.lower() in (".jsonl", ".ndjson"):
        return _Unit(_aggregate_for(path), path)
    return _Unit(path, _sidecar(path))


def read(path: Path, options: ReadOptions) -> Iterator[ParsedRun | Skipped]:
    units = _units(path) or ([_forced_unit(path)] if path.is_file() else [])
    if not units:
        raise IngestError(f"{path}: no Every Eval Ever aggregate (.json) or instance file (_samples.jsonl) here")
    for unit in units:
        where = unit.samples or unit.aggregate
        try:
            parsed = list(_read_unit(unit, options))
        except MALFORMED as exc:
            raise malformed(where, "Every Eval Ever file", exc) from None
        yield from parsed


class _Loose(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)


class _Input(_Loose):
    raw: str
    formatted: str | None = None
    reference: list[str] = []
    choices: list[str] | None = None


class _Output(_Loose):
    raw: list[str] = []
    reasoning_trace: list[str] | None = None
    media: list[Any] | None = None


class _Evaluation(_Loose):
    score: float | None = None
    is_correct: bool | None = None


class _Sample(_Loose):
    schema_version: str
    evaluation_id: str
    model_id: str
    evaluation_name: str
    evaluation_result_id: str | None = None
    sample_id: str
    interaction_type: str | None = None
    modality: str | None = None
    input: _Input
    output: _Output | None = None
    messages: list[dict[str, Any]] | None = None
    answer_attribution: list[dict[str, Any]] | None = None
    evaluation: _Evaluation
    token_usage: dict[str, Any] | None = None
    error: str | None = None
    metadata: dict[str, Any] | None = None

    @field_validator("sample_id", mode="before")
    @classmethod
    def _id(cls, v: Any) -> Any:
        return str(v) if isinstance(v, int) and not isinstance(v, bool) else v


def _samples(path: Path, hasher: "hashlib._Hash") -> list[tuple[int, _Sample]]:
    out = []
    for lineno, row in load_jsonl(path, hasher):
        try:
            out.append((lineno, _Sample.model_validate(row)))
        except ValidationError as exc:
            err = exc.errors()[0]
            loc = ".".join(map(str, err["loc"])) or "record"
            raise IngestError(f"{path}:{lineno}: {loc}: {err['msg']}") from None
    if not out:
        raise IngestError(f"{path}: no instance records in the file")
    return out


def _read_unit(unit: _Unit, options: ReadOptions) -> Iterator[ParsedRun | Skipped]:
    hasher = hashlib.sha256()
    aggregate = expect(load_json(unit.aggregate, hasher), dict, str(unit.aggregate)) if unit.aggregate else {}
    if unit.aggregate:
        _check_aggregate(aggregate, unit.aggregate)
    if unit.samples is None:
        declared = _declared_sidecar(unit.aggregate)
        reason = (
            f"aggregate scores only: its instance file {declared} is not beside it" if declared
            else "aggregate scores only, no instance-level samples"
        )
        yield Skipped(path=str(unit.aggregate), reason=reason)
        return
    samples = _samples(unit.samples, hasher)
    content_hash = hasher.hexdigest()
    results = expect(aggregate.get("evaluation_results") or [], list, f"{unit.aggregate}: evaluation_results")
    groups: dict[tuple, list[tuple[int, _Sample]]] = {}
    for lineno, sample in samples:
        meta = sample.metadata or {}
        domain = meta.get("domain") or meta.get("subject")
        key = (sample.evaluation_id, sample.model_id, sample.evaluation_result_id or sample.evaluation_name, domain)
        groups.setdefault(key, []).append((lineno, sample))
    for (evaluation_id, model_id, result_key, domain), rows in groups.items():
        first = rows[0][1]
        result, remark = _linked_result(results, first, len(groups), any(s.evaluation.is_correct is not None for _, s in rows))
        modality = next((m for _, s in rows if (m := s.modality or result.get("modality")) not in TEXT_MODALITIES), None)
        if modality is None and any(s.output and s.output.media for _, s in rows):
            modality = "media output"
        if modality is not None:
            yield Skipped(
                path=str(unit.samples),
                reason=f"{len(rows)} {modality} record{'' if len(rows) == 1 else 's'} of {first.evaluation_name} "
                f"({model_id}): Faultline analyses text outputs",
            )
            continue
        yield _build_run(unit, aggregate, result, remark, evaluation_id, model_id, result_key, domain, rows, content_hash, options)


# The types the Every Eval Ever schema (0.2.x/0.3.0) gives an aggregate's top-level fields: an
# aggregate whose evaluation_results is a string was read as "aggregate scores only" (exit 0).
AGGREGATE_TYPES: dict[str, type] = {
    "schema_version": str, "evaluation_id": str, "retrieved_timestamp": str, "evaluation_results": list,
    "model_info": dict, "source_metadata": dict, "detailed_evaluation_results": dict,
}
_JSON_TYPES = {str: "a string", list: "an array", dict: "an object"}


def _line_of(path: Path, key: str) -> str:
    """`:LINE` of the first `"key":` in the file (JSON itself has no line numbers to give)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            for n, line in enumerate(fh, start=1):
                if re.search(rf'"{re.escape(key)}"\s*:', line):
                    return f":{n}"
    except OSError:
        pass
    return ""


def _check_aggregate(aggregate: dict, path: Path) -> None:
    for key, expected in AGGREGATE_TYPES.items():
        value = aggregate.get(key)
        if value is not None and not isinstance(value, expected):
            raise IngestError(f"{path}{_line_of(path, key)}: {key} is {json_type(value)}, "
                              f"where the Every Eval Ever schema has {_JSON_TYPES[expected]}; not an aggregate "
                              "Faultline can read")
    for n, result in enumerate(aggregate.get("evaluation_results") or []):
        if not isinstance(result, dict):
            raise IngestError(f"{path}{_line_of(path, 'evaluation_results')}: evaluation_results[{n}] is "
                              f"{json_type(result)}, where the schema has an object")


def _linked_result(results: list, sample: _Sample, n_groups: int, judged_by_is_correct: bool) -> tuple[dict, str | None]:
    """The aggregate result the records belong to, and a remark when it had to be chosen among
    several: the one whose metric the verdicts use (a pass rate when the records carry
    is_correct)."""
    results = [r for r in results if isinstance(r, dict)]
    if sample.evaluation_result_id:
        found = [r for r in results if r.get("evaluation_result_id") == sample.evaluation_result_id]
    else:
        found = [r for r in results if r.get("evaluation_name") == sample.evaluation_name]
    if not found and len(results) == 1 and n_groups == 1:
        found = results
    if len(found) <= 1:
        return (found[0] if found else {}), None
    rates = [r for r in found if _is_pass_rate(_dict(r.get("metric_config")))]
    chosen = (rates if judged_by_is_correct and rates else [r for r in found if r not in rates] or found)[0]
    names = ", ".join(str(_metric_name(r)) for r in found)
    why = "a pass rate, as the records' is_correct verdicts are" if judged_by_is_correct else "the records' score"
    return chosen, f"the aggregate has {len(found)} results for {sample.evaluation_name} ({names}): compared with {_metric_name(chosen)}, {why}"


def _metric_name(result: dict) -> str | None:
    config = _dict(result.get("metric_config"))
    return config.get("metric_id") or config.get("metric_name") or result.get("evaluation_result_id")


def _is_pass_rate(metric_config: dict) -> bool:
    if metric_config.get("score_type") == "binary" or metric_config.get("metric_kind") in ("accuracy", "pass_rate"):
        return True
    name = metric_config.get("metric_id") or metric_config.get("metric_name")
    info = lookup(name) if isinstance(name, str) else None
    return bool(info and info.binary)


def _bound(value: Any, default: float | None) -> float | None:
    """A metric_config min_score/max_score as a number (unbounded or absent: `default`)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return default


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _build_run(unit, aggregate, result, remark, evaluation_id, model_id, result_key, domain, rows, content_hash, options) -> ParsedRun:
    where = unit.samples
    metric_config = _dict(result.get("metric_config"))
    source_data = _dict(result.get("source_data"))
    result_split = source_data.get("hf_split") if isinstance(source_data.get("hf_split"), str) else None
    main_split = result_split or _dict(source_data.get("additional_details")).get("main_split")
    metric = metric_config.get("metric_id") or metric_config.get("metric_name")
    lower_is_better = metric_config.get("lower_is_better") is True
    # the harness's own declared range; a binary score_type is 0/1 whatever else is said
    max_score = _bound(metric_config.get("max_score"), None)
    min_score = _bound(metric_config.get("min_score"), 0.0)
    declared = (min_score, max_score, "eee metric_config") if max_score is not None and min_score < max_score else None
    if metric_config.get("score_type") == "binary":
        declared = (0.0, 1.0, "binary")
    evaluation_name = rows[0][1].evaluation_name
    dataset = options.dataset or canonical_dataset(evaluation_name, options.pass_config.aliases)
    override = options.pass_config.for_dataset(dataset, evaluation_name)
    rule = make_rule(metric, "eee metric_config", override, lower_is_better, scale=declared)
    instances: dict[str, InstanceRecord] = {}
    predictions: list[PredictionRecord] = []
    trials: dict[str, int] = {}
    thresholded = False
    for _, sample in rows:
        meta = sample.metadata or {}
        instance = _instance(sample, meta, result_split, domain)
        trial = trials.get(instance.instance_id, -1) + 1
        if (given := whole_or_none(meta.get("train_trial_index"))) is not None and 0 <= given < 2**31:
            trial = given
        trials[instance.instance_id] = trial
        instances.setdefault(instance.instance_id, instance)
        nulls = set(str(meta.get("faultline_null", "")).split(",")) - {""}
        infra = str(meta.get("infra_error", "")).lower() == "true" or (sample.error is not None and not _output_text(sample))
        score = None if infra or "score" in nulls else sample.evaluation.score
        verdict = None if infra or "is_correct" in nulls else sample.evaluation.is_correct
        if verdict is None and not infra and "is_correct" not in nulls and score is not None:
            verdict, thresholded = rule.judge(score), True
        predictions.append(
            PredictionRecord(
                instance_id=instance.instance_id,
                train_trial_index=trial,
                output_text=_output_text(sample),
                mapped_output=_mapped(sample, instance),
                thinking_text="\n".join(sample.output.reasoning_trace) if sample.output and sample.output.reasoning_trace else None,
                metrics={metric or "score": score} if score is not None else {},
                annotations=_annotations(sample, meta),
                score=score,
                is_correct=verdict,
                infra_error=infra,
                error_message=sample.error if infra else None,
                judge_notes=_judge_notes(sample),
                output_tokens=positive_int((sample.token_usage or {}).get("output_tokens")),
            )
        )
    seen: set[tuple[str, int]] = set()
    for (lineno, _), p in zip(rows, predictions):
        if (p.instance_id, p.train_trial_index) in seen:
            raise IngestError(f"{where}:{lineno}: sample {p.instance_id!r} trial {p.train_trial_index} appears twice")
        seen.add((p.instance_id, p.train_trial_index))
    library = _dict(aggregate.get("eval_library"))
    settings = _faultline_settings(aggregate) or {
        "evaluation_id": evaluation_id,
        "schema_version": rows[0][1].schema_version,
        "eval_library": library.get("name"),
        # the harness that made the evaluation, when the file names it (a variant when it differs)
        "harness": library.get("name") if library.get("name") not in (None, "", "unknown") else None,
        "eval_library_version": library.get("version"),
        "source_name": _dict(aggregate.get("source_metadata")).get("source_name"),
        "generation_config": result.get("generation_config"),
        "metric": metric,
    }
    run = RunRecord(
        run_id=hashlib.sha1(f"{FORMAT}|{evaluation_id}|{model_id}|{result_key}|{domain}".encode()).hexdigest()[:16],
        source_format=FORMAT,
        source_path=str(where.resolve()),
        content_hash=content_hash,
        run_name=":".join(x for x in (evaluation_name, model_id, domain) if x),
        model=options.model or model_id,
        dataset=dataset,
        dataset_raw=evaluation_name,
        domain=domain,
        main_metric=metric or "is_correct",
        main_metric_source="eee score threshold" if thresholded else "eee is_correct",
        **(rule.run_fields() if thresholded else _is_correct_fields(min_score, max_score, lower_is_better)),
        main_split=main_split or _only_split(instances.values()),
        settings={k: v for k, v in settings.items() if v is not None},
        instructions=common(system_text(s.messages) for _, s in rows),
        max_tokens=positive_int(_dict(_dict(result.get("generation_config")).get("generation_args")).get("max_tokens")),
        started_at=log_time(result.get("evaluation_timestamp") or aggregate.get("evaluation_timestamp")),
        **_harness(result, aggregate, metric_config, main_split, instances, predictions, metric or "is_correct", remark),
    )
    # verdicts all from the threshold: the scale is settled with the dataset's column at load
    by_threshold = thresholded and all(s.evaluation.is_correct is None for _, s in rows)
    return ParsedRun(run=run, instances=list(instances.values()), predictions=predictions, rule=rule if by_threshold else None)


def _faultline_settings(aggregate: dict) -> dict | None:
    """A run Faultline itself exported (export/eee.py) keeps the settings it was read with, so
    that its variants and reruns come back as they were; None for any other file."""
    source = _dict(aggregate.get("source_metadata"))
    details = _dict(source.get("additional_details"))
    if source.get("source_name") != "Faultline" or "faultline_run_id" not in details:
        return None
    settings = try_parse(details.get("settings", "")) if isinstance(details.get("settings"), str) else None
    return settings if isinstance(settings, dict) else None


def _is_correct_fields(min_score: float, max_score: float | None, lower_is_better: bool) -> dict:
    return {
        "metric_min": min_score if max_score is not None else None, "metric_max": max_score,
        "lower_is_better": lower_is_better, "verdict_rule": "the record's own evaluation.is_correct",
    }


# ---------------------------------------------------------------- evidence beyond the score


def _prompt_text(sample: _Sample) -> str | None:
    """What the model saw: `input.formatted` (chat template, CoT and all), else the messages
    before its last answer."""
    if sample.input.formatted:
        return sample.input.formatted
    messages = sample.messages or []
    last = max((n for n, m in enumerate(messages) if m.get("role") == "assistant"), default=len(messages))
    return render_messages(messages[:last])


def _judge_notes(sample: _Sample) -> list[JudgeNote] | None:
    """The evaluation's own words: a written reason among its fields (producers add them beside
    score and is_correct), and answers extracted by an LLM judge."""
    notes = []
    extra = sample.evaluation.model_extra or {}
    reasons = [str(extra[k]).strip() for k in EXPLANATION_FIELDS if isinstance(extra.get(k), str) and extra[k].strip()]
    if reasons:
        notes.append(JudgeNote(judge="evaluation", score=judge_score(sample.evaluation.score), explanation="\n".join(reasons)))
    for a in sample.answer_attribution or []:
        if isinstance(a, dict) and a.get("extraction_method") == "llm_judge" and a.get("extracted_value") is not None:
            notes.append(JudgeNote(judge="llm_judge", criterion="answer extraction",
                                   explanation=f"read the answer as {a['extracted_value']!r} from {a.get('source') or 'the output'}"))
    return notes or None


def _instance(sample: _Sample, meta: dict, result_split: str | None, domain: str | None) -> InstanceRecord:
    # ids may restart per subject (HELM's do): qualify them with the domain, as the HELM reader does
    instance_id = sample.sample_id
    if domain and not instance_id.startswith(f"{domain}/"):
        instance_id = f"{domain}/{instance_id}"
    choices = sample.input.choices
    choice_map = {chr(ord("A") + i): c for i, c in enumerate(choices)} if choices and len(choices) <= 26 else None
    messages = sample.messages if sample.interaction_type in ("multi_turn", "agentic") else None
    return InstanceRecord(
        instance_id=instance_id,
        raw_instance_id=str(meta.get("raw_instance_id") or sample.sample_id),
        split=meta.get("split") or result_split,
        sub_split=meta.get("sub_split"),
        perturbation=meta.get("perturbation"),
        input_text=sample.input.raw,
        input_messages=messages,
        refs=[Reference(text=r, correct=True) for r in sample.input.reference],
        choices=choice_map,
        question_hash=question_hash(sample.input.raw),
        prompt_text=_prompt_text(sample),
    )


def _output_text(sample: _Sample) -> str | None:
    if sample.output is not None:
        return "\n\n".join(sample.output.raw) if sample.output.raw else None
    for message in reversed(sample.messages or []):
        if message.get("role") == "assistant" and isinstance(message.get("content"), str):
            return message["content"]
    return None


def _mapped(sample: _Sample, instance: InstanceRecord) -> str | None:
    """A multiple-choice answer letter mapped to its option text."""
    if not instance.choices:
        return None
    for attribution in sample.answer_attribution or []:
        value = attribution.get("extracted_value") if isinstance(attribution, dict) else None
        if attribution.get("is_terminal") and isinstance(value, str) and value.strip() in instance.choices:
            return instance.choices[value.strip()]
    return None


def _annotations(sample: _Sample, meta: dict) -> dict | None:
    kept = {k: v for k, v in meta.items() if k not in FAULTLINE_KEYS}
    out = {k: v for k, v in (("metadata", kept), ("answer_attribution", sample.answer_attribution)) if v}
    return out or None


def _only_split(instances) -> str | None:
    splits = {i.split for i in instances}
    return splits.pop() if len(splits) == 1 else None


def _harness(result, aggregate, metric_config, split, instances, predictions, judged, remark) -> dict:
    details = _dict(result.get("score_details"))
    value = details.get("score")
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return {}
    # only the result's own count: detailed_evaluation_results.total_rows counts the instance file's lines
    n = _dict(details.get("uncertainty")).get("num_samples")
    split_of = {i.instance_id: i.split for i in instances.values()}
    scored = [p for p in predictions if not p.infra_error and (split is None or split_of[p.instance_id] == split)]
    metric = metric_config.get("metric_id") or metric_config.get("metric_name") or result.get("evaluation_name")
    binary = (
        metric_config.get("score_type") == "binary"
        or metric_config.get("metric_kind") in ("accuracy", "pass_rate")
        or all(p.score in (0.0, 1.0) for p in scored if p.score is not None)
    )
    if binary:
        scores = [float(p.is_correct) for p in scored if p.is_correct is not None]
    else:
        scores = [p.score for p in scored if p.score is not None]
    aggregate = HarnessAggregate(metric, split, float(value), n if isinstance(n, int) else None, remark=remark)
    headline = metric_config.get("metric_id") or metric_config.get("metric_name")
    return agreement(aggregate, scores, len(scored), headline=headline if judged != "is_correct" else None,
                     judged=judged, n_errored=sum(1 for p in predictions if p.infra_error))


SOURCE = Source(
    FORMAT, looks_like, read, count_runs,
    "JSON with string schema_version and evaluation_id: an aggregate (evaluation_results) or instance lines (sample_id)",
    jsonl_lookalikes=((frozenset({"evaluation_id", "sample_id", "evaluation"}), "Every Eval Ever instance records "
                       "without a string schema_version/evaluation_id at the start of each line"),),
)
