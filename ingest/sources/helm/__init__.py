"""HELM run folders (`benchmark_output/runs/<suite>/<run>/`), every vintage we have seen.

A run has run_spec.json plus either the display files (instances.json, display_predictions.json)
or, in older or trimmed runs, only scenario_state.json. Per-instance scores come from
per_instance_stats.json, which has one entry per metric class per instance: entries are merged
on (instance_id, perturbation, train_trial_index).

A run is judged on HELM's headline for its run group: the suite schema.json's main_name, else the
first main metric HELM's own schema files have named for the group that the run reports
(helm_table, for suites written by helm-run alone). A headline the suite's schema names that no
prediction carries (older HELM computes BBQ's bbq_accuracy over the run only) stays the headline:
the run is judged on HELM's table metric for the group, and the check says it is not the
headline. A run folder without predictions, or with 0
request states, is skipped in a folder and refused when named directly (NotARun).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any, Iterator

from pydantic import TypeAdapter, ValidationError

from core.names import canonical_dataset, question_hash
from core.records import InstanceRecord, ParsedRun, PredictionRecord, RunRecord, Skipped
from core.times import log_time
from core.verdicts import (
    FALLBACK_METRICS,
    GENERIC_STATS,
    HarnessAggregate,
    PassRule,
    Scale,
    agreement,
    is_finite,
    make_rule,
)

from ...errors import MALFORMED, IngestError, malformed
from ...evidence import annotation_notes, positive_int, render_messages
from ...jsonio import expect, load_json
from ...options import ReadOptions
from ...source import Source
from ...walk import helm_runs_below
from . import table as helm_table
from .parallel import record_bytes

FORMAT = "helm"
SUITE_SCHEMA = "the suite's schema.json"  # where a headline came from, when not HELM's own table
# Scenario arguments that name a subdivision of the dataset, most specific first.
DOMAIN_ARGS = ("subject", "subset", "subtask", "task", "category", "topic", "domain", "language", "dataset")


def looks_like(path: Path) -> bool:
    return path.is_dir() and bool(helm_runs_below(path, limit=1))


def count_runs(path: Path) -> int:
    return len(helm_runs_below(path))


class NotARun(IngestError):
    """A run folder without predictions to read (an unfinished or empty run): skipped and named
    when found in a folder, refused when named directly."""

    def __init__(self, run_dir: Path, reason: str):
        super().__init__(f"{run_dir}: {reason}")
        self.reason = reason


def read(path: Path, options: ReadOptions) -> Iterator[ParsedRun | Skipped]:
    runs = helm_runs_below(path)
    if not runs:
        raise IngestError(f"{path}: no HELM run here (no run_spec.json in it or its subfolders)")
    schemas: dict[Path, SuiteSchema | None] = {}
    for run_dir in runs:
        suite_dir = run_dir.parent
        if suite_dir not in schemas:
            schemas[suite_dir] = SuiteSchema.load(suite_dir / "schema.json")
        try:
            parsed = read_run(run_dir, schemas[suite_dir], options)
        except NotARun as exc:
            if run_dir == path and not options.part_of_folder:
                raise
            yield Skipped(path=str(run_dir), reason=exc.reason)
            continue
        except MALFORMED as exc:
            raise malformed(run_dir, "HELM run", exc) from None
        yield parsed


@dataclass(frozen=True)
class SuiteSchema:
    """What a suite's schema.json says about main metrics, metric direction and models."""

    main_names: dict[str, str]
    main_splits: dict[str, str]
    lower_is_better: dict[str, bool]
    models: dict[str, dict]
    display_names: dict[str, str]

    @classmethod
    def load(cls, path: Path) -> "SuiteSchema | None":
        if not path.is_file():
            return None
        raw = expect(load_json(path), dict, str(path))
        groups = [g for g in raw.get("run_groups") or [] if isinstance(g, dict)]
        return cls(
            main_names={
                g.get("name"): main
                for g in groups
                if (main := (g.get("environment") or {}).get("main_name")) and main != "none"
            },
            main_splits={
                g.get("name"): split
                for g in groups
                if isinstance(split := (g.get("environment") or {}).get("main_split"), str) and split
            },
            lower_is_better={
                m["name"]: bool(m.get("lower_is_better"))
                for m in raw.get("metrics") or []
                if isinstance(m, dict) and "name" in m
            },
            models={m["name"]: m for m in raw.get("models") or [] if isinstance(m, dict) and "name" in m},
            display_names={
                m["name"]: m["display_name"]
                for m in raw.get("metrics") or []
                if isinstance(m, dict) and "name" in m and isinstance(m.get("display_name"), str)
            },
        )


def _perturbation_key(p: Any) -> str | None:
    if not p:
        return None
    if isinstance(p, dict):
        return p.get("name") or json.dumps(p, sort_keys=True)
    return str(p)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


