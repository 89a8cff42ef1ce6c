"""Writing the store's outcomes as Every Eval Ever 0.3.0 files: per run, an aggregate
`{uuid}.json` and its `{uuid}_samples.jsonl`, laid out like the EEE datastore
(`OUT/data/<dataset>/<developer>/<model>/`), so that reading them back gives the same outcomes.

The aggregate holds the harness's own number on the run's main split, in its own metric and
scale (DESIGN.md, "Two numbers, never confused"): for a 0/1 metric or the log's own verdicts, the
pass rate (`metric_kind` `pass_rate`, Wilson interval); for a continuous metric (a 1–5 jury mean,
an F1), the mean score with its declared range and a Student t interval — and beside it a second
result, `faultline.failure_rate` (lower is better), the share of predictions under the analysis
threshold that picked which to analyse, named as that, with the threshold and rule in its
details. The instance records link to the first. A run where nothing has a verdict (an unscored
log) has no result, only its instance records. Each instance record
carries the main metric's score and the verdict; EEE requires both to be set, so a prediction
without them (unscored, or a request that failed) is written as 0/false with
`metadata.faultline_null` naming what was absent (and `error` set for a failed request), which
Faultline reads back as absent. `metadata` also carries the split, domain, raw id, sub-split,
perturbation and trial, as strings (the schema allows nothing else there).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from core.errors import IngestError
from core.verdicts import is_binary_rule
from store import read_connection, resolve_db_path
from store.export_queries import outcomes_of_run, runs_to_export, stored_names

SCHEMA_VERSION = "0.3.0"
FAILURE_RATE_ID = "faultline.failure_rate"


@dataclass
class ExportSummary:
    out: Path
    runs: int = 0
    predictions: int = 0
    seconds: float = 0.0

    def line(self) -> str:
        return (
            f"exported {self.runs:,} runs, {self.predictions:,} predictions as Every Eval Ever "
            f"{SCHEMA_VERSION} in {self.seconds:.1f} s into {self.out / 'data'}"
        )


def _component(name: str) -> str:
    """A path component the EEE datastore accepts: portable characters, never empty or dotted."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "unknown"


def _file_uuid(run_id: str) -> str:
    # the datastore requires a UUIDv4; derived from the run so a re-export rewrites the same files
    return str(uuid.UUID(bytes=hashlib.sha256(run_id.encode()).digest()[:16], version=4))


def _strings(values: dict[str, Any]) -> dict[str, str]:
    """EEE's additional_details and metadata hold strings only."""
    return {k: v if isinstance(v, str) else json.dumps(v) for k, v in values.items() if v is not None}


def _input_raw(row: dict) -> str:
    if row["input_text"] is not None:
        return row["input_text"]
    messages = json.loads(row["input_messages"]) if row["input_messages"] else []
    return "\n".join(f"{m.get('role')}: {m.get('content')}" for m in messages if isinstance(m, dict))


def _instance_record(run: dict, ids: dict[str, str], row: dict) -> dict:
    refs = json.loads(row["refs"]) if row["refs"] else []
    choices = json.loads(row["choices"]) if row["choices"] else None
    raw = _input_raw(row)
    reference = [r["text"] for r in refs if r.get("correct")]
    score, verdict, infra = row["score"], row["is_correct"], bool(row["infra_error"])
    missing = [name for name, value in (("score", score), ("is_correct", verdict)) if value is None]
    if score is not None and not math.isfinite(score):
        missing.insert(0, "score")
    output = row["output_text"]
    record: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "evaluation_id": ids["evaluation_id"],
        "model_id": run["model"],
        "evaluation_name": run["dataset"],
        "evaluation_result_id": ids["result_id"],
        "sample_id": row["instance_id"],
        "sample_hash": hashlib.sha256(
            json.dumps({"raw": raw, "reference": reference}, sort_keys=True, separators=(",", ":")).encode()
        ).hexdigest(),
        "interaction_type": "single_turn",
        "input": {"raw": raw, "reference": reference}
        | ({"choices": list(choices.values())} if choices else {}),
        "output": {"raw": [output] if output is not None else []}
        | ({"reasoning_trace": [row["thinking_text"]]} if row["thinking_text"] else {}),
        "answer_attribution": [
            {
                "turn_idx": 0,
                "source": "output.raw",
                "extracted_value": row["mapped_output"] or output,
                "extraction_method": run["main_metric"] or "unknown",
                "is_terminal": True,
            }
        ] if output is not None else [],
        "evaluation": {
            "score": float(score) if "score" not in missing else 0.0,
            "is_correct": bool(verdict) if verdict is not None else False,
        },
        "metadata": _strings({
            "domain": run["domain"],
            "split": row["split"],
            "raw_instance_id": row["raw_instance_id"],
            "sub_split": row["sub_split"],
            "perturbation": row["perturbation"],
            "train_trial_index": str(row["train_trial_index"]),
            "infra_error": "true" if infra else None,
            "faultline_null": ",".join(dict.fromkeys(missing)) or None,
        }),
    }
    if infra:
        record["error"] = row["error_message"] or "the request failed"
    return record


