"""Offline detectors for agent transcripts: what rules can see with certainty in the steps of a
failed run, each naming the step of the error, the agent responsible and a verbatim quote from
that step.

- a tool error the run never addresses: a tool reports an error, nobody calls that tool again nor
  gets what it sought by another tool (a working call of another tool whose arguments share the
  failed call's particulars), and the next agent step carries on without a word about it (the
  step named);
- an environment failure: such an error is the environment's (a rate limit, a server error, a
  connection refused) — not the model's fault;
- the same action repeated three or more times with the same result (the third time is named);
- a step, time, token or context limit reached, as the log says (its event is named);
- a malformed tool call (arguments that do not parse, or that the tool rejects), never followed by
  a working call of that tool;
- a call of a tool that does not exist (not among the tools the log declares, or refused as
  unknown by the harness), never followed by a working call;
- giving up: the run's last message says the agent cannot do the task;
- invented data: an agent says it works on data it made up (a simulated, hypothetical, mock,
  dummy, synthetic or placeholder dataset) — not a rule the issue names, added because agents do it
  when their tools fail and say so in words a rule can read;
- no final answer submitted: the harness recorded no answer, in a format that keeps the submitted
  answer apart from the transcript (FINAL_ANSWER_FORMATS: Inspect's `output.completion`, SWE-agent's
  `info.submission`; other readers take the agent's last message as its answer, so an empty one
  says nothing certain).

`analyse` runs them all and returns the finding at the earliest step (the first decisive error
among those a rule can see; on the same step, the order above decides), or None: then no rule is
certain, and the analyst says so (Hard to Analyze) rather than guess.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from ..steps import CODE_TOOL, Action, actions, as_read, excerpt, is_agent_step, normal, quote_resolves

VERSION = "offline-transcript-v1"
REPEATS = 3
FINAL_ANSWER_FORMATS = {"inspect", "swe-agent"}


@dataclass(frozen=True)
class StepFinding:
    detector: str
    title: str
    summary: str
    category: str
    step_index: int
    agent: str | None
    quote: str | None  # verbatim from the named step (quotable text)
    criterion: str  # what the step fails, as a stage-1 criterion


# the environment's failures, as services and harnesses word them
_ENVIRONMENT = re.compile(
    r"\b(?:429|5\d\d)\b.{0,40}\b(?:too many requests|rate limit|internal server error|bad gateway|service unavailable|"
    r"gateway time-?out)|\brate[ -]?limit(?:ed| exceeded| reached)\b|\bquota exceeded\b|\bservice unavailable\b|"
    r"\bconnection (?:refused|reset|aborted)\b|\bname or service not known\b|\btemporary failure in name resolution\b|"
    r"\bsandbox (?:crashed|died|is not running)\b|\bcontainer (?:crashed|exited unexpectedly)\b",
    re.I | re.S)
# a call whose arguments do not parse or that the tool refuses as malformed
_MALFORMED = re.compile(
    r"^malformed tool call|\b(?:error )?parsing (?:the )?(?:tool call|arguments|function call)|"
    r"\binvalid (?:json|arguments?|parameters?|tool call)\b|\bmissing (?:\d+ )?required (?:positional )?(?:argument|parameter)s?\b|"
    r"\bunexpected keyword argument\b|\bvalidation error for\b|\bis not valid under any of the given schemas\b|"
    r"\bfailed to parse (?:the )?(?:tool|function|arguments)", re.I)
# the harness's refusal of a tool it does not have
_UNKNOWN_TOOL = re.compile(
    r"\b(?:tool|function|command)\b.{0,60}\b(?:not found|does not exist|is not available|not (?:a )?(?:valid|known|registered))\b|"
    r"\b(?:unknown|unsupported|invalid|no such) (?:tool|function)\b|\bnot a valid tool\b", re.I | re.S)
# a limit reached, as Inspect, SWE-agent, OpenHands, AutoGen and the providers word it
_LIMIT = re.compile(
    r"\b(?:message|token|turn|step|iteration|time|working|cost|context|round|custom|operator)s?[ _-]?limit\b.{0,40}"
    r"\b(?:reached|exceeded|hit)\b|"
    r"\b(?:reached|exceeded|hit)\b.{0,40}\b(?:message|token|turn|step|iteration|time|working|cost|context|round)s?[ _-]?limit\b|"
    r"\b(?:reached|exceeded) (?:the )?max(?:imum)?[ _]?(?:number of )?(?:iterations?|steps?|turns?|rounds?|messages?|"
    r"budget|cost)\b|"
    r"\bmax(?:imum)?[ _](?:iterations?|steps?|turns?|rounds?)\b.{0,20}\b(?:reached|exceeded)\b|"
    r"\bcontext[ _](?:window|length)[ _](?:exceeded|overflow)|\bcontext_length_exceeded\b|\bContextWindowExceeded|"
    r"\bmaximum context length\b|\bexit_(?:context|cost|format|total_execution_time)\b|\bAgentStuckInLoopError\b",
    re.I | re.S)
# the agent says it cannot do the task (the run's last message only): words about the task itself,
# not a refusal the task may call for ("I cannot cancel this reservation" under an airline's policy)
_TASK = r"(?:the|this|your) (?:task|request|problem|challenge|question|puzzle)"
_GIVE_UP = re.compile(
    r"\b(?:I|we)\s+(?:(?:am|are|was|were)\s+(?:unable|not able)\s+to|cannot|can't|can not|could not|couldn't)\s+"
    rf"(?:complete|finish|solve|accomplish|answer)\s+{_TASK}\b|"
    r"\b(?:I|we)\s+(?:(?:am|are|was|were)\s+(?:unable|not able)\s+to|cannot|can't|can not|could not|couldn't)\s+"
    r"(?:determine|find|identify|work out)\s+the\s+(?:answer|flag|solution)\b|"
    rf"\bI give up\b|\b{_TASK} (?:cannot|can't|could not) be (?:completed|solved|answered)\b|"
    r"\bthe answer (?:cannot|can't|could not) be (?:determined|found)\b", re.I)
# an agent's words that take an error up (then whether it handled it well is not for a rule to say)
_ACKNOWLEDGED = re.compile(
    r"\b(?:errors?|exceptions?|traceback|fail(?:s|ed|ure|ing)?|issues?|problems?|bugs?|not (?:installed|found|defined|"
    r"available|supported|accessible)|unable|couldn't|could not|did not work|didn't work|does not work|doesn't work|"
    r"went wrong|unsuccessful|undefined|not defined|no defined|missing|placeholder|(?:do|does|did)n't have|"
    r"(?:do|does|did) not have|need to (?:install|fix|define|replace|set|correct)|retry|try again)\b", re.I)
# an agent's own words that its data is made up
_INVENTED = re.compile(
    r"\b(?:simulat(?:e|ed|es|ing)\s+(?:the\s+|some\s+|a\s+)?(?:data|dataset|results?|values|output|response|search|api)|"
    r"(?:simulated|hypothetical|mock|dummy|fictional|fictitious|made-up|fabricated|placeholder|synthetic)\s+"
    r"(?:data|dataset|values|numbers|results?|responses?|records|entries)|mock(?:ing)?\s+up)\b", re.I)
_TERMINATION = re.compile(r"^\W*(?:terminate|exit|quit|done|stop|end)\W*$", re.I)


def _by_index(steps: list[dict]) -> Callable[[int], dict]:
    first = steps[0]["step_index"]
    return lambda i: steps[i - first]


def _finding(step: dict, detector: str, title: str, summary: str, category: str, criterion: str,
             agent: str | None = ..., quote: str | None = None) -> StepFinding:
    """A finding naming `step`; its quote is checked to occur in the step (else its first line)."""
    if quote is None or not quote_resolves(step, quote):
        quote = excerpt(step)
    return StepFinding(detector, title, summary, category, step["step_index"],
                       step.get("agent") if agent is ... else agent, quote, criterion)


def _next_agent_step(steps: list[dict], after: int) -> dict | None:
    return next((s for s in steps if s["step_index"] > after and is_agent_step(s)), None)


def _works(a: Action) -> bool:
    return a.result is not None and a.error is None


def detect_unaddressed_error(steps: list[dict], rec: dict, declared: set[str] | None) -> StepFinding | None:
    """A tool error after which nobody calls that tool again while an agent carries on; an
    environment's error that was never worked around is an Environment Failure."""
    acts = actions(steps)
    step = _by_index(steps)
    for n, a in enumerate(acts):
        if a.error is None or a.result is None:
            continue
        later = [b for b in acts[n + 1:] if b.tool == a.tool]
        if _ENVIRONMENT.search(a.error):
            if any(_works(b) for b in acts[n + 1:]):
                continue
            result = step(a.result)
            return _finding(result, "environment_failure", "The environment fails the run",
                            f"The {a.tool or 'tool'} call at step {a.index} failed on the environment's side "
                            f"({normal(a.error)[:160]}) and no later action worked: not the model's fault.",
                            "Environment Failure", "The environment serves the agent's calls", agent=None,
                            quote=_match(_ENVIRONMENT, result))
        if later:
            continue  # the tool was called again: the error was addressed, well or not
        if _another_route(a, acts[n + 1:]):
            continue  # it got what the failed call sought by another tool: recovered, well or not
        if _output_besides_error(step(a.result)):
            continue  # the tool returned something besides its error, which the agent may rightly use
        carried_on = _next_agent_step(steps, a.result)
        if carried_on is None or _acknowledges(carried_on, a.error):
            continue  # the run ended there, or the agent took the error up: whether well is not a rule's call
        tool = "its code" if a.tool == CODE_TOOL else f"tool {a.tool}" if a.tool else "the tool"
        return _finding(carried_on, "tool_error_ignored", "Carries on after a tool error it never addresses",
                        f"Running {tool} at step {a.index} failed ({normal(a.error)[:160]}); nobody ran it again, and "
                        f"the run went on at step {carried_on['step_index']} as if it had worked.",
                        "Tool Error Ignored", "Addresses the tool's error before going on")
    return None