@dataclass
class _RunFiles:
    """What a run folder holds, as read (every file read feeds `hasher`, the run's content hash)."""

    run_dir: Path
    hasher: Any
    spec: dict
    scenario: dict | None
    raw_instances: list
    raw_preds: list
    instances_where: Path
    preds_where: Path
    merged_stats: dict
    prompts: dict
    finishes: dict
    started_at: datetime | None  # when the run's first request was made, where the log says


@dataclass(frozen=True)
class _Identity:
    """Which run this is: its name, model, dataset and domain, and how its ids are qualified."""

    run_name: str
    adapter: dict
    model: str
    groups: list
    dataset: str
    dataset_raw: str
    domain: str | None
    qualifier: str
    scenario_args: dict


@dataclass(frozen=True)
class _Metric:
    """The metric that decides pass/fail, chosen once per run, and the headline it answers to."""

    override: Any
    headline: Any
    name: str | None
    source: str
    lower_is_better: bool | None


def read_run(run_dir: Path, schema: SuiteSchema | None, options: ReadOptions) -> ParsedRun:
    """load → identity → instances → metric → predictions → scores → verdict."""
    files = _load_run(run_dir)
    ident = _identity(files, options)
    instances, index = _instances(files, ident)
    metric = _metric(files, ident, schema, options)
    rows, n_nonfinite, repeated = _prediction_rows(files, index, metric)
    rule = _judge(rows, metric, schema, files.spec)
    predictions = _validate(_PREDICTIONS, rows, f"{files.preds_where}: prediction")
    run = _verdict(files, ident, instances, rows, metric, rule, schema)
    notes = [f"{run_dir}: {repeated} repeated prediction(s) stored once"] if repeated else []
    if blocked := sum(1 for r in rows if r["verdict_note"]):
        notes.append(f"{run_dir}: {blocked} failed request(s) HELM scored anyway, counted as HELM counts them (predictions.verdict_note)")
    return ParsedRun(run=run, instances=instances, predictions=predictions, notes=notes, n_nonfinite=n_nonfinite, rule=rule)


def _load_run(run_dir: Path) -> _RunFiles:
    """The run's files: its spec, its instances and predictions (from the display files, else
    the request states), the per-instance stats, the prompts sent and why each generation ended."""
    hasher = hashlib.sha256()
    spec_file = run_dir / "run_spec.json"
    spec = expect(load_json(spec_file, hasher), dict, str(spec_file))
    scenario_file = run_dir / "scenario.json"
    scenario = expect(load_json(scenario_file, hasher), dict, str(scenario_file)) if scenario_file.is_file() else None
    display_file = run_dir / "display_predictions.json"
    instances_file = run_dir / "instances.json"
    state_file = run_dir / "scenario_state.json"
    state: dict = {}
    if display_file.is_file() and instances_file.is_file():
        raw_instances = expect(load_json(instances_file, hasher), list, str(instances_file))
        raw_preds = expect(load_json(display_file, hasher), list, str(display_file))
        completions = None
        if state_file.is_file():
            # display files do not say which requests failed; the request states do
            state = expect(load_json(state_file, hasher), dict, str(state_file))
            _mark_failed_requests(raw_preds, state.get("request_states") or [])
    elif state_file.is_file():
        state = expect(load_json(state_file, hasher), dict, str(state_file))
        states = expect(state.get("request_states"), list, f"{state_file}: request_states")
        raw_instances, raw_preds, completions = _from_scenario_state(states, state_file)
    else:
        raise NotARun(run_dir, "incomplete HELM run: no predictions (neither instances.json + "
                      "display_predictions.json nor scenario_state.json)")
    if not raw_preds:
        raise NotARun(run_dir, "empty HELM run: 0 request states")
    stats_file = run_dir / "per_instance_stats.json"
    merged_stats = (
        _merge_stats(expect(load_json(stats_file, hasher), list, str(stats_file)), stats_file)
        if stats_file.is_file() else {}
    )
    return _RunFiles(
        run_dir=run_dir, hasher=hasher, spec=spec, scenario=scenario, raw_instances=raw_instances, raw_preds=raw_preds,
        instances_where=instances_file if completions is None else state_file,
        preds_where=display_file if completions is None else state_file,
        merged_stats=merged_stats,
        prompts=_request_prompts(run_dir / "display_requests.json", state, hasher),
        finishes=_finish_reasons(state),
        started_at=_started_at(state),
    )