def _result(run: dict, ids: dict[str, str], rows: list[dict]) -> list[dict]:
    """The run's own number on its main split as EEE evaluation results (see the module doc);
    none when nothing has a verdict."""
    from core.significance import t_interval, wilson

    split = run["main_split"]
    judged = [r for r in rows if r["is_correct"] is not None and (split is None or r["split"] == split)]
    if not judged:
        return []
    n = len(judged)
    passed = sum(bool(r["is_correct"]) for r in judged)
    scores = [r["score"] for r in judged if r["score"] is not None and math.isfinite(r["score"])]
    low, high = run["metric_min"], run["metric_max"]
    binary = is_binary_rule(run["main_metric"], low, high, run["scale_source"])
    continuous = (not binary and len(scores) == n and low is not None and high is not None and high > low
                  and (run["pass_threshold"] is not None or any(s not in (0.0, 1.0) for s in scores)))
    metric = run["main_metric"] or "is_correct"
    source = {"dataset_name": run["dataset"], "source_type": "other",
              "additional_details": _strings({"domain": run["domain"], "main_split": split})}
    if not continuous:
        ci = wilson(passed, n)
        return [{
            "evaluation_result_id": ids["result_id"],
            "evaluation_name": run["dataset"],
            "source_data": source,
            "metric_config": {
                "evaluation_description": f"share of predictions that pass: {run['verdict_rule'] or metric}",
                "metric_id": metric, "metric_name": f"{metric} (pass rate)", "metric_kind": "pass_rate",
                "metric_unit": "proportion", "lower_is_better": False, "score_type": "binary",
                "min_score": 0.0, "max_score": 1.0,
                "additional_details": _strings({"headline_metric": run["headline_metric"]}),
            },
            "score_details": {"score": passed / n, "uncertainty": {
                "num_samples": n, **_interval(ci, "Wilson score interval")}},
        }]
    mean = sum(scores) / n
    m2 = sum((s - mean) ** 2 for s in scores)
    ci = tuple(min(max(v, low), high) if v == v else v for v in t_interval(n, mean, m2))
    failed = n - passed
    rule = run["verdict_rule"] or f"pass when {metric} reaches {run['pass_threshold']}"
    return [
        {
            "evaluation_result_id": ids["result_id"],
            "evaluation_name": run["dataset"],
            "source_data": source,
            "metric_config": {
                "evaluation_description": f"mean {metric} per prediction (the harness's own number)",
                "metric_id": metric, "metric_name": metric, "metric_kind": "mean",
                "lower_is_better": bool(run["lower_is_better"]), "score_type": "continuous",
                "min_score": float(low), "max_score": float(high),
                "additional_details": _strings({"headline_metric": run["headline_metric"]}),
            },
            "score_details": {"score": mean, "uncertainty": {
                "num_samples": n,
                **({"standard_deviation": math.sqrt(m2 / (n - 1)),
                    "standard_error": {"value": math.sqrt(m2 / (n - 1) / n), "method": "analytic"}} if n > 1 else {}),
                **_interval(ci, "Student t")}},
        },
        {
            "evaluation_result_id": f"{ids['result_id']}/{FAILURE_RATE_ID}",
            "evaluation_name": run["dataset"],
            "source_data": source,
            "metric_config": {
                "evaluation_description": (
                    "share of predictions under the analysis threshold (Faultline's choice of which "
                    "predictions to analyse, ErrorMap's 0.7 of the range unless set; not the harness's number)"),
                "metric_id": FAILURE_RATE_ID, "metric_name": "failure rate under the analysis threshold",
                "metric_kind": "failure_rate", "metric_unit": "proportion", "lower_is_better": True,
                "score_type": "continuous", "min_score": 0.0, "max_score": 1.0,
                "additional_details": _strings({
                    "metric": metric, "analysis_threshold": run["pass_threshold"], "rule": rule,
                    "metric_min": low, "metric_max": high, "main_metric_lower_is_better": run["lower_is_better"]}),
            },
            "score_details": {"score": failed / n, "uncertainty": {
                "num_samples": n, **_interval(wilson(failed, n), "Wilson score interval")}},
        },
    ]