_PIECE = re.compile(r"[^\W_]{3,}")
# words that name no particular thing: JSON and argument words, shell commands, file kinds
_NOT_PARTICULAR = frozenset(
    "true false none null json str int cmd code query path print read open import cat echo grep find head tail "
    "sudo bash python python3 curl wget txt csv log html yaml".split())


def _pieces(text: str) -> set[str]:
    """The particular words of a call's arguments: of a path, its last part only (two calls in
    one folder do not seek the same thing; two that name one file do)."""
    last_parts = (token.rsplit("/", 1)[-1] for token in text.split())
    return {w.casefold() for part in last_parts for w in _PIECE.findall(part)} - _NOT_PARTICULAR


def _another_route(failed: Action, later: list[Action]) -> bool:
    """A later working call of another tool whose arguments share a particular (a name, an id's
    part, a file's name, a number) with the failed call's: the agent sought the same thing
    another way ("cat /challenge/flag.txt" denied, then python's open('/challenge/flag.txt');
    get_user_details(sara_doe_496) not found, then find_user_id_by_name_zip(Sara, Doe))."""
    sought = _pieces(failed.signature.split("|", 1)[-1])
    return any(b.tool != failed.tool and _works(b) and sought & _pieces(b.signature.split("|", 1)[-1]) for b in later)