def _identity(files: _RunFiles, options: ReadOptions) -> _Identity:
    spec_file = files.run_dir / "run_spec.json"
    spec = files.spec
    run_name = expect(spec.get("name"), str, f"{spec_file}: name")
    adapter = expect(spec.get("adapter_spec", {}), dict, f"{spec_file}: adapter_spec")
    model = options.model or adapter.get("model")
    if not isinstance(model, str) or not model:
        raise IngestError(f"{spec_file}: adapter_spec.model is missing")
    scenario_args = (spec.get("scenario_spec") or {}).get("args") or {}
    groups = [g for g in spec.get("groups") or [] if isinstance(g, str)]
    dataset_raw = files.scenario.get("name") if files.scenario is not None else None
    if not isinstance(dataset_raw, str) or not dataset_raw:
        dataset_raw = run_name.split(":", 1)[0]
    dataset = options.dataset or canonical_dataset(dataset_raw, options.pass_config.aliases, groups)
    return _Identity(
        run_name=run_name, adapter=adapter, model=model, groups=groups, dataset=dataset, dataset_raw=dataset_raw,
        domain=_domain(scenario_args, groups, dataset),
        # HELM restarts instance ids per scenario variant: qualify them with what tells variants apart
        qualifier="/".join(str(v) for v in scenario_args.values() if isinstance(v, (str, int, float))),
        scenario_args=scenario_args,
    )


def _instances(files: _RunFiles, ident: _Identity) -> tuple[list[InstanceRecord], dict[tuple[str, str | None], str]]:
    """The run's questions, each once, and (raw id, perturbation) → qualified id."""
    raw_instances, instances_where, qualifier = files.raw_instances, files.instances_where, ident.qualifier
    method = ident.adapter.get("method")
    inst_rows: list[dict[str, Any]] = []
    index: dict[tuple[str, str | None], str] = {}
    first_at: dict[tuple[str, str | None], int] = {}
    multiple_choice = bool(method) and str(method).startswith("multiple_choice")
    for n, inst in enumerate(raw_instances):
        if inst.__class__ is not dict:
            expect(inst, dict, f"{instances_where}: instance {n}")
        raw_id = inst.get("id")
        if raw_id is None:
            raise IngestError(f"{instances_where}: instance {n}: no id")
        raw_id = str(raw_id)
        pert = inst.get("perturbation")
        pert = _perturbation_key(pert) if pert else None
        if (raw_id, pert) in index:
            first = raw_instances[first_at[(raw_id, pert)]]
            if (inst.get("input"), inst.get("references")) != (first.get("input"), first.get("references")):
                raise IngestError(
                    f"{instances_where}: instances {first_at[(raw_id, pert)]} and {n} share the id {raw_id!r}"
                    f"{f' (perturbation {pert})' if pert else ''} but ask different questions"
                )
            continue  # the same question again (scenario_state.json lists it once per request)
        first_at[(raw_id, pert)] = n
        qualified = f"{qualifier}/{raw_id}" if qualifier else raw_id
        if pert:
            qualified = f"{qualified}@{pert}"
        index[(raw_id, pert)] = qualified
        refs = [
            {"text": (r.get("output") or {}).get("text", ""), "correct": "correct" in (r.get("tags") or ())}
            for r in inst.get("references") or ()
        ]
        choices = inst.get("_output_mapping")
        if choices is None and multiple_choice and len(refs) <= 26:
            choices = {chr(65 + i): r["text"] for i, r in enumerate(refs)}
        inp = inst.get("input") or {}
        text = _text(inp.get("text"))
        inst_rows.append(
            {
                "instance_id": qualified,
                "raw_instance_id": raw_id,
                "split": inst.get("split"),
                "sub_split": inst.get("sub_split"),
                "perturbation": pert,
                "input_text": text,
                "input_messages": inp.get("messages"),
                "refs": refs,
                "choices": choices,
                "question_hash": question_hash(text if text is not None else _last_user(inp.get("messages"))),
                "prompt_text": files.prompts.get((raw_id, pert)),
            }
        )
    return _validate(_INSTANCES, inst_rows, f"{instances_where}: instance"), index


def _metric(files: _RunFiles, ident: _Identity, schema: SuiteSchema | None, options: ReadOptions) -> _Metric:
    override = options.pass_config.for_dataset(ident.dataset, ident.dataset_raw)
    metric_names = {m for stats in files.merged_stats.values() for m in stats}
    first = next((p for p in files.raw_preds if isinstance(p, dict)), {})
    display_names = list(first.get("stats") or {})
    available = metric_names | set(display_names)
    headline = _headline(schema, ident.groups, available)
    # a headline HELM computes over the whole run (BBQ's bbq_accuracy in older HELM) decides no
    # prediction: judge on what HELM's table names for the group, and say it is not the headline
    judgeable = headline if headline is not None and headline.metric in available else _table_headline(ident.groups, available)
    metric, source = _choose_metric(override.metric, judgeable, available, display_names, _jury_metric(files.spec))
    return _Metric(override, headline, metric, source, _lower_is_better(schema, metric))


