"""Inspect AI logs written by the tests: an .eval archive of samples graded by one scorer (values
as given: letters, numbers, text, dicts), and an agent's sample whose events become transcript
steps, with the steps the store holds of it (`EXPECTED`, as `STEPS` selects them)."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path


def inspect_log(path: Path, task: str, values: list, *, results: list | None = None, model: str = "org/m",
                run_id: str = "run", created: str = "2025-03-01T10:00:00+00:00", extra_scores=None) -> Path:
    """An Inspect .eval archive: one sample per value, graded by the scorer `grader`."""
    header = {
        "version": 2, "status": "success",
        "eval": {"task": task, "task_id": f"{task}-{run_id}", "run_id": run_id, "model": model, "created": created},
        "results": {"total_samples": len(values), "completed_samples": len(values), "scores": results or []},
    }
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("header.json", json.dumps(header))
        for n, value in enumerate(values):
            scores = {"grader": {"value": value, "explanation": "graded"}, **((extra_scores or {}).get(n, {}))}
            sample = {"id": n, "epoch": 1, "input": f"question {n}", "target": "answer",
                      "output": {"completion": f"answer {n}"}, "scores": scores}
            archive.writestr(f"samples/{n}_epoch_1.json", json.dumps(sample))
    return path


A1, A2 = "a" * 32, "b" * 32


def _model(content, calls=(), tokens=(10, 5), model="openai/gpt-4o"):
    return {"event": "model", "model": model, "timestamp": "2025-03-05T13:37:01-08:00", "working_time": 1.5,
            "input": [], "output": {"choices": [{"message": {"role": "assistant", "content": content,
                                                             "tool_calls": list(calls)}, "stop_reason": "tool_calls"}],
                                    "usage": {"input_tokens": tokens[0], "output_tokens": tokens[1]}}}


def _call(cid, name, args):
    return {"id": cid, "function": name, "arguments": args, "type": "function"}


def agent_sample() -> dict:
    system = {"role": "system", "content": "You are an agent."}
    user = {"role": "user", "content": f"attachment://{A1}"}
    first = _model("Let me look.", [_call("c1", "bash", {"cmd": f"attachment://{A2}"})])
    first["input"] = [system, user]
    second = _model("", [_call("c2", "python", {"code": "1/0"})])
    second["input"] = [system, user, {"role": "assistant", "content": "Let me look."}, {"role": "tool", "content": "x"},
                       {"role": "user", "content": "Please proceed."}]
    events = [
        {"event": "sample_init"},
        first,
        {"event": "tool", "id": "c1", "function": "bash", "arguments": {}, "result": "file.txt", "working_time": 0.2},
        second,
        {"event": "tool", "id": "c2", "function": "python", "result": "",
         "error": {"type": "timeout", "message": "took too long"}},
        {"event": "span_begin", "id": "s1", "type": "agent", "name": "researcher"},
        _model("Sub-agent answer."),
        {"event": "span_end", "id": "s1"},
        {"event": "span_begin", "id": "s2", "type": "scorer", "name": "judge"},
        _model("JUDGE: correct"),
        {"event": "span_end", "id": "s2"},
        {"event": "sample_limit", "type": "token", "message": "Token limit exceeded"},
        {"event": "error", "error": {"message": "sandbox died", "traceback": "..."}},
    ]
    return {"id": 7, "epoch": 1, "input": f"attachment://{A1}", "target": "42",
            "messages": [system, user, {"role": "assistant", "content": "Let me look.",
                                        "tool_calls": [_call("c1", "bash", {"cmd": "ls"})]}],
            "output": {"completion": "done", "choices": [{"message": {"role": "assistant", "content": "done"}}]},
            "scores": {"match": {"value": "I"}}, "events": events,
            "attachments": {A1: "What is six times seven? Work in the sandbox.", A2: "ls -la " + "x" * 60}}


def write_eval(path, samples):
    header = {"version": 2, "status": "success", "eval": {"task": "agentic", "model": "openai/gpt-4o", "task_id": "t",
                                                          "run_id": "r"},
              "results": {"total_samples": len(samples), "completed_samples": len(samples),
                          "scores": [{"name": "match", "metrics": {"accuracy": {"value": 0.0}}}]}}
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("header.json", json.dumps(header))
        for s in samples:
            archive.writestr(f"samples/{s['id']}_epoch_{s['epoch']}.json", json.dumps(s))
    return path


STEPS = "SELECT step_index, agent, role, kind, tool_name, text, text_chars, error, depth FROM transcript_steps ORDER BY step_index"
EXPECTED = [
    (0, None, "system", "message", None, "You are an agent.", 17, None, 0),
    (1, None, "user", "message", None, "What is six times seven? Work in the sandbox.", 45, None, 0),
    (2, None, "assistant", "message", None, "Let me look.", 12, None, 0),
    (3, None, "assistant", "tool call", "bash", json.dumps({"cmd": "ls -la " + "x" * 60}, separators=(",", ":")), 77, None, 0),
    (4, None, "tool", "tool result", "bash", "file.txt", 8, None, 0),
    (5, None, "user", "message", None, "Please proceed.", 15, None, 0),  # added to the second call's input
    (6, None, "assistant", "tool call", "python", '{"code":"1/0"}', 14, None, 0),
    (7, None, "tool", "tool result", "python", "", 0, "timeout: took too long", 0),
    (8, "researcher", "system", "system event", None, "agent researcher starts", 23, None, 1),
    (9, "researcher", "assistant", "message", None, "Sub-agent answer.", 17, None, 1),
    # the scorer's own model call is not the agent's: left out
    (10, None, "system", "system event", None, "token limit reached: Token limit exceeded", 41, None, 0),
    (11, None, "system", "error", None, "sandbox died", 12, "sandbox died", 0),
]
