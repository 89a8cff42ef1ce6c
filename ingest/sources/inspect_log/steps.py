"""An Inspect sample's transcript: its events (model calls, tool calls with their arguments and
results, errors, limits, sub-agents) as steps, else its messages.

Messages and events hold the same conversation twice, so one of them is read, never both: when
the sample has events they are the transcript (they also hold tokens, timings, errors and
sub-agents, which messages lack), and messages only add what no event holds — a user message a
solver appended after the last model call. Each model call's input repeats the conversation so
far: only the system and user messages it adds (the task, a solver's "please proceed") become
steps; a call whose input is shorter than the one before it means the conversation was cut
(compaction, truncation), which becomes a system event. Events inside a scorer (an LLM judge's
own calls) are not the agent's: they are left out. Texts may be `attachment://<hash>` references
into the sample's attachments, which come last in the file: steps are held as `Pending` until
the attachments are read, their inline texts already cut.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from ...transcript import Transcript, content_text
from ..chat import error_text, role_of

ATTACHMENT = "attachment://"
# Event types that are bookkeeping, not steps: state and store diffs, solver/scorer step markers,
# sandbox calls made by tools, log lines, scores (the verdict), the sample's initial state.
BOOKKEEPING = {"state", "store", "step", "sandbox", "logger", "score", "score_edit", "sample_init", "span_end"}


@dataclass
class Pending:
    """A step waiting for its attachment references to be resolved."""

    kind: str
    fields: dict[str, Any]
    full_chars: int | None = None


@dataclass
class _Span:
    id: str | None
    agent: str | None
    depth: int
    scorer: bool = False
    prev_input: int | None = None  # how many messages the last model call of this span was given


@dataclass
class SampleSteps:
    """Collects one sample's steps while its events are read (possibly one at a time)."""

    cap: int
    steps: list[Pending] = field(default_factory=list)
    refs: set[str] = field(default_factory=set)
    ignored: set[str] = field(default_factory=set)
    saw_events: bool = False
    saw_limit: bool = False
    saw_error: bool = False
    _spans: dict[str | None, _Span] = field(default_factory=dict)
    _stack: list[_Span] = field(default_factory=list)
    _scoring: int = 0  # inside a scorer's solver-style step markers (older logs)
    top_input: int | None = None

    def __post_init__(self) -> None:
        top = _Span(None, None, 0)
        self._stack.append(top)

    # ------------------------------------------------------------ recording

    def _text(self, value: Any) -> tuple[Any, int | None]:
        """A text as held until attachments are read: an inline text cut at the cap (with its full
        length), a reference noted, a list of content parts kept as it is (its references noted)."""
        if isinstance(value, str):
            if value.startswith(ATTACHMENT):
                self.refs.add(value[len(ATTACHMENT):])
            elif len(value) > self.cap:
                return value[: self.cap], len(value)
            return value, None
        return self._refs_in(value), None

    def _refs_in(self, value: Any) -> Any:
        """`value`, noting every attachment it refers to."""
        stack = [value]
        while stack:
            item = stack.pop()
            if isinstance(item, str):
                if item.startswith(ATTACHMENT):
                    self.refs.add(item[len(ATTACHMENT):])
            elif isinstance(item, dict):
                stack.extend(item.values())
            elif isinstance(item, list):
                stack.extend(item)
        return value

    def _add(self, kind: str, where: str, text: Any = None, **fields: Any) -> None:
        span = self._stack[-1]
        resolved, full = self._text(text)
        fields.setdefault("agent", span.agent)
        fields["depth"] = span.depth
        if span.id is not None:
            fields["span_id"] = span.id
            parent = self._stack[-2] if len(self._stack) > 1 else None
            fields["parent_span_id"] = parent.id if parent else None
        self.steps.append(Pending(kind, {"text": resolved, "where": where, **fields}, full))

    # ------------------------------------------------------------ events

    def event(self, event: Any, where: str) -> None:
        if not isinstance(event, dict):
            return
        self.saw_events = True
        kind = event.get("event")
        if kind == "span_begin":
            self._span_begin(event, where)
            return
        if kind == "span_end":
            self._span_end(event)
            return
        if kind == "step" and event.get("type") == "scorer":
            self._scoring += 1 if event.get("action") == "begin" else -1 if self._scoring else 0
            return
        if self._scoring or self._stack[-1].scorer:
            return
        handler = _HANDLERS.get(kind)
        if handler is not None:
            handler(self, event, where)
        elif kind not in BOOKKEEPING:
            self.ignored.add(str(kind))

    def _span_begin(self, event: dict, where: str) -> None:
        parent = self._stack[-1]
        kind = event.get("type")
        name = event.get("name") if isinstance(event.get("name"), str) else None
        if kind in ("scorer", "scorers") or parent.scorer:
            span = _Span(parent.id, parent.agent, parent.depth, scorer=True)
        elif kind in ("agent", "handoff"):
            span = _Span(_str(event.get("id")), name or parent.agent, parent.depth + 1)
            self._stack.append(span)
            self._add("system event", where, f"agent {name or '?'} starts", role="system",
                      started_at=event.get("timestamp"), source_ref=_ref(where))
            self._spans[span.id] = span
            return
        else:  # solvers, tools and other spans keep the agent and depth they run in
            span = _Span(parent.id, parent.agent, parent.depth, prev_input=None)
            span.prev_input = parent.prev_input
        span.marker = _str(event.get("id"))  # type: ignore[attr-defined]
        self._stack.append(span)

    def _span_end(self, event: dict) -> None:
        ended = _str(event.get("id"))
        for n in range(len(self._stack) - 1, 0, -1):
            span = self._stack[n]
            if getattr(span, "marker", span.id) == ended or span.id == ended:
                if span.agent == self._stack[n - 1].agent and span.depth == self._stack[n - 1].depth:
                    self._stack[n - 1].prev_input = span.prev_input  # a solver span shares its agent's conversation
                del self._stack[n:]
                return

    def _model(self, event: dict, where: str) -> None:
        span = self._stack[-1]
        inputs = event.get("input") if isinstance(event.get("input"), list) else []
        if span.prev_input is not None and len(inputs) < span.prev_input:
            self._add("system event", where, f"the conversation was cut from {span.prev_input} to {len(inputs)} "
                      "messages before this model call (compaction or truncation)", role="system",
                      source_ref=_ref(where))
            span.prev_input = 0
        start = span.prev_input or 0
        for n, message in enumerate(inputs[start:], start=start):
            if not isinstance(message, dict):
                continue
            role = role_of(message.get("role"), f"{where}.input[{n}]")
            if role in ("system", "user"):
                self._add("message", f"{where}.input[{n}]", self._refs_in(message.get("content")), role=role,
                          source_ref=f"{_ref(where)}.input[{n}]")
        span.prev_input = len(inputs) + 1
        if span.depth == 0 and span.id is None:
            self.top_input = span.prev_input
        output = event.get("output") if isinstance(event.get("output"), dict) else {}
        choices = output.get("choices") if isinstance(output.get("choices"), list) else []
        message = choices[0].get("message") if choices and isinstance(choices[0], dict) else None
        usage = output.get("usage") if isinstance(output.get("usage"), dict) else {}
        seconds = event.get("working_time", output.get("time"))
        meta = {"input_tokens": usage.get("input_tokens"), "output_tokens": usage.get("output_tokens"),
                "seconds": seconds, "model": event.get("model") if isinstance(event.get("model"), str) else None,
                "finish_reason": _str(choices[0].get("stop_reason")) if choices and isinstance(choices[0], dict) else None,
                "started_at": event.get("timestamp")}
        if isinstance(message, dict):
            self._assistant(message, where, meta)
        if event.get("error"):
            self._add("error", where, error_text(event["error"]), role="assistant", error=error_text(event["error"]),
                      source_ref=_ref(where), started_at=event.get("timestamp"))

    def _assistant(self, message: dict, where: str, meta: dict) -> None:
        calls = message.get("tool_calls") if isinstance(message.get("tool_calls"), list) else []
        content = self._refs_in(message.get("content"))
        text = content_text(_resolved(content, lambda key: "(attached text)"), where)
        has_text = bool(text and text.strip())
        first = True
        if has_text or not calls:
            self._add("message", f"{where}.output", content, role="assistant", source_ref=f"{_ref(where)}.output",
                      **meta)
            first = False
        for k, call in enumerate(calls):
            if not isinstance(call, dict):
                continue
            parse_error = call.get("parse_error")
            function = call.get("function")
            name = function.get("name") if isinstance(function, dict) else function
            arguments = function.get("arguments") if isinstance(function, dict) else call.get("arguments")
            self._add("tool call", f"{where}.output.tool_calls[{k}]", None, role="assistant",
                      tool_name=_str(name), tool_call_id=_str(call.get("id")),
                      arguments=self._refs_in(arguments if arguments is not None else {}),
                      error=f"malformed tool call: {parse_error}" if isinstance(parse_error, str) and parse_error else None,
                      source_ref=f"{_ref(where)}.output.tool_calls[{k}]", **(meta if first else {}))
            first = False

    def _tool(self, event: dict, where: str) -> None:
        nested = event.get("events")
        agent = event.get("agent") if isinstance(event.get("agent"), str) else None
        if isinstance(nested, list) and nested:
            parent = self._stack[-1]
            span = _Span(_str(event.get("id")), agent or _str(event.get("function")) or parent.agent, parent.depth + 1)
            self._stack.append(span)
            for n, inner in enumerate(nested):
                self.event(inner, f"{where}.events[{n}]")
            self._stack.pop()
        self._add("tool result", where, self._refs_in(event.get("result")), role="tool",
                  tool_name=_str(event.get("function")), tool_call_id=_str(event.get("id")),
                  error=error_text(event.get("error")), seconds=event.get("working_time"),
                  started_at=event.get("timestamp"), source_ref=_ref(where))

    def _subtask(self, event: dict, where: str) -> None:
        name = _str(event.get("name")) or "subtask"
        self._add("system event", where, f"subtask {name} starts", role="system", started_at=event.get("timestamp"),
                  source_ref=_ref(where))
        parent = self._stack[-1]
        self._stack.append(_Span(f"subtask:{name}", name, parent.depth + 1))
        for n, inner in enumerate(event.get("events") or []):
            self.event(inner, f"{where}.events[{n}]")
        self._stack.pop()

    def _limit(self, event: dict, where: str) -> None:
        self.saw_limit = True
        kind, message = _str(event.get("type")) or "a", _str(event.get("message"))
        self._add("system event", where, f"{kind} limit reached" + (f": {message}" if message else ""),
                  role="system", started_at=event.get("timestamp"), source_ref=_ref(where))

    def _error(self, event: dict, where: str) -> None:
        self.saw_error = True
        error = error_text(event.get("error")) or "error"
        self._add("error", where, error, role="system", error=error, started_at=event.get("timestamp"),
                  source_ref=_ref(where))

    def _input(self, event: dict, where: str) -> None:
        self._add("message", where, _str(event.get("input")), role="user", started_at=event.get("timestamp"),
                  source_ref=_ref(where))

    def _approval(self, event: dict, where: str) -> None:
        decision, approver = _str(event.get("decision")), _str(event.get("approver"))
        explanation = _str(event.get("explanation"))
        text = f"approval: {decision or '?'}" + (f" by {approver}" if approver else "") + (f": {explanation}" if explanation else "")
        self._add("system event", where, text, role="system", started_at=event.get("timestamp"), source_ref=_ref(where))

    def _info(self, event: dict, where: str) -> None:
        data = event.get("data")
        text = data if isinstance(data, str) else None
        if text is None and data is not None:
            import orjson

            text = orjson.dumps(data, default=str).decode()
        source = _str(event.get("source"))
        self._add("system event", where, f"info{f' ({source})' if source else ''}: {text}", role="system",
                  started_at=event.get("timestamp"), source_ref=_ref(where))

    # ------------------------------------------------------------ messages

    def messages(self, messages: Any, where: str, trailing_only: bool) -> None:
        """The sample's messages: every one (a sample without events), or only the system and
        user messages after the last top-level model call's input (`trailing_only`)."""
        if not isinstance(messages, list):
            return
        start = (self.top_input or 0) if trailing_only else 0
        for n, message in enumerate(messages[start:], start=start):
            mwhere = f"{where}[{n}]"
            if not isinstance(message, dict):
                continue
            role = role_of(message.get("role"), mwhere)
            if trailing_only and role not in ("system", "user"):
                continue
            content = self._refs_in(message.get("content"))
            if role == "tool":
                self._add("tool result", mwhere, content, role="tool",
                          tool_name=_str(message.get("function")) or _str(message.get("name")),
                          tool_call_id=_str(message.get("tool_call_id")), error=error_text(message.get("error")),
                          source_ref=f"messages[{n}]")
            elif role == "assistant":
                self._assistant(message, mwhere, {})
                # _assistant names the output of a model event; here the message is its own source
                for pending in self.steps[-(1 + len(message.get("tool_calls") or [])):]:
                    pending.fields["source_ref"] = pending.fields["source_ref"].replace(
                        f"{_ref(mwhere)}.output", f"messages[{n}]")
            else:
                self._add("message", mwhere, content, role=role, source_ref=f"messages[{n}]")

    def ending(self, error: Any, limit: Any, where: str) -> None:
        """The sample's own error and limit, when no event said so already."""
        if limit and not self.saw_limit and isinstance(limit, dict):
            self._limit({"type": limit.get("type"), "message": f"limit {limit.get('limit')}"}, f"{where}.limit")
        if error and not self.saw_error:
            self._error({"error": error}, f"{where}.error")

    # ------------------------------------------------------------ into the transcript

    def single_turn(self) -> bool:
        """One question and one answer, nothing else: the prediction itself holds it, so it gets
        no transcript (a plain benchmark log would otherwise repeat every input and output)."""
        answers = 0
        for pending in self.steps:
            if pending.kind != "message":
                return False
            answers += pending.fields.get("role") == "assistant"
        return answers <= 1

    def emit(self, transcript: Transcript, instance_id: str, trial: int, resolve: Callable[[str], str | None],
             lengths: dict[str, int] | None = None) -> None:
        """Add every step to the transcript, attachment references resolved by `resolve`
        (`lengths`: the full length of an attachment the resolver holds cut)."""
        for pending in self.steps:
            fields = dict(pending.fields)
            where = fields.pop("where")
            text, full = fields.pop("text"), pending.full_chars
            if isinstance(text, str) and text.startswith(ATTACHMENT):
                key = text[len(ATTACHMENT):]
                found = resolve(key)
                full = (lengths or {}).get(key)
                text = text if found is None else found
            elif text is not None and not isinstance(text, str):
                text = content_text(_resolved(text, resolve), where)
            if "arguments" in fields:
                fields["arguments"] = _resolved(fields["arguments"], resolve)
            transcript.add(instance_id, trial, pending.kind, where=where, text=text, full_chars=full, **fields)
        self.steps = []