def _prediction_rows(files: _RunFiles, index: dict, metric_choice: _Metric) -> tuple[list[dict[str, Any]], int, int]:
    """One row per (instance, perturbation, trial), with its stats and its score on the metric;
    how many scores were not finite and how many repeated predictions were dropped."""
    raw_preds, preds_where, metric = files.raw_preds, files.preds_where, metric_choice.name
    merged_stats, finishes = files.merged_stats, files.finishes
    rows: list[dict[str, Any]] = []
    n_nonfinite = 0
    pred_at: dict[tuple, int] = {}
    repeated = 0
    for n, pred in enumerate(raw_preds):
        if pred.__class__ is not dict:
            expect(pred, dict, f"{preds_where}: prediction {n}")
        raw_id = str(pred.get("instance_id"))
        pert = pred.get("perturbation")
        pert = _perturbation_key(pert) if pert else None
        qualified = index.get((raw_id, pert))
        if qualified is None:
            raise IngestError(f"{preds_where}: prediction {n}: instance {raw_id!r} is not in the run's instances")
        trial = pred.get("train_trial_index", 0)
        key = (raw_id, pert, str(trial))
        if key in pred_at:
            if pred != raw_preds[pred_at[key]]:
                raise IngestError(
                    f"{preds_where}: predictions {pred_at[key]} and {n} are both instance {raw_id!r} "
                    f"trial {trial}{f' perturbation {pert}' if pert else ''}, with different contents"
                )
            repeated += 1
            continue
        pred_at[key] = n
        stats = merged_stats.get((raw_id, pert, trial)) if isinstance(trial, int) else None
        stats = dict(stats) if stats else {}
        for name, value in (pred.get("stats") or {}).items():
            if isinstance(value, (int, float)):
                stats.setdefault(name, float(value))
        error = pred.get("_infra_error")
        failed, note = _request_failure(error, stats, metric) if error else (None, None)
        score = None if failed or not metric else stats.get(metric)
        if score is not None and not is_finite(score):
            n_nonfinite += 1
            score = None
        thinking, annotations = pred.get("thinking_text"), pred.get("annotations")
        rows.append(
            {
                "instance_id": qualified,
                "train_trial_index": trial,
                "output_text": pred.get("predicted_text"),
                "mapped_output": pred.get("mapped_output"),
                "thinking_text": None if thinking is None else _thinking(thinking),
                "metrics": stats,
                "annotations": annotations,
                "score": score,
                "infra_error": bool(failed),
                "error_message": failed or None,
                "verdict_note": note,
                "judge_notes": None if annotations is None else annotation_notes(annotations),
                "finish_reason": _finish_reason(stats) or finishes.get(key),
                "output_tokens": positive_int(stats.get("num_output_tokens")),
            }
        )
    return rows, n_nonfinite, repeated


def _judge(rows: list[dict[str, Any]], metric: _Metric, schema: SuiteSchema | None, spec: dict) -> PassRule:
    """The run's pass rule on its metric's scale; each row's verdict by it (a failed request gets none)."""
    rule = make_rule(metric.name, metric.source, metric.override, lower_is_better=metric.lower_is_better,
                     evidence=_jury_scales(metric.name, schema, spec))
    judge = rule.judge
    for row in rows:
        row["is_correct"] = None if row["infra_error"] else judge(row["score"])
    return rule


def _verdict(files: _RunFiles, ident: _Identity, instances: list[InstanceRecord], rows: list[dict[str, Any]],
             metric_choice: _Metric, rule: PassRule, schema: SuiteSchema | None) -> RunRecord:
    """The run record, with HELM's own headline checked against the recomputed one."""
    run_dir, hasher, adapter, model = files.run_dir, files.hasher, ident.adapter, ident.model
    run_name, groups, headline, metric = ident.run_name, ident.groups, metric_choice.headline, metric_choice.name
    dataset, dataset_raw, domain, source = ident.dataset, ident.dataset_raw, ident.domain, metric_choice.source
    method = adapter.get("method")
    resolved = run_dir.resolve()
    suite_dir = resolved.parent
    suite = suite_dir.name
    main_split = _main_split(schema, headline, groups, [i.split for i in instances])
    harness = _harness_check(run_dir / "stats.json", rows, instances, metric, headline, main_split, groups, hasher)
    settings = {
        "harness": FORMAT,
        "suite": suite,
        "method": method,
        "n_shot": adapter.get("max_train_instances"),
        "num_trials": adapter.get("num_train_trials"),
        "model_deployment": adapter.get("model_deployment"),
        **identity_settings(ident.scenario_args, adapter),
    }
    return RunRecord(
        run_id=hashlib.sha1(f"{FORMAT}|{suite_dir}|{run_name}".encode()).hexdigest()[:16],
        source_format=FORMAT,
        source_path=str(resolved),
        content_hash=hasher.hexdigest(),
        suite=suite,
        run_name=run_name,
        model=model,
        model_deployment=adapter.get("model_deployment"),
        model_metadata=schema.models.get(model) if schema else None,
        dataset=dataset,
        dataset_raw=dataset_raw,
        domain=domain,
        method=method,
        run_groups=groups or None,
        main_metric=metric,
        main_metric_source=source,
        **rule.run_fields(),
        main_split=main_split,
        settings={k: v for k, v in settings.items() if v is not None},
        instructions=helm_instructions(adapter),
        max_tokens=positive_int(adapter.get("max_tokens")),
        started_at=files.started_at,
        **harness,
    )


