"""Stage 1 for agent transcripts: the analyst reads the task, the verdict and the numbered steps,
and names the first decisive error — its step, the agent responsible, a verbatim quote from that
step and its category in the agent taxonomy (erroratlas-agents-v1), with a title and a summary.

A transcript over the analyst's context budget (context.py) is split into overlapping segments
that each fit, read in order until one holds the decisive error; the analysis records which
segments were read (`analyses.segments_read`), never a silent cut. One step too long for a
segment on its own is cut by context.py's rule (head and tail around a marker), and the
analysis's context note says which.

Every answer is checked against the stored steps: a step outside the segment shown, an agent the
transcript does not name, a quote that is not in that step, a category outside the taxonomy is
asked again (the answer shown back with what is wrong), and after MAX_ATTEMPTS the analysis
abstains (Hard to Analyze, no step) — never stored as if valid.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, Field, ValidationError, field_validator

from .catalog import Taxonomy, TaxonomyError
from .context import ContextBudget, cut, fit
from .prompts import NOT_MODEL_ERROR, _json_text, _judge_lines, render_input, scoring_text
from .steps import agents_of, normal, quotable, quote_resolves

TRANSCRIPT_PROMPT_VERSION = "transcript-v1"
SCHEMA_NAME = "first_error"
MAX_ATTEMPTS = 3  # answers per segment: the first and two follow-ups saying what was wrong
OVERLAP_STEPS = 3  # steps each segment repeats from the end of the one before
# a step never takes more than this share of a segment's room: a segment holds at least 3 steps
STEP_SHARE = 3
_HEADER_TOKENS = 200  # the segment's header and closing words
MIN_STEP_TOKENS = 100  # a segment's room must hold three steps of at least this many tokens


class FirstError(BaseModel):
    step: int
    agent: str | None = None
    quote: str | None = None
    category: str
    error_title: str = Field(max_length=200)
    error_summary: str

    @field_validator("error_title", "error_summary", "category", mode="before")
    @classmethod
    def _clean(cls, v):
        return " ".join(v.split()) if isinstance(v, str) else v

    @field_validator("agent", "quote", mode="before")
    @classmethod
    def _blank(cls, v):
        return v.strip() or None if isinstance(v, str) else v


class FirstErrorAnswer(BaseModel):
    first_error: FirstError | None = None
    not_model_error: Literal["no error found", "output matches a reference", "reference wrong or ambiguous"] | None = None

    @field_validator("not_model_error", mode="before")
    @classmethod
    def _reason(cls, v):
        if isinstance(v, str):
            v = " ".join(v.replace("_", " ").split()).casefold()
            return None if v in ("", "none", "null", "no", "false") else v
        return v


def parse_first_error(text: str) -> FirstErrorAnswer | None:
    """The answer when it is the JSON asked for (its steps and quotes are checked apart), else None."""
    try:
        return FirstErrorAnswer.model_validate_json(_json_text(text))
    except ValidationError:
        return None


def first_error_schema(taxonomy: Taxonomy) -> dict:
    return {
        "name": SCHEMA_NAME,
        "schema": {
            "type": "object",
            "properties": {
                "first_error": {
                    "anyOf": [{"type": "null"}, {
                        "type": "object",
                        "properties": {
                            "step": {"type": "integer"},
                            "agent": {"type": ["string", "null"]},
                            "quote": {"type": ["string", "null"]},
                            "category": {"type": "string", "enum": taxonomy.names},
                            "error_title": {"type": "string"},
                            "error_summary": {"type": "string"},
                        },
                        "required": ["step", "agent", "quote", "category", "error_title", "error_summary"],
                        "additionalProperties": False,
                    }],
                },
                "not_model_error": {"type": ["string", "null"], "enum": [*NOT_MODEL_ERROR, None]},
            },
            "required": ["first_error", "not_model_error"],
            "additionalProperties": False,
        },
    }


def system_prompt(taxonomy: Taxonomy) -> str:
    cats = "\n".join(f"- {c.name}: {c.description}" for c in taxonomy.categories)
    return f"""You are an expert evaluator finding where an AI agent's run on a benchmark task went wrong.

