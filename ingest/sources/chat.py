"""Chat messages as transcript steps, for every format that logs an agent as a list of
OpenAI-style messages (tau-bench trajectories, a custom `messages` column, Who&When histories,
Inspect messages when the log has no events).

A message is `{role, content, name?, tool_calls?, tool_call_id?}`: content is text or a list of
typed parts; `name` is the agent that spoke (multi-agent logs), except on a tool message, where
it names the tool. An assistant message with tool calls becomes its text (when it has any) and one
step per call; a tool message becomes a tool result. Inspect's own shapes are read too: a tool
call `{id, function: NAME, arguments: {...}, parse_error}` and a tool message's `function` and
`error: {type, message}`.
"""

from __future__ import annotations

from typing import Any, Callable

from ..errors import IngestError
from ..transcript import Transcript, content_text

ROLES = {"system": "system", "developer": "system", "user": "user", "human": "user", "assistant": "assistant",
         "ai": "assistant", "model": "assistant", "tool": "tool", "function": "tool", "ipython": "tool"}


def role_of(raw: Any, where: object) -> str:
    if not isinstance(raw, str) or not raw:
        raise IngestError(f"{where}: role: expected text, found {type(raw).__name__ if raw is not None else 'nothing'}")
    return ROLES.get(raw.lower(), raw)


def error_text(error: Any) -> str | None:
    """An error as the log gives it: text, or `{type, message}` as "type: message"."""
    if error is None or error is False:
        return None
    if isinstance(error, str):
        return error or None
    if isinstance(error, dict):
        kind, message = error.get("type"), error.get("message") or error.get("traceback")
        parts = [str(p) for p in (kind, message) if p not in (None, "")]
        return ": ".join(parts) or "error"
    return str(error)


def add_messages(transcript: Transcript, instance_id: str, trial: int, messages: Any, where: str, *,
                 ref: str = "messages", agent_key: str = "name", result_error: Callable[[str | None], str | None] | None = None,
                 **common: Any) -> None:
    """Every message of `messages` as steps of one prediction; `where` names the list in the log
    (for errors), `ref` how `source_ref` names it. `result_error`: a harness's own rule for a tool
    result that is an error although the message has no `error` field (tau-bench's "Error: …")."""
    if not isinstance(messages, list):
        raise IngestError(f"{where}: expected a list of messages, found {type(messages).__name__}")
    for n, message in enumerate(messages):
        add_message(transcript, instance_id, trial, message, f"{where}[{n}]", ref=f"{ref}[{n}]",
                    agent_key=agent_key, result_error=result_error, **common)


def add_message(transcript: Transcript, instance_id: str, trial: int, message: Any, where: str, *, ref: str,
                agent_key: str = "name", result_error: Callable[[str | None], str | None] | None = None,
                **common: Any) -> None:
    if not isinstance(message, dict):
        raise IngestError(f"{where}: expected a message object, found {type(message).__name__}")
    role = role_of(message.get("role"), where)
    text = content_text(message.get("content"), where)
    if role == "tool":
        transcript.add(
            instance_id, trial, "tool result", where=where, role="tool", text=text,
            tool_name=message.get("function") or message.get("name"), tool_call_id=message.get("tool_call_id"),
            error=error_text(message.get("error")) or (result_error(text) if result_error else None),
            source_ref=ref, **common)
        return
    agent = message.get(agent_key)
    calls = message.get("tool_calls") or []
    if message.get("function_call"):  # the legacy single call
        calls = [*calls, {"function": message["function_call"]}]
    if not isinstance(calls, list):
        raise IngestError(f"{where}: tool_calls: expected a list, found {type(calls).__name__}")
    if (text and text.strip()) or not calls:
        transcript.add(instance_id, trial, "message", where=where, role=role, agent=agent, text=text,
                       source_ref=ref, **common)
    for k, call in enumerate(calls):
        add_call(transcript, instance_id, trial, call, f"{where}.tool_calls[{k}]", role=role, agent=agent,
                 source_ref=f"{ref}.tool_calls[{k}]", **common)


def add_call(transcript: Transcript, instance_id: str, trial: int, call: Any, where: str, **fields: Any) -> None:
    """One tool call: OpenAI's `{id, function: {name, arguments}}` or Inspect's
    `{id, function: NAME, arguments, parse_error}`."""
    if not isinstance(call, dict):
        raise IngestError(f"{where}: expected a tool call object, found {type(call).__name__}")
    function = call.get("function")
    if isinstance(function, dict):
        name, arguments = function.get("name"), function.get("arguments")
    else:
        name, arguments = function if function is not None else call.get("name"), call.get("arguments")
    parse_error = call.get("parse_error")
    transcript.add(instance_id, trial, "tool call", where=where, tool_name=name, tool_call_id=call.get("id"),
                   arguments=arguments if arguments is not None else {},
                   error=f"malformed tool call: {parse_error}" if isinstance(parse_error, str) and parse_error else None,
                   **fields)


def said(messages: list, role: str, *, last: bool) -> str | None:
    """The text of the first (or last) message of `role` that has some — an agent's task is its
    first user message, its answer its last assistant message — read as `content_text` reads it."""
    order = range(len(messages) - 1, -1, -1) if last else range(len(messages))
    for n in order:
        message = messages[n]
        if isinstance(message, dict) and isinstance(message.get("role"), str) and ROLES.get(message["role"].lower()) == role:
            text = content_text(message.get("content"), f"[{n}]")
            if text and text.strip():
                return text
    return None
