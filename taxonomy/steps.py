"""How the transcript analysts read steps (rows of `transcript_steps`, as dicts): the text a quote
is checked against, who acted, and the agent's actions paired with what they returned.

An *action* is a tool call (paired with its result by `tool_call_id`, else with the tool result
that follows it), or a message that is answered by a tool result carrying no call id — AutoGen's
code execution: an agent writes code in a message and an executor runs it. Its *signature* is the
tool and its arguments (canonical JSON when they parse), or the code blocks of the message, or the
message itself when it has none.

`as_read` reads what a log keeps as plain messages the way AutoGen means them (Who&When, custom
`messages` columns of AutoGen group chats): an executor's `exitcode: N (execution
succeeded|failed)` report is a tool result (with an error, the exception it printed, when N is
not 0), and its notice that a turn held no code is a system event. Step numbers and texts stay the
stored ones, so every index and quote still resolves to a stored step.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from .quotes import verified

CODE_TOOL = "code execution"  # the tool of an action whose code a tool result without a call id ran
_FENCE = re.compile(r"```[^\n`]*\n(.*?)```", re.S)
_SPACE = re.compile(r"\s+")


def quotable(step: dict) -> str:
    """The text of a step a quote from it must occur in: its text, its arguments (when the text
    is not already them) and its error, one per line."""
    parts = [step.get("text") or ""]
    args = step.get("tool_arguments")
    if args and args not in parts[0]:
        parts.append(args)
    if step.get("error"):
        parts.append(step["error"])
    return "\n".join(p for p in parts if p)


def quote_resolves(step: dict, quote: str | None) -> bool:
    """Whether `quote` occurs in the step (quotes.py's rule: verbatim, any whitespace alike)."""
    return bool(verified(quotable(step), quote))


def excerpt(step: dict, limit: int = 160) -> str | None:
    """A verbatim quote from a step: its first non-blank line (of its text, else its arguments or
    error), cut at a word boundary within `limit` characters."""
    for source in (step.get("text"), step.get("tool_arguments"), step.get("error")):
        for line in (source or "").splitlines():
            line = line.strip()
            if line:
                if len(line) <= limit:
                    return line
                cut = line[:limit].rsplit(" ", 1)[0]
                return cut if len(cut) >= limit // 2 else line[:limit]
    return None


def normal(text: str | None) -> str:
    return _SPACE.sub(" ", (text or "").strip())


def agents_of(steps: list[dict]) -> list[str]:
    """The agents the transcript names, in order of first appearance."""
    return list(dict.fromkeys(s["agent"] for s in steps if s.get("agent")))


def is_agent_step(step: dict) -> bool:
    """A step an agent took (a message or a tool call by a model), not a tool's result, an error,
    a system event or a person's message. In a multi-agent chat a named agent's message may be
    logged with the role its peers received it in (`user`): it is still the agent's."""
    if step.get("kind") not in ("message", "tool call"):
        return False
    role = step.get("role")
    return role in (None, "assistant") or (role == "user" and bool(step.get("agent")))


_EXECUTION = re.compile(r"\A\s*exitcode:\s*(-?\d+)\s*\(execution (?:succeeded|failed)[^)]*\)")
_NO_CODE = re.compile(r"\A\s*There is no code from the last \d+ messages? for me to execute")
_EXCEPTION = re.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit)\b.*$", re.M)


def as_read(steps: list[dict]) -> list[dict]:
    """The steps with AutoGen's execution reports read as tool results and its no-code notices as
    system events (see the module docstring); other steps as stored."""
    out = []
    for s in steps:
        text = s.get("text") or ""
        if s.get("kind") == "message" and (m := _EXECUTION.match(text)):
            error = s.get("error")
            if error is None and m.group(1) != "0":
                raised = _EXCEPTION.findall(text)
                error = raised[-1].strip() if raised else m.group(0).strip()
            s = {**s, "kind": "tool result", "role": "tool", "error": error}
        elif s.get("kind") == "message" and _NO_CODE.match(text):
            s = {**s, "kind": "system event", "role": "environment"}
        out.append(s)
    return out


@dataclass(frozen=True)
class Action:
    index: int  # the step of the call (or of the message whose code ran)
    agent: str | None
    tool: str | None
    signature: str
    result: int | None  # the step of its result
    result_text: str
    error: str | None  # the result's error (or the call's own, e.g. malformed arguments)


def _signature(step: dict) -> str:
    if step["kind"] == "tool call":
        args = step.get("tool_arguments")
        if args:
            try:
                args = json.dumps(json.loads(args), sort_keys=True)
            except ValueError:
                pass
        return f"{step.get('tool_name') or ''}|{normal(args or step.get('text'))}"
    code = _FENCE.findall(step.get("text") or "")
    return "code|" + ("\n".join(normal(c) for c in code) if code else normal(step.get("text")))


def actions(steps: list[dict]) -> list[Action]:
    """Every action of the transcript, in order, with its result (see the module docstring)."""
    by_id: dict[str, int] = {}
    for s in steps:
        if s["kind"] == "tool result" and s.get("tool_call_id") and s["tool_call_id"] not in by_id:
            by_id[s["tool_call_id"]] = s["step_index"]
    out = []
    for i, s in enumerate(steps):
        result = None
        if s["kind"] == "tool call":
            if s.get("tool_call_id") in by_id and by_id[s["tool_call_id"]] > s["step_index"]:
                result = by_id[s["tool_call_id"]]
            elif i + 1 < len(steps) and steps[i + 1]["kind"] == "tool result" and not steps[i + 1].get("tool_call_id"):
                result = steps[i + 1]["step_index"]
            tool = s.get("tool_name")
        elif (s["kind"] == "message" and is_agent_step(s) and i + 1 < len(steps)
              and steps[i + 1]["kind"] == "tool result" and not steps[i + 1].get("tool_call_id")):
            result, tool = steps[i + 1]["step_index"], steps[i + 1].get("tool_name") or CODE_TOOL
        else:
            continue
        r = steps[result - steps[0]["step_index"]] if result is not None else None
        out.append(Action(s["step_index"], s.get("agent"), tool, _signature(s), result,
                          normal(r.get("text")) if r else "", s.get("error") or (r.get("error") if r else None)))
    return out
