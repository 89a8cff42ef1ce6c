"""Generated HELM runs for tests: the files `helm-run` writes (run_spec, scenario, instances,
display_predictions, per_instance_stats, stats), with stats.json computed from the per-instance
scores the way HELM aggregates them (the mean per metric and split, and num_instances)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Case:
    """One instance and the model's prediction for it."""

    id: str
    question: str
    output: str
    stats: dict[str, float]
    split: str = "test"
    refs: tuple[str, ...] = ("the answer",)
    failed: str | None = None  # the request failed with this error (scenario_state.json's result)


@dataclass
class Run:
    scenario: str
    model: str
    groups: list[str]
    cases: list[Case]
    args: dict = field(default_factory=dict)
    method: str = "generation"
    metric_specs: list[dict] = field(default_factory=list)
    # the run spec's own arguments when they are not the scenario's (WMT's language_pair=cs-en
    # becomes the scenario's source_language and target_language)
    name_args: dict | None = None
    shots: int = 0
    adapter: dict = field(default_factory=dict)  # more adapter_spec fields (instructions, prefixes)
    request_datetime: int | None = None  # written into scenario_state.json's results

    @property
    def name(self) -> str:
        args = "".join(f"{k}={v}," for k, v in (self.args if self.name_args is None else self.name_args).items())
        return f"{self.scenario}:{args}model={self.model.replace('/', '_')}"


def _stat(name: str, split: str, values: list[float]) -> dict:
    total = sum(values)
    return {"name": {"name": name, "split": split}, "count": len(values), "sum": total,
            "sum_squared": sum(v * v for v in values), "min": min(values), "max": max(values),
            "mean": total / len(values)}


def write_run(suite: Path, run: Run, state: bool = False) -> Path:
    """Write `run` into `suite` as helm-run does; `state` also writes scenario_state.json (which
    says which requests failed)."""
    folder = suite / run.name
    folder.mkdir(parents=True)
    spec = {
        "name": run.name,
        "scenario_spec": {"class_name": f"helm.benchmark.scenarios.{run.scenario}.Scenario", "args": run.args},
        "adapter_spec": {"method": run.method, "model": run.model, "model_deployment": run.model,
                         "max_train_instances": run.shots, "num_train_trials": 1, **run.adapter},
        "metric_specs": run.metric_specs,
        "groups": run.groups,
    }
    instances = [
        {"input": {"text": c.question}, "references": [{"output": {"text": r}, "tags": ["correct"] if n == 0 else []}
                                                       for n, r in enumerate(c.refs)],
         "split": c.split, "id": c.id}
        for c in run.cases
    ]
    display = [{"instance_id": c.id, "train_trial_index": 0, "predicted_text": c.output, "stats": c.stats} for c in run.cases]
    per_instance = [
        {"instance_id": c.id, "train_trial_index": 0,
         "stats": [_stat(name, c.split, [value]) for name, value in c.stats.items()]}
        for c in run.cases
    ]
    stats = []
    for split in sorted({c.split for c in run.cases}):
        in_split = [c for c in run.cases if c.split == split]
        for name in sorted({n for c in in_split for n in c.stats}):
            values = [c.stats[name] for c in in_split if name in c.stats]
            stats.append(_stat(name, split, values))
        stats.append({**_stat("num_instances", split, [1.0] * len(in_split)), "sum": float(len(in_split))})
    files = {
        "run_spec.json": spec, "scenario.json": {"name": run.scenario}, "instances.json": instances,
        "display_predictions.json": display, "per_instance_stats.json": per_instance, "stats.json": stats,
    }
    if state:
        files["scenario_state.json"] = {"request_states": [
            {"instance": inst, "train_trial_index": 0,
             "result": {"success": c.failed is None, "completions": [{"text": c.output}] if c.failed is None else [],
                        **({"error": c.failed} if c.failed else {}),
                        **({"request_datetime": run.request_datetime} if run.request_datetime else {})}}
            for inst, c in zip(instances, run.cases)
        ]}
    for name, content in files.items():
        (folder / name).write_text(json.dumps(content))
    return folder


def write_schema(suite: Path, groups: dict[str, tuple[str, str]], metrics: dict[str, str]) -> None:
    """A suite schema.json as helm-summarize writes it: each group's main metric and split, and
    each metric's display name."""
    schema = {
        "metrics": [{"name": name, "display_name": display, "lower_is_better": False} for name, display in metrics.items()],
        "run_groups": [{"name": g, "environment": {"main_name": main, "main_split": split}} for g, (main, split) in groups.items()],
        "models": [],
    }
    (suite / "schema.json").write_text(json.dumps(schema))