def _interval(ci: tuple[float, float], method: str) -> dict:
    low, high = ci
    if low != low or high != high:  # NaN: no interval (fewer than two scores, or all alike)
        return {}
    return {"confidence_interval": {"lower": low, "upper": high, "confidence_level": 0.95, "method": method}}


def _aggregate(run: dict, ids: dict[str, str], rows: list[dict], sidecar: dict) -> dict:
    developer = run["model"].split("/", 1)[0] if "/" in run["model"] else "unknown"
    started = {"evaluation_timestamp": run["started_at"].isoformat()} if run["started_at"] else {}
    return {
        "schema_version": SCHEMA_VERSION,
        "evaluation_id": ids["evaluation_id"],
        **started,  # when the run was made: it orders reruns when read back
        "retrieved_timestamp": str(time.time()),
        "source_metadata": {
            "source_name": "Faultline",
            "source_type": "evaluation_run",
            "source_organization_name": "Faultline export",
            "evaluator_relationship": "other",
            "additional_details": _strings({
                "faultline_run_id": run["run_id"], "run_name": run["run_name"], "variant": run["variant"],
                "settings": run["settings"],
            }),
        },
        "eval_library": {"name": run["source_format"], "version": "unknown"},
        "model_info": {
            "name": run["model"],
            "id": run["model"],
            "developer": developer,
            "additional_details": {"deployment_type": "unknown", "model_availability": "unknown"},
        },
        "evaluation_results": _result(run, ids, rows),
        "detailed_evaluation_results": sidecar,
    }


def _write_atomically(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _check_names(asked: Sequence[str], known: list[str], flag: str) -> None:
    unknown = [n for n in asked if n not in known]
    if unknown:
        raise IngestError(f"{flag} {' '.join(unknown)}: not in the store; it has: {', '.join(known) or 'nothing yet'}")


def export_eee(
    out: str | Path, db: str | Path | None = None, models: Sequence[str] = (), datasets: Sequence[str] = ()
) -> ExportSummary:
    started = time.perf_counter()
    out = Path(out)
    summary = ExportSummary(out=out)
    # run by run inside one read-only connection: memory stays bounded by the largest run
    with read_connection(db) as con:
        known_models, known_datasets = stored_names(con)
        _check_names(models, known_models, "--models")
        _check_names(datasets, known_datasets, "--datasets")
        runs = runs_to_export(con, models, datasets)
        if not runs:
            raise IngestError(f"{resolve_db_path(db)}: no runs to export")
        for run in runs:
            rows = outcomes_of_run(con, run["run_id"])
            _write_run(out, run, rows)
            summary.runs += 1
            summary.predictions += len(rows)
    summary.seconds = time.perf_counter() - started
    return summary


def _write_run(out: Path, run: dict, rows: list[dict]) -> None:
    """Write one run's aggregate and samples files."""
    file_uuid = _file_uuid(run["run_id"])
    folder = Path("data", _component(run["dataset"]), *(_component(p) for p in _model_parts(run["model"])))
    ids = {
        "evaluation_id": f"{run['dataset']}/{run['model']}/{run['run_id']}",
        "result_id": f"{run['dataset']}/{run['domain']}" if run["domain"] else run["dataset"],
    }
    lines = b"".join(json.dumps(_instance_record(run, ids, row), ensure_ascii=False).encode() + b"\n" for row in rows)
    sidecar = {
        "format": "jsonl",
        "file_path": f"{folder.as_posix()}/{file_uuid}_samples.jsonl",
        "hash_algorithm": "sha256",
        "checksum": hashlib.sha256(lines).hexdigest(),
        "total_rows": len(rows),
    }
    aggregate = _aggregate(run, ids, rows, sidecar)
    target = out / folder
    target.mkdir(parents=True, exist_ok=True)
    _write_atomically(target / f"{file_uuid}_samples.jsonl", lines)
    _write_atomically(target / f"{file_uuid}.json", json.dumps(aggregate, indent=2, ensure_ascii=False).encode())


def _model_parts(model: str) -> tuple[str, str]:
    """(developer, model) directories: `groq/llama3-8b-8192` → groq, llama3-8b-8192."""
    developer, sep, name = model.partition("/")
    return (developer, name.replace("/", "_")) if sep else ("unknown", model)
