"""SWE-agent trajectories: one `<instance_id>.traj` per instance, `{trajectory: [{thought, action,
observation, response, execution_time?}], history, info: {exit_status, submission, model_stats},
replay_config?}`.

A folder of trajectories is one run (SWE-agent 1.x puts each in a folder named after its
instance: their common parent is the run). Steps: the system and task messages of `history`
before the agent's first answer (demonstrations left to the prompt), then per trajectory entry
the thought (a message), the action (a tool call, named by its command's first word) and the
observation (its result), and last the exit status (a system event: `exit_cost`, `exit_context`,
`exit_format` are limits reached). The submission is the prediction's output.

A trajectory carries no verdict: SWE-bench's evaluation decides. Give its report with
`--verdicts FILE`; without one the predictions are stored unscored and the summary says so. The
model is --model, else the trajectory's `replay_config`, else `args.yaml` beside it; the dataset
is --dataset, else the `replay_config`/`args.yaml` data path.

Pipeline: load → identity → instances and predictions with steps → verdict.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Iterator

from core.names import question_hash
from core.records import InstanceRecord, ParsedRun, PredictionRecord, Skipped

from ..errors import IngestError
from ..jsonio import expect, load_json, parse_json
from ..options import ReadOptions
from ..source import Source
from ..transcript import Transcript, content_text
from ..walk import files_by_folder, matching_files
from .agent import Verdicts, agent_run, binary_verdict_fields, require, runs_by_folder
from .chat import role_of

FORMAT = "swe-agent"
LIMIT_EXITS = {"exit_cost": "cost limit", "exit_context": "context window", "exit_format": "format errors",
               "exit_api": "API errors", "exit_error": "an error", "early_exit": "an early exit"}


def _is_traj(path: Path) -> bool:
    return path.suffix.lower() == ".traj"


def looks_like(path: Path) -> bool:
    return bool(matching_files(path, _is_traj))


def _run_folder(trajectory: Path) -> Path:
    """A trajectory's run folder (SWE-agent 1.x: <run>/<instance>/<instance>.traj)."""
    return trajectory.parent.parent if trajectory.parent.name == trajectory.stem else trajectory.parent


def _groups(path: Path) -> dict[Path, list[Path]]:
    """Trajectories by run folder."""
    return files_by_folder(path, _is_traj, _run_folder)


def count_runs(path: Path) -> int:
    return len(_groups(path))


def read(path: Path, options: ReadOptions) -> Iterator[ParsedRun | Skipped]:
    verdicts = Verdicts(options.verdicts)
    yield from runs_by_folder(path, _groups(path), lambda run_dir, trajectories: read_run(
        path if path.is_file() else run_dir, trajectories, options, verdicts), "SWE-agent trajectory")


def read_run(run_dir: Path, trajectories: list[Path], options: ReadOptions, verdicts: Verdicts) -> ParsedRun:
    """`run_dir`: the run's folder (or the one trajectory named), which names the run."""
    hasher = hashlib.sha256()
    transcript = Transcript()
    instances, predictions = [], []
    model = dataset = None
    for file in sorted(trajectories):
        traj = expect(load_json(file, hasher), dict, str(file))
        config = _config(traj, file)
        model = model or options.model or _model(config)
        dataset = dataset or options.dataset or _dataset(config)
        instance, prediction = _trajectory(traj, file, transcript, verdicts)
        instances.append(instance)
        predictions.append(prediction)
    model = require(model, run_dir, "SWE-agent trajectories name no model (no replay_config, no args.yaml beside "
                    "them)", "--model NAME")
    dataset = require(dataset, run_dir, "SWE-agent trajectories name no dataset (no replay_config, no args.yaml "
                      "beside them)", "--dataset NAME")
    judged = sum(p.is_correct is not None for p in predictions)
    notes = []
    if judged < len(predictions):
        notes.append(f"{run_dir}: {len(predictions) - judged} of {len(predictions)} SWE-agent trajectories have no "
                     "verdict (a trajectory carries none): stored unscored; give SWE-bench's report with --verdicts FILE")
    verdict = binary_verdict_fields("resolved", "swe-bench report", verdicts.describe()) if judged else \
        binary_verdict_fields("resolved", "none", None)
    return agent_run(fmt=FORMAT, key=str(run_dir.resolve()), path=run_dir, content_hash=hasher.hexdigest(), model=model,
                     dataset_raw=dataset, options=options, instances=instances, predictions=predictions,
                     transcript=transcript, verdict=verdict, notes=notes, settings={})