# a word of an error message that names something particular: a number, an id, a long word
_PARTICULAR = re.compile(r"[A-Za-z]*\d[\w.]*|[A-Za-z]{5,}")
_COMMON = frozenset("error errors which there their these those would could should about after before other "
                    "because while where using found".split())


def _acknowledges(step: dict, error: str) -> bool:
    """Whether an agent's step takes a tool's error up: it says there was an error (_ACKNOWLEDGED),
    or it restates the error's particulars — more than half (and at least two) of its numbers, ids
    and long words ("not enough seats on flight HAT290" answered by "there aren't enough seats … on
    flight HAT290"; "your flight HAT290 is booked" shares two of four, and restates nothing)."""
    said = " ".join(str(v) for v in (step.get("text"), step.get("tool_arguments")) if v)
    if _ACKNOWLEDGED.search(said):
        return True
    particular = {w.lower().rstrip(".") for w in _PARTICULAR.findall(error)} - _COMMON
    words = {w.lower().rstrip(".") for w in _PARTICULAR.findall(said)}
    shared = len(particular & words)
    return shared >= 2 and shared > len(particular) / 2


# what a tool result holds besides its error: AutoGen's execution header and a Python traceback
_REPORT_HEAD = re.compile(r"\A\s*exitcode:[^\n]*\n?(?:\s*Code output:)?", re.I)
_TRACEBACK = re.compile(r"Traceback \(most recent call last\):\n(?:[ \t]+.*\n)*[^\n]*")