You get the task, what the agents were told, the benchmark's verdict (the run failed) and the run's
transcript: numbered steps, each with the agent that took it, its kind (message, tool call, tool
result, error or system event) and its text. A long transcript is shown in parts; then you see
one part at a time.

Find the FIRST DECISIVE ERROR: the earliest step whose mistake put the run on the path to failure.
Later mistakes that follow from it do not count, nor do slips that were corrected. Answer with:
- step: its number, one of the steps shown;
- agent: the agent responsible, spelt as the transcript names it (for a tool result, the agent that
  made the call); null only when the transcript names no agents;
- quote: a short excerpt copied exactly, character for character, from that step's text;
- category: one of the categories below ({taxonomy.version});
- error_title: a short free-form title (3-10 words) naming the failed skill, general enough to recur
  (e.g. "Trusts a search snippet without opening the page");
- error_summary: two or three sentences about what the agent misunderstood, assumed or skipped.

If the steps shown hold no decisive error, set first_error to null. Not every failed run is the
agent's fault: if the whole transcript shows no error, say so with not_model_error "no error found";
if the final answer matches a reference once normalised, "output matches a reference"; if the
reference itself is wrong or ambiguous, "reference wrong or ambiguous". Otherwise not_model_error is
null. A failure of the environment (an outage, a rate limit, a crashed sandbox the agent could not
work around) is an error with the category Environment Failure.

Categories:
{cats}