# ---------------------------------------------------------------- what the run is one of

# Scenario arguments that shape the prompt rather than pick the data (MMLU-Pro's
# use_chain_of_thought and use_few_shot, MATH's use_official_examples); every other one picks
# which part of the dataset the run answers (subject, language pair, level, subset, ...).
PROMPT_ARG = re.compile(r"chain_of_thought|(^|_)cot($|_)|few_?shot|shots?($|_)|example|prompt|template|instruction")
CHAIN_OF_THOUGHT_ARG = re.compile(r"chain_of_thought|(^|_)cot($|_)")
# The adapter fields that make the prompt's text around each instance
PROMPT_FIELDS = ("global_prefix", "instructions", "instance_prefix", "input_prefix", "input_suffix",
                 "reference_prefix", "reference_suffix", "output_prefix", "output_suffix",
                 "chain_of_thought_prefix", "chain_of_thought_suffix", "global_suffix")


def identity_settings(args: dict, adapter: dict) -> dict:
    """The settings that say which part of the dataset a run answers (`subset`: the scenario's
    data arguments) and how it was asked (chain of thought, other prompt arguments, a short hash
    of the adapter's prompt text), for store/runs.py `variants` and `reruns`."""
    out: dict = {}
    data = {k: v for k, v in args.items() if not PROMPT_ARG.search(k.lower())}
    prompt = {k: v for k, v in args.items() if PROMPT_ARG.search(k.lower())}
    if data:
        out["subset"] = data
    for key in [k for k in prompt if CHAIN_OF_THOUGHT_ARG.search(k.lower())][:1]:
        out["chain_of_thought"] = _flag(prompt.pop(key))
    if prompt:
        out["prompt_args"] = prompt
    text = json.dumps({f: adapter.get(f) for f in PROMPT_FIELDS if adapter.get(f)}, sort_keys=True)
    if text != "{}":
        out["prompt_template"] = hashlib.sha1(text.encode()).hexdigest()[:8]
    return out


def _flag(value: Any) -> Any:
    """A boolean argument as HELM's run names write it ("True", "false") read as a boolean."""
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    return value


def _started_at(state: dict) -> datetime | None:
    """When the run's first request was made (request_datetime in scenario_state.json), when
    the run has its request states."""
    times = []
    for rs in state.get("request_states") or []:
        result = rs.get("result") if isinstance(rs, dict) else None
        if isinstance(result, dict) and (at := log_time(result.get("request_datetime"))) is not None:
            times.append(at)
    return min(times, default=None)


# ---------------------------------------------------------------- evidence beyond the score


def helm_instructions(adapter: dict) -> str | None:
    """What every prompt of the run told the model, as HELM's adapter builds prompts
    (global prefix + instructions, then per example input prefix + input + input suffix, the
    choices after the reference prefix, the output prefix, then the global suffix): the
    instructions in their own words, and the prompt layout when it has one."""
    def field(name: str) -> str:
        value = adapter.get(name)
        return value if isinstance(value, str) else ""

    lines = []
    head = (field("global_prefix") + field("instructions")).strip()
    if head:
        lines.append(head)
    layout = [f"{label} {json.dumps(field(name), ensure_ascii=False)}"
              for name, label in (("input_prefix", "input prefix"), ("input_suffix", "input suffix"),
                                  ("reference_prefix", "choices labelled like"),
                                  ("output_prefix", "output prefix"),
                                  ("chain_of_thought_prefix", "chain-of-thought prefix"))
              if field(name).strip()
              and (name != "reference_prefix" or str(adapter.get("method") or "").startswith("multiple_choice"))]
    if layout:
        lines.append("Prompt layout (HELM adapter): " + ", ".join(layout) + ".")
    tail = field("global_suffix").strip()
    if tail:
        lines.append(f"Every prompt ends with: {tail}")
    return "\n".join(lines) or None