def _output_besides_error(result: dict) -> bool:
    """Whether a tool result that reports an error also returned other output (a search that
    printed its results before the code failed): then its error need not have mattered."""
    text = _TRACEBACK.sub("", _REPORT_HEAD.sub("", result.get("text") or ""))
    error = normal(result.get("error"))
    return any(re.search(r"[^\W\d_]", line) and normal(line) not in error for line in text.splitlines())


def _match(pattern: re.Pattern, step: dict) -> str | None:
    for source in (step.get("error"), step.get("text")):
        m = pattern.search(source or "")
        if m:
            return m.group(0)
    return None


def detect_repetition(steps: list[dict], rec: dict, declared: set[str] | None) -> StepFinding | None:
    """The same action by the same agent with the same result, REPEATS times: the last is named."""
    seen: dict[tuple, list[int]] = {}
    for a in actions(steps):
        if a.result is None:
            continue
        key = (a.agent, a.signature, a.result_text, a.error)
        seen.setdefault(key, []).append(a.index)
        if len(seen[key]) == REPEATS:
            step = _by_index(steps)(a.index)
            earlier = ", ".join(str(i) for i in seen[key][:-1])
            return _finding(step, "repetition", "Repeats the same action with the same result",
                            f"At step {a.index} the agent ran the same action for the {REPEATS}rd time (as at steps "
                            f"{earlier}), getting the same result each time, instead of changing course.",
                            "Repetition Loop", "Changes course when an action keeps giving the same result")
    return None


def detect_limit(steps: list[dict], rec: dict, declared: set[str] | None) -> StepFinding | None:
    """A system event or error saying a step, time, token or context limit was reached."""
    for s in steps:
        if s["kind"] not in ("system event", "error") and not (s.get("error") and s["kind"] == "tool result"):
            continue
        quote = _match(_LIMIT, s)
        if quote is None:
            continue
        before = [t for t in steps if t["step_index"] < s["step_index"] and is_agent_step(t)]
        agent = before[-1].get("agent") if before else s.get("agent")
        return _finding(s, "limit", "Runs out of its step or context budget",
                        f"At step {s['step_index']} the run reached a limit (\"{quote}\") before the task was done.",
                        "Step or Context Limit Reached", "Finishes within the run's limits", agent=agent, quote=quote)
    return None


def detect_malformed_call(steps: list[dict], rec: dict, declared: set[str] | None) -> StepFinding | None:
    """A tool call whose arguments do not parse or that the tool rejects as malformed, never
    followed by a working call of that tool."""
    acts = actions(steps)
    step = _by_index(steps)
    for n, a in enumerate(acts):
        call = step(a.index)
        if call["kind"] != "tool call" or a.error is None or not _MALFORMED.search(a.error):
            continue
        if any(_works(b) for b in acts[n + 1:] if b.tool == a.tool):
            continue
        return _finding(call, "malformed_call", "Makes a malformed tool call",
                        f"The call of {a.tool or 'a tool'} at step {a.index} was malformed ({normal(a.error)[:160]}), "
                        "and no later call of that tool worked.",
                        "Wrong Tool or Arguments", "Calls its tools with well-formed arguments")
    return None