def _config(traj: dict, file: Path) -> dict:
    """The run's configuration: the trajectory's replay_config (JSON text or an object), else
    args.yaml or <instance>.config.yaml beside it."""
    replay = traj.get("replay_config")
    if isinstance(replay, str) and replay.strip():
        replay = parse_json(replay, f"{file}: replay_config")
    if isinstance(replay, dict):
        return replay
    for name in ("args.yaml", f"{file.stem}.config.yaml"):
        for folder in (file.parent, file.parent.parent):
            candidate = folder / name
            if candidate.is_file():
                import yaml

                try:
                    loaded = yaml.safe_load(candidate.read_text(encoding="utf-8"))
                except (yaml.YAMLError, UnicodeDecodeError) as exc:
                    raise IngestError(f"{candidate}: not readable YAML ({exc})") from None
                return loaded if isinstance(loaded, dict) else {}
    return {}


def _dig(value: Any, *keys: str) -> Any:
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _model(config: dict) -> str | None:
    for path in (("agent", "model", "name"), ("agent", "model", "model_name"), ("model", "model_name")):
        found = _dig(config, *path)
        if isinstance(found, str) and found:
            return found
    return None


def _dataset(config: dict) -> str | None:
    for path in (("env", "deployment", "dataset_name"), ("instances", "dataset_name"), ("environment", "data_path"),
                 ("instances", "path")):
        found = _dig(config, *path)
        if isinstance(found, str) and found:
            return found
    return None


def _trajectory(traj: dict, file: Path, transcript: Transcript, verdicts: Verdicts) -> tuple[InstanceRecord, PredictionRecord]:
    iid = file.stem
    where = str(file)
    history = traj.get("history") if isinstance(traj.get("history"), list) else []
    task = None
    for n, message in enumerate(history):
        if not isinstance(message, dict):
            raise IngestError(f"{where}: history[{n}]: expected a message object, found {type(message).__name__}")
        role = role_of(message.get("role"), f"{where}: history[{n}]")
        if role == "assistant":
            break
        if message.get("is_demo"):
            continue
        text = content_text(message.get("content"), f"{where}: history[{n}]")
        task = text if role == "user" and task is None else task
        transcript.add(iid, 0, "message", where=f"{where}: history[{n}]", role=role, text=text,
                       agent=message.get("agent"), source_ref=f"history[{n}]")
    steps = expect(traj.get("trajectory", []), list, f"{where}: trajectory")
    for n, entry in enumerate(steps):
        at = f"{where}: trajectory[{n}]"
        entry = expect(entry, dict, at)
        thought = entry.get("thought")
        if isinstance(thought, str) and thought.strip():
            transcript.add(iid, 0, "message", where=at, role="assistant", text=thought, source_ref=f"trajectory[{n}].thought")
        action = entry.get("action")
        if not isinstance(action, str):
            raise IngestError(f"{at}: action: expected text, found {type(action).__name__}")
        tool = action.strip().split(None, 1)[0] if action.strip() else None
        transcript.add(iid, 0, "tool call", where=at, role="assistant", tool_name=tool, arguments={"command": action},
                       text=action, source_ref=f"trajectory[{n}].action")
        transcript.add(iid, 0, "tool result", where=at, role="environment", tool_name=tool,
                       text=content_text(entry.get("observation"), at), seconds=entry.get("execution_time"),
                       source_ref=f"trajectory[{n}].observation")
    info = traj.get("info") if isinstance(traj.get("info"), dict) else {}
    exit_status = info.get("exit_status")
    if isinstance(exit_status, str) and exit_status:
        limit = next((what for key, what in LIMIT_EXITS.items() if exit_status.startswith(key)), None)
        text = f"exit status: {exit_status}" + (f" (stopped by {limit})" if limit else "")
        transcript.add(iid, 0, "system event", where=f"{where}: info.exit_status", role="system", text=text,
                       source_ref="info.exit_status")
    submission = info.get("submission") if isinstance(info.get("submission"), str) else None
    stats = info.get("model_stats") if isinstance(info.get("model_stats"), dict) else {}
    resolved, note = verdicts.get(iid)
    instance = InstanceRecord(instance_id=iid, raw_instance_id=iid, input_text=task, question_hash=question_hash(task))
    prediction = PredictionRecord(
        instance_id=iid, output_text=submission, score=None if resolved is None else float(resolved),
        is_correct=resolved, verdict_note=note,
        output_tokens=stats.get("tokens_received") if isinstance(stats.get("tokens_received"), int) else None,
        finish_reason=exit_status if isinstance(exit_status, str) else None)
    return instance, prediction


SOURCE = Source(FORMAT, looks_like, read, count_runs, "SWE-agent trajectories (.traj)")