Answer with one JSON object only: {{"first_error": {{"step": ..., "agent": ..., "quote": ..., "category": ..., "error_title": ..., "error_summary": ...}} or null, "not_model_error": ...}}."""


_FIELD_LABELS = {"instructions": "task instructions", "prompt": "prompt as sent", "input": "task",
                 "references": "references", "judges": "judge notes", "scoring": "scoring", "output": "final output"}
_TAGS = {
    "instructions": "<task_instructions note=\"what the harness told the agents for every task\">\n{}\n</task_instructions>",
    "prompt": "<prompt_as_sent note=\"what the agents were told besides the task (system prompts)\">\n{}\n</prompt_as_sent>",
    "input": "<task>\n{}\n</task>",
    "references": "<reference_answers>\n{}\n</reference_answers>",
    "judges": "<judge_notes note=\"what the benchmark's own judges said\">\n{}\n</judge_notes>",
    "scoring": "<verdict>\n{}\n</verdict>",
    "output": "<final_output>\n{}\n</final_output>",
}


def task_fields(rec: dict) -> dict[str, str]:
    """What the analyst is told about the task, by field (empty fields left out)."""
    refs = rec.get("refs") or []
    scoring = scoring_text(rec)
    output = rec.get("output_text") or ""
    if not output.strip():
        output = ("(none: the log keeps no final answer apart from the transcript)" if rec.get("output_kind") == "transcript"
                  else "(none: the harness recorded no final answer)")
    fields = {
        "instructions": rec.get("instructions") or "",
        "prompt": rec.get("prompt_text") or "",
        "input": render_input(rec),
        "references": "\n".join(f"- {r['text']}" for r in refs if r.get("correct")),
        "judges": _judge_lines(rec.get("judge_notes")),
        "scoring": ("The benchmark judged this run a failure." + (f"\n{scoring}" if scoring else "")),
        "output": output,
    }
    return {k: v for k, v in fields.items() if v}


def _attr(value) -> str:
    return json.dumps(value, ensure_ascii=False)


def render_step(step: dict) -> str:
    """One step as the analyst sees it: its number, agent, role, kind and tool, then its text
    (with a note when ingest cut it) and its error."""
    attrs = [f"n=\"{step['step_index']}\""]
    for key, name in (("agent", "agent"), ("role", "role"), ("kind", "kind"), ("tool_name", "tool")):
        if step.get(key):
            attrs.append(f"{name}={_attr(step[key])}")
    body = step.get("text") or ""
    if step.get("tool_arguments") and step["tool_arguments"] not in body:
        body = (body + "\n" if body else "") + f"arguments: {step['tool_arguments']}"
    stored = len(step.get("text") or "")
    if step.get("text_chars") and step["text_chars"] > stored:
        body += f"\n[… cut at ingest: {stored:,} of {step['text_chars']:,} characters kept]"
    if step.get("error"):
        body += f"\nerror: {step['error']}"
    return f"<step {' '.join(attrs)}>\n{body}\n</step>"


@dataclass
class Segment:
    number: int  # 1-based
    first: int  # step index of its first step
    last: int
    text: str  # its steps, rendered


@dataclass
class Plan:
    """How one transcript is shown: the task part and its segments."""

    system: str
    task: str
    n_steps: int
    segments: list[Segment]
    notes: list[str] = field(default_factory=list)  # what was cut to fit (context note)
    # step index -> (agent, its quotable text, whether an agent took it)
    steps: dict[int, dict] = field(default_factory=dict)
    agents: list[str] = field(default_factory=list)

    def messages(self, segment: Segment) -> list[dict]:
        return [{"role": "system", "content": self.system},
                {"role": "user", "content": self._user(segment)}]

    def _user(self, s: Segment) -> str:
        whole = len(self.segments) == 1
        where = ("the whole transcript" if whole else
                 f"part {s.number} of {len(self.segments)}: steps {s.first} to {s.last} of 0 to {self.n_steps - 1}")
        before = ("" if whole or s.number == 1 else
                  f" The parts before this one (steps 0 to {self.segments[s.number - 2].last}) were read and held no "
                  "decisive error.")
        closing = ("Name the first decisive error of the run, or say why the failure is not the agent's fault."
                   if whole else
                   f"Name the first decisive error among steps {s.first} to {s.last}, or set first_error to null if "
                   "these steps hold none." + (" This is the last part: if no part held a decisive error, say why "
                                               "with not_model_error." if s.number == len(self.segments) else ""))
        return (f"{self.task}\n\n<transcript steps=\"{self.n_steps}\" showing=\"{where}\">{before}\n"
                f"{s.text}\n</transcript>\n\n{closing}")


def plan(rec: dict, steps: list[dict], taxonomy: Taxonomy, budget: ContextBudget | None) -> Plan:
    """The task part (cut by context.fit when it alone takes over half the budget) and the
    segments of the steps that fit the rest, overlapping by OVERLAP_STEPS."""
    system = system_prompt(taxonomy)
    notes: list[str] = []
    fields = task_fields(rec)

    def task_text(f: dict[str, str]) -> str:
        return "\n\n".join(_TAGS[k].format(f[k]) for k in _FIELD_LABELS if k in f)

    if budget is not None:
        half = ContextBudget(budget.tokens // 2, budget.window, budget.source, budget.count)
        fields, note = fit(fields, lambda f: budget.count(system) + budget.count(task_text(f)), half, _FIELD_LABELS)
        if note:
            notes.append("task: " + note)
    task = task_text(fields)
    rendered = [render_step(s) for s in steps]
    index = {s["step_index"]: {"agent": s.get("agent"), "text": quotable(s), "kind": s.get("kind")} for s in steps}
    out = Plan(system, task, len(steps), [], notes, index, agents_of(steps))
    if budget is None:
        out.segments = [Segment(1, steps[0]["step_index"], steps[-1]["step_index"], "\n".join(rendered))]
        return out
    room = budget.tokens - budget.count(system) - budget.count(task) - _HEADER_TOKENS
    if room < STEP_SHARE * MIN_STEP_TOKENS:
        raise TaxonomyError(
            f"the analyst's {budget.describe()} leaves {max(room, 0):,} tokens for a transcript's steps once its "
            f"instructions and the task are in ({budget.count(system):,} + {budget.count(task):,} tokens): too few to "
            "read steps; use a model with a larger context window, or a lower --max-tokens")
    sizes = [budget.count(r) for r in rendered]
    if sum(sizes) + len(sizes) <= room:
        out.segments = [Segment(1, steps[0]["step_index"], steps[-1]["step_index"], "\n".join(rendered))]
        return out
    cap = room // STEP_SHARE
    cut_steps = []
    for i, size in enumerate(sizes):
        if size > cap:
            rendered[i] = cut(rendered[i], cap, budget.count)
            sizes[i] = budget.count(rendered[i])
            cut_steps.append(f"{steps[i]['step_index']} ({size:,}→{sizes[i]:,})")
    if cut_steps:
        notes.append(f"steps longer than a third of a segment cut to fit (head and tail kept): "
                     f"{', '.join(cut_steps[:20])}{' …' if len(cut_steps) > 20 else ''} tokens")
    out.segments = _segments(steps, rendered, sizes, room)
    return out


def _segments(steps: list[dict], rendered: list[str], sizes: list[int], room: int) -> list[Segment]:
    segments, start = [], 0
    while True:
        end, used = start, 0
        while end < len(steps) and (end == start or used + sizes[end] + 1 <= room):
            used += sizes[end] + 1
            end += 1
        segments.append(Segment(len(segments) + 1, steps[start]["step_index"], steps[end - 1]["step_index"],
                                "\n".join(rendered[start:end])))
        if end >= len(steps):
            return segments
        start = max(start + 1, end - OVERLAP_STEPS)


# ---------------------------------------------------------------- checking an answer


@dataclass
class Checked:
    """A segment's answer once checked: `found` (the error, canonical) or `none` (no error in
    these steps) or `problem` (what is wrong, to be asked again)."""

    found: FirstError | None = None
    none: bool = False
    no_model_error: str | None = None
    problem: str | None = None


def check(answer: FirstErrorAnswer, segment: Segment, p: Plan, taxonomy: Taxonomy) -> Checked:
    fe = answer.first_error
    if fe is None:
        reason = answer.not_model_error
        return Checked(none=True, no_model_error=NOT_MODEL_ERROR[reason] if reason else None)
    if answer.not_model_error is not None:
        return Checked(problem="it names an error and also says the failure is not the agent's fault; give one of the two")
    if not segment.first <= fe.step <= segment.last:
        return Checked(problem=f"step {fe.step} is not among the steps shown ({segment.first} to {segment.last})")
    category = taxonomy.canonical(fe.category)
    if category is None:
        return Checked(problem=f"{fe.category!r} is not a category of {taxonomy.version}")
    if not fe.error_title or not fe.error_summary:
        return Checked(problem="error_title and error_summary must both be given")
    agent = None
    if p.agents:
        known = {normal(a).casefold(): a for a in p.agents}
        agent = known.get(normal(fe.agent).casefold()) if fe.agent else None
        if agent is None:
            shown = ", ".join(p.agents[:30])
            return Checked(problem=(f"agent {fe.agent!r} is not one the transcript names ({shown})" if fe.agent
                                    else f"it names no agent; name the one responsible ({shown})"))
    step = p.steps[fe.step]
    if step["text"].strip():
        if not quote_resolves({"text": step["text"]}, fe.quote):
            return Checked(problem=(f"the quote is not in step {fe.step}'s text; copy a short excerpt of that step "
                                    "exactly, character for character"))
    quote = fe.quote if step["text"].strip() else None
    return Checked(found=fe.model_copy(update={"agent": agent, "category": category, "quote": quote}))


def follow_up(messages: list[dict], answer_text: str, problem: str, attempt: int) -> list[dict]:
    """The conversation asked again: the answer shown back with what is wrong with it."""
    return [*messages, {"role": "assistant", "content": answer_text},
            {"role": "user", "content": f"Attempt {attempt}: that answer cannot be used: {problem}. "
                                        "Answer again with the same JSON object."}]