def detect_unknown_tool(steps: list[dict], rec: dict, declared: set[str] | None) -> StepFinding | None:
    """A call of a tool the log does not declare (or that the harness refuses as unknown), never
    followed by a working call."""
    acts = actions(steps)
    step = _by_index(steps)
    for n, a in enumerate(acts):
        call = step(a.index)
        if call["kind"] != "tool call" or not a.tool:
            continue
        undeclared = declared is not None and a.tool not in declared
        refused = a.error is not None and _UNKNOWN_TOOL.search(a.error) and a.tool.casefold() in a.error.casefold()
        if not (undeclared or refused) or any(_works(b) for b in acts[n + 1:]):
            continue
        why = (f"the log declares only {', '.join(sorted(declared))}" if undeclared
               else f"the harness answered: {normal(a.error)[:160]}")
        return _finding(call, "unknown_tool", "Calls a tool that does not exist",
                        f"At step {a.index} the agent called {a.tool!r}, which does not exist ({why}), and no later "
                        "call worked.", "Wrong Tool or Arguments", "Calls only the tools it has")
    return None


def _final_message(steps: list[dict]) -> dict | None:
    """The run's last message by an agent that says more than a termination word."""
    for s in reversed(steps):
        if s["kind"] == "message" and is_agent_step(s) and not _TERMINATION.match(s.get("text") or ""):
            return s
    return None


def detect_giving_up(steps: list[dict], rec: dict, declared: set[str] | None) -> StepFinding | None:
    last = _final_message(steps)
    quote = _match(_GIVE_UP, last) if last else None
    if quote is None:
        return None
    return _finding(last, "gives_up", "Gives up on the task",
                    f"The run's last message (step {last['step_index']}) says the agent cannot do the task "
                    f"(\"{quote}\") instead of finishing it.", "Premature Termination", "Finishes the task",
                    quote=quote)


def detect_invented_data(steps: list[dict], rec: dict, declared: set[str] | None) -> StepFinding | None:
    """The first agent message that says it works on made-up data."""
    for s in steps:
        if s["kind"] == "message" and is_agent_step(s) and (quote := _match(_INVENTED, s)):
            return _finding(s, "invented_data", "Works on data it made up",
                            f"At step {s['step_index']} the agent turned to made-up data (\"{quote}\") instead of the "
                            "real data the task needs.", "Hallucination", "Works on the task's real data", quote=quote)
    return None


def detect_no_answer(steps: list[dict], rec: dict, declared: set[str] | None) -> StepFinding | None:
    """The harness recorded no final answer, in a format that keeps one apart from the transcript."""
    if rec.get("source_format") not in FINAL_ANSWER_FORMATS or (rec.get("output_text") or "").strip() \
            or rec.get("infra_error"):
        return None
    last = next((s for s in reversed(steps) if is_agent_step(s)), None)
    if last is None:
        return None
    return _finding(last, "no_answer", "Ends without submitting an answer",
                    f"The run ended after step {steps[-1]['step_index']} and the harness recorded no final answer: "
                    f"the agent's last step was {last['step_index']}.", "Premature Termination",
                    "Submits a final answer")


# in the order that decides between findings on the same step
DETECTORS: list[Callable[[list[dict], dict, set[str] | None], StepFinding | None]] = [
    detect_malformed_call,
    detect_unknown_tool,
    detect_unaddressed_error,
    detect_repetition,
    detect_limit,
    detect_giving_up,
    detect_invented_data,
    detect_no_answer,
]


def analyze(steps: list[dict], rec: dict, declared_tools: set[str] | None = None) -> StepFinding | None:
    """The finding at the earliest step, or None when no rule is certain. `steps`: the whole
    transcript in order (store.first_errors.transcript_steps); `rec`: the failure
    (store.analysis.failures, with its run's source_format); `declared_tools`: the tools the log
    declares, when it does."""
    if not steps:
        return None
    steps = as_read(steps)
    found = [f for d in DETECTORS if (f := d(steps, rec, declared_tools)) is not None]
    return min(found, key=lambda f: f.step_index) if found else None