_HANDLERS: dict[str, Callable[[SampleSteps, dict, str], None]] = {
    "model": SampleSteps._model,
    "tool": SampleSteps._tool,
    "subtask": SampleSteps._subtask,
    "sample_limit": SampleSteps._limit,
    "error": SampleSteps._error,
    "input": SampleSteps._input,
    "approval": SampleSteps._approval,
    "info": SampleSteps._info,
}


def _resolved(value: Any, resolve: Callable[[str], str | None]) -> Any:
    if isinstance(value, str) and value.startswith(ATTACHMENT):
        found = resolve(value[len(ATTACHMENT):])
        return value if found is None else found
    if isinstance(value, list):
        return [_resolved(v, resolve) for v in value]
    if isinstance(value, dict):
        return {k: _resolved(v, resolve) for k, v in value.items()}
    return value


def _str(value: Any) -> str | None:
    if isinstance(value, str):
        return value or None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return None


def _ref(where: str) -> str:
    """`events[12]` from a place like `log.eval!samples/1_epoch_1.json: events[12]`."""
    return where.rsplit(": ", 1)[-1]


def sample_steps(sample: dict, where: str, cap: int) -> SampleSteps:
    """The steps of a sample read whole (its events, else its messages)."""
    steps = SampleSteps(cap)
    for n, event in enumerate(sample.get("events") or [] if isinstance(sample.get("events"), list) else []):
        steps.event(event, f"{where}: events[{n}]")
    steps.messages(sample.get("messages"), f"{where}: messages", trailing_only=steps.saw_events)
    steps.ending(sample.get("error"), sample.get("limit"), where)
    return steps


def ignored_note(where: str, types: Iterable[str]) -> str | None:
    types = sorted(types)
    return f"{where}: Inspect event type(s) {', '.join(types)} not read as transcript steps" if types else None
