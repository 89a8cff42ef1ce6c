"""Two agent models on the same tasks, seeded through the store's own run writer (tests/
transcripts_gen.py): A ignores a tool error early in each run it fails, B late; one task only A
ran, one only B, and one both passed. Used by the agent comparison's tests and screenshots."""

from __future__ import annotations

from transcripts_gen import seed_transcripts

TASK = {"kind": "message", "text": "Find the flag in /challenge.", "role": "user"}


def _call(tool: str, cid: str) -> dict:
    return {"kind": "tool call", "tool_name": tool, "arguments": {"cmd": f"cat /challenge/{cid}"},
            "tool_call_id": cid, "agent": "solver", "role": "assistant"}


def _result(tool: str, cid: str, error: str | None) -> dict:
    return {"kind": "tool result", "tool_name": tool, "text": error or "ok", "tool_call_id": cid, "error": error,
            "role": "tool"}


def _say(text: str) -> dict:
    return {"kind": "message", "text": text, "agent": "solver", "role": "assistant"}


def ignored_error(tool: str, before: int, after: int, n: int) -> list[dict]:
    """`before` working steps (a tool call that works and its result), then a tool error nobody
    takes up, the step that carries on (the one named), then `after` more working steps."""
    steps = [TASK]
    for i in range(before):
        steps += [_call(tool, f"ok{n}-{i}"), _result(tool, f"ok{n}-{i}", None)]
    steps += [_call(tool, f"bad{n}"), _result(tool, f"bad{n}", "Permission denied"), _say(f"The flag is {n}.")]
    for i in range(after):
        steps += [_call("ls", f"ls{n}-{i}"), _result("ls", f"ls{n}-{i}", None)]
    return steps


def passing(n: int) -> list[dict]:
    return [TASK, _call("ls", f"p{n}"), _result("ls", f"p{n}", None), _say(f"picoCTF{{{n}}}")]


# (task, A's steps before/after its error, B's) — None: that model passed the task
SHAPE = {f"t{n}": ((0, 4 + n), (4 + n, 0)) for n in range(8)}
SHAPE["t8"] = (None, None)


def seed_pair(db, a: str = "org/agent-a", b: str = "org/agent-b") -> None:
    for model, side, tool, run_id in ((a, 0, "bash", "agents:a"), (b, 1, "python", "agents:b")):
        items = []
        for task, shapes in SHAPE.items():
            shape = shapes[side]
            steps = passing(int(task[1:])) if shape is None else ignored_error(tool, *shape, int(task[1:]))
            items.append({"instance_id": task, "is_correct": shape is None, "output": "x", "steps": steps})
        own = "only-a" if side == 0 else "only-b"  # a task the other model did not run
        items.append({"instance_id": own, "is_correct": False, "output": "x", "steps": ignored_error(tool, 0, 0, 99)})
        seed_transcripts(db, items, model=model, run_id=run_id)
