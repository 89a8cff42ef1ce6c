"""Small agent transcripts for tests: Who&When-shaped log files (read by the real reader) and
stores seeded with transcripts of other shapes (structured tool calls with ids, limits, exit
statuses) through the store's own run writer and ingest.transcript.Transcript, as readers do."""

from __future__ import annotations

import json
from pathlib import Path

import store
from core.records import InstanceRecord, ParsedRun, PredictionRecord, Reference, RunRecord
from ingest.transcript import Transcript
from store.runs import replace_runs, stage_run


def who_when(path: Path, history: list[dict], *, question: str = "How many moons has Mars?", qid: str | None = None,
             truth: str = "2", is_correct: bool = False, agent: str | None = None, step: str | int | None = None,
             reason: str | None = None, level: str = "1", system_prompt: dict | None = None, **extra) -> Path:
    """One Who&When log file (keys in the order the dataset writes them)."""
    data = {"is_correct": is_correct, "question": question, "question_ID": qid or path.stem, "level": level,
            "ground_truth": truth, "history": history}
    if agent is not None or step is not None or reason is not None:
        data.update({"mistake_agent": agent, "mistake_step": step, "mistake_reason": reason})
    if system_prompt is not None:
        data["system_prompt"] = system_prompt
    data.update(extra)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def msg(name: str, content: str, role: str = "user") -> dict:
    """A history entry as CaptainAgent logs it (AutoGen's role, the agent in `name`)."""
    return {"content": content, "role": role, "name": name}


def ran(output: str, exit_code: int = 0) -> dict:
    """The executor's report of running the code of the message before."""
    state = "succeeded" if exit_code == 0 else "failed"
    return msg("Computer_terminal", f"exitcode: {exit_code} (execution {state})\nCode output: {output}")


def seed_transcripts(db, items: list[dict], *, model: str = "agent-model", dataset: str = "agent-bench",
                     run_id: str = "agents:r1", started_at=None, settings: dict | None = None) -> None:
    """One run of `items`, each {instance_id, is_correct, output (None: no answer), output_kind,
    steps: [{kind, text, agent, role, tool_name, tool_call_id, arguments, error}]} written as the
    ingest writes runs."""
    transcript = Transcript()
    instances, predictions = [], []
    for it in items:
        iid = it["instance_id"]
        instances.append(InstanceRecord(instance_id=iid, raw_instance_id=iid, input_text=it.get("input", f"task {iid}"),
                                        refs=[Reference(text=it.get("reference", "the answer"), correct=True)]))
        predictions.append(PredictionRecord(
            instance_id=iid, output_text=it.get("output"), is_correct=it["is_correct"],
            score=None if it["is_correct"] is None else float(it["is_correct"]), output_kind=it.get("output_kind")))
        for n, s in enumerate(it["steps"]):
            s = dict(s)
            kind = s.pop("kind")
            transcript.add(iid, 0, kind, where=f"{iid}[{n}]", **s)
    run = RunRecord(run_id=run_id, source_format="test-agent", source_path=f"/seed/{run_id}", content_hash=run_id,
                    run_name=run_id, model=model, dataset=dataset, main_metric="reward", metric_max=1.0,
                    started_at=started_at, settings=settings)
    staged = stage_run(ParsedRun(run=run, instances=instances, predictions=predictions, steps=transcript))
    with store.write_session(db) as con:
        con.execute("BEGIN")
        replace_runs(con, [staged])
        con.execute("COMMIT")