def _request_prompts(display_requests: Path, state: dict, hasher: "hashlib._Hash") -> dict[tuple, str]:
    """(raw instance id, perturbation) → the prompt sent for it (its first trial's), from
    display_requests.json, else the request states."""
    if display_requests.is_file():
        entries = load_json(display_requests, hasher)
        requests = [(e, e.get("request")) for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []
    else:
        requests = [(rs.get("instance") or {}, rs.get("request")) for rs in state.get("request_states") or []
                    if isinstance(rs, dict)]
        requests = [({"instance_id": inst.get("id"), "perturbation": inst.get("perturbation")}, req)
                    for inst, req in requests if isinstance(inst, dict)]
    prompts: dict[tuple, str] = {}
    for entry, request in requests:
        if not isinstance(request, dict):
            continue
        prompt = request.get("prompt") if isinstance(request.get("prompt"), str) and request.get("prompt") else None
        prompt = prompt or render_messages(request.get("messages"))
        if prompt:
            prompts.setdefault((str(entry.get("instance_id")), _perturbation_key(entry.get("perturbation"))), prompt)
    return prompts


def _finish_reason(stats: dict) -> str | None:
    """HELM's per-instance finish_reason_<why> stat that is 1."""
    for name, value in stats.items():
        # "unknown": the provider did not say, which is no reason
        if name.startswith("finish_reason_") and name != "finish_reason_unknown" and value == 1:
            return name[len("finish_reason_"):]
    return None


def _finish_reasons(state: dict) -> dict[tuple, str]:
    """(raw instance id, perturbation, trial) → the completion's finish reason in the request states."""
    out: dict[tuple, str] = {}
    for rs in state.get("request_states") or []:
        if not isinstance(rs, dict):
            continue
        completions = (rs.get("result") or {}).get("completions") or []
        reason = completions[0].get("finish_reason") if completions and isinstance(completions[0], dict) else None
        reason = reason.get("reason") if isinstance(reason, dict) else reason
        inst = rs.get("instance") or {}
        if isinstance(reason, str) and reason != "unknown" and isinstance(inst, dict):
            key = (str(inst.get("id")), _perturbation_key(inst.get("perturbation")), str(rs.get("train_trial_index", 0)))
            out.setdefault(key, reason)
    return out


def _main_split(schema: SuiteSchema | None, headline: helm_table.Headline | None, groups: list[str], splits: list[str | None]) -> str | None:
    """The split HELM's headline number uses: the run group's main_split, else test when the run
    has test instances, else the run's only split."""
    present = {s for s in splits if s}
    if headline is not None and headline.split in present:
        return headline.split
    if schema:
        for group in reversed(groups):
            split = schema.main_splits.get(group)
            if split in present:
                return split
    if "test" in present:
        return "test"
    return next(iter(present)) if len(present) == 1 else None


def _stats_aggregate(stats_file: Path, metric: str, split: str | None, hasher: "hashlib._Hash") -> HarnessAggregate | None:
    """HELM's own mean of the metric on the split, unperturbed (stats.json), and its instance count."""
    if not stats_file.is_file():
        return None
    entries = load_json(stats_file, hasher)
    if not isinstance(entries, list):
        return None
    name, _, sub_split = metric.partition("@")
    value = count = None
    for entry in entries:
        key = entry.get("name") if isinstance(entry, dict) else None
        if not isinstance(key, dict) or key.get("perturbation") or key.get("split") != split:
            continue
        if (key.get("sub_split") or "") != sub_split:
            continue
        if key.get("name") == name and isinstance(entry.get("mean"), (int, float)):
            value = float(entry["mean"])
        elif key.get("name") == "num_instances" and isinstance(entry.get("sum"), (int, float)):
            count = int(entry["sum"])
    if value is None:
        return None
    return HarnessAggregate(metric, split, value, count)


def _last_user(messages: Any) -> str | None:
    if not isinstance(messages, list):
        return None
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user" and isinstance(message.get("content"), str):
            return message["content"]
    return None


def _thinking(value: Any) -> str | None:
    if isinstance(value, dict):
        return _text(value.get("text"))
    return _text(value)


def _merge_stats(entries: list, stats_file: Path) -> dict[tuple, dict[str, float]]:
    """(instance id, perturbation, trial) → {metric: mean}, merging the entry of every metric class."""
    merged: dict[tuple, dict[str, float]] = {}
    for n, entry in enumerate(entries):
        try:
            trial = entry.get("train_trial_index", 0)
            if trial.__class__ is not int:
                raise TypeError(f"train_trial_index {trial!r} is not an integer")
            pert = entry.get("perturbation")
            key = (str(entry["instance_id"]), _perturbation_key(pert) if pert else None, trial)
            bucket = merged.setdefault(key, {})
            for stat in entry["stats"]:
                # count 0 marks a metric HELM could not compute for this instance
                if not stat.get("count"):
                    continue
                mean = stat.get("mean")
                if mean.__class__ is not float and not isinstance(mean, int):
                    continue
                name = stat["name"]
                sub_split = name.get("sub_split")
                bucket[f"{name['name']}@{sub_split}" if sub_split else name["name"]] = float(mean)
        except (AttributeError, KeyError, TypeError) as exc:
            problem = f"missing {exc}" if isinstance(exc, KeyError) else str(exc)
            raise IngestError(f"{stats_file}: entry {n}: not a HELM per-instance stats entry ({problem})") from None
    return merged


def _mark_failed_requests(preds: list, states: list) -> None:
    failed = {}
    for rs in states:
        result = rs.get("result") if isinstance(rs, dict) else None
        if isinstance(result, dict) and result.get("success") is False:
            inst = rs.get("instance") or {}
            key = (str(inst.get("id")), _perturbation_key(inst.get("perturbation")), rs.get("train_trial_index", 0))
            failed[key] = str(result.get("error") or "request failed")
    if not failed:
        return
    for pred in preds:
        if isinstance(pred, dict):
            key = (str(pred.get("instance_id")), _perturbation_key(pred.get("perturbation")), pred.get("train_trial_index", 0))
            if key in failed:
                pred["_infra_error"] = failed[key]


def _from_scenario_state(states: list, state_file: Path) -> tuple[list, list, list]:
    """Instances and display-like predictions rebuilt from request states."""
    instances, preds = [], []
    for n, rs in enumerate(states):
        where = f"{state_file}: request_states[{n}]"
        expect(rs, dict, where)
        inst = dict(expect(rs.get("instance"), dict, f"{where}.instance"))
        if rs.get("output_mapping"):
            inst["_output_mapping"] = rs["output_mapping"]
        instances.append(inst)
        result = rs.get("result") or {}
        completions = result.get("completions") or []
        text = completions[0].get("text") if completions else None
        mapping = rs.get("output_mapping") or {}
        pred: dict[str, Any] = {
            "instance_id": inst.get("id"),
            "train_trial_index": rs.get("train_trial_index", 0),
            "predicted_text": text,
            "perturbation": inst.get("perturbation"),
        }
        if text is not None and mapping.get(text.strip()) is not None:
            pred["mapped_output"] = mapping[text.strip()]
        if completions and completions[0].get("thinking"):
            pred["thinking_text"] = completions[0]["thinking"]
        if result.get("success") is False:
            pred["_infra_error"] = str(result.get("error") or "request failed")
        preds.append(pred)
    return instances, preds, states


def _domain(args: dict, groups: list[str], dataset: str) -> str | None:
    # WMT-14's language pair: HELM's run spec splits `language_pair=cs-en` into two arguments
    source, target = args.get("source_language"), args.get("target_language")
    if isinstance(source, str) and isinstance(target, str) and source and target:
        return f"{source}-{target}"
    for key in DOMAIN_ARGS:
        value = args.get(key)
        if isinstance(value, str) and value and _norm(value) != _norm(dataset):
            return value
    if groups and _norm(groups[-1]) != _norm(dataset):
        return groups[-1]
    return None


def _norm(s: str) -> str:
    return re.sub(r"[^a-z0-9]", "", s.lower())


def _headline(schema: SuiteSchema | None, groups: list[str], available: set[str]) -> helm_table.Headline | None:
    """HELM's headline for the run: its group's main metric in the suite's schema.json, else the
    first main metric HELM's own schema files have named for the group that the run reports
    (suites written by helm-run alone have no schema.json)."""
    if schema:
        named = [(group, main) for group in reversed(groups) if (main := schema.main_names.get(group))]
        if named:
            # the first the predictions carry, else the suite's word all the same (a metric HELM
            # computes over the run only): never another schema's headline for the group (BBQ)
            group, main = min(named, key=lambda gm: gm[1] not in available)
            return helm_table.Headline(group, main, schema.main_splits.get(group), SUITE_SCHEMA)
    return _table_headline(groups, available)


def _table_headline(groups: list[str], available: set[str]) -> helm_table.Headline | None:
    """The first main metric HELM's own schema files name for a group the run reports."""
    for group in reversed(groups):
        for headline in helm_table.headlines(group):
            if headline.metric in available:
                return headline
    return None


def _choose_metric(
    configured: str | None, headline: helm_table.Headline | None, available: set[str], display_order: list[str],
    jury: str | None,
) -> tuple[str | None, str]:
    if configured:
        return configured, "config"
    if headline is not None:
        return headline.metric, "schema" if headline.where == SUITE_SCHEMA else "helm schema table"
    if jury in available:
        return jury, "helm jury metric"  # what the run was made to measure, when HELM names no headline
    for name in FALLBACK_METRICS:
        if name in available:
            return name, "fallback"
    for name in display_order:
        if name not in GENERIC_STATS:
            return name, "first task metric"
    return None, "none"


_INSTANCES = TypeAdapter(list[InstanceRecord])
_PREDICTIONS = TypeAdapter(list[PredictionRecord])


def _validate(adapter: TypeAdapter, rows: list[dict], where: str) -> list:
    """Validate a whole list in one call (far faster than one model at a time)."""
    try:
        return adapter.validate_python(rows)
    except ValidationError as exc:
        err = exc.errors()[0]
        index, *field = err["loc"]
        raise IngestError(f"{where} {index}: {'.'.join(map(str, field))}: {err['msg']}") from None


def _lower_is_better(schema: SuiteSchema | None, metric: str | None) -> bool | None:
    """The metric's direction as the suite's schema.json, else HELM's own schemas, give it."""
    if not metric:
        return None
    if schema and metric in schema.lower_is_better:
        return schema.lower_is_better[metric]
    direction = helm_table.metric(metric).get("lower_is_better")
    return direction if isinstance(direction, bool) else None


JURY_METRIC_CLASS = "LLMJuryMetric"


def _jury_scales(metric: str | None, schema: SuiteSchema | None, spec: dict) -> list[Scale]:
    """1–5 when HELM says the metric is an LLM jury's score: its display name ("ACI-Bench Jury
    Score", in the suite's schema.json or HELM's own schemas), or the run's metric spec
    (LLMJuryMetric: each juror rates 1–5, the score is their mean; MedHELM's runs give 1 to an
    unrated answer)."""
    if not metric:
        return []
    display = (schema.display_names.get(metric) if schema else None) or helm_table.metric(metric).get("display_name")
    if isinstance(display, str) and "jury score" in display.lower():
        return [Scale(1.0, 5.0, "helm display name", f'the HELM display name "{display}" (LLM jury ratings 1–5)')]
    if metric == _jury_metric(spec):
        return [Scale(1.0, 5.0, "helm jury metric", f"the run's {JURY_METRIC_CLASS} (LLM jury ratings 1–5)")]
    return []


def _jury_metric(spec: dict) -> str | None:
    """The metric an LLMJuryMetric of the run's metric specs writes."""
    for metric_spec in spec.get("metric_specs") or []:
        if not isinstance(metric_spec, dict):
            continue
        args = metric_spec.get("args") if isinstance(metric_spec.get("args"), dict) else {}
        if str(metric_spec.get("class_name", "")).endswith(JURY_METRIC_CLASS) and isinstance(args.get("metric_name"), str):
            return args["metric_name"]
    return None


def _request_failure(error: str | None, stats: dict[str, float], metric: str | None) -> tuple[str | None, str | None]:
    """(infrastructure error, verdict note) of a request that failed. HELM still scores a request
    the provider refused or blocked when its metrics can be computed (an empty completion gets
    exact_match 0): then it counts in HELM's own numbers, and here too, marked."""
    if not error:
        return None, None
    if metric and metric in stats:
        return None, f"the request failed ({error[:300]}), but HELM scored it: counted as HELM counts it"
    return error, None


def _harness_check(
    stats_file: Path, rows: list[dict], instances: list, metric: str | None, headline: helm_table.Headline | None,
    main_split: str | None, groups: list[str], hasher: "hashlib._Hash",
) -> dict:
    """HELM's headline (stats.json: the main metric's mean on the main split, unperturbed) against
    the same mean recomputed from the run's predictions."""
    compared = headline.metric if headline is not None else metric
    if not compared:
        return {}
    in_split = {i.instance_id for i in instances if i.split == main_split and i.perturbation is None}
    checked = [r for r in rows if r["instance_id"] in in_split and not r["infra_error"]]
    aggregate = _stats_aggregate(stats_file, compared, main_split, hasher)
    if aggregate is not None and headline is None:
        named = ", ".join(groups) or "none"
        aggregate = replace(aggregate, remark=f"no HELM schema names a headline this run reports (groups: {named}): checked on the metric judged")
    elif aggregate is not None and headline.where != SUITE_SCHEMA:
        aggregate = replace(aggregate, remark=f"headline {headline.metric} of group {headline.group} from {headline.where}")
    scores = [r["metrics"].get(compared) for r in checked]
    return agreement(
        aggregate, [s for s in scores if is_finite(s)], len({r["instance_id"] for r in checked}),
        judged=metric, headline=headline.metric if headline else None,
    )


SOURCE = Source(FORMAT, looks_like, read, count_runs, "a folder holding HELM runs (run_spec.json)",
                parts=helm_runs_below, work_bytes=record_bytes)
