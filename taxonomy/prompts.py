"""Our prompts for stage 1 (per-failure analysis) and stage 3 (batched title classification),
their JSON schemas, and the pydantic models that validate the answers.

Changing a prompt's wording means bumping its version: the version is part of every cache key,
so old answers are never served for a new prompt.
"""

from __future__ import annotations

import json
import re
from typing import Literal

from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from .catalog import Taxonomy
from .context import ContextBudget, fit

ANALYSIS_PROMPT_VERSION = "stage1-v2"
CLASSIFY_PROMPT_VERSION = "stage3-v2"
MAX_CORRECT_OUTPUTS = 3


# ---------------------------------------------------------------- stage 1


class Criterion(BaseModel):
    criterion: str
    present_in_wrong: bool | None = None
    quality: Literal["correct", "partially correct", "incorrect"] | None = None
    evidence: str | None = None
    comment: str | None = None


# The analyst's ways of saying a failure is not the model's fault, and the reason stored for each
# (`analyses.no_model_error`). ErrorMap's own convention, every final_answer field empty, means
# "no error found".
NOT_MODEL_ERROR = {
    "no error found": "the analyst found no error",
    "output matches a reference": "the output matches a reference",
    "reference wrong or ambiguous": "the reference is wrong or ambiguous",
}


class FinalAnswer(BaseModel):
    error_summary: str = ""
    error_title: str = Field("", max_length=200)
    not_model_error: Literal["no error found", "output matches a reference", "reference wrong or ambiguous"] | None = None

    @field_validator("error_title", "error_summary", mode="before")
    @classmethod
    def _clean(cls, v):
        return " ".join(v.split()).strip() if isinstance(v, str) else ("" if v is None else v)

    @field_validator("error_title")
    @classmethod
    def _title(cls, v: str) -> str:
        return v.rstrip(".").strip()

    @field_validator("not_model_error", mode="before")
    @classmethod
    def _reason(cls, v):
        if isinstance(v, str):
            v = " ".join(v.replace("_", " ").split()).casefold()
            if v in ("", "none", "null", "no", "false"):
                return None
            aliases = {"output matches the reference": "output matches a reference",
                       "reference is wrong or ambiguous": "reference wrong or ambiguous"}
            return aliases.get(v, v)
        return v

    @model_validator(mode="after")
    def _complete(self) -> "FinalAnswer":
        # a model error has both a title and a summary; "no error" has neither (or says why)
        if self.not_model_error is None and bool(self.error_title) != bool(self.error_summary):
            raise ValueError("error_title and error_summary are both given for a model error, both empty for none")
        return self

    @property
    def no_model_error(self) -> str | None:
        """Why the failure is not the model's fault (None: it is a model error)."""
        if self.not_model_error is not None:
            return NOT_MODEL_ERROR[self.not_model_error]
        return None if self.error_title else NOT_MODEL_ERROR["no error found"]


class Analysis(BaseModel):
    required_criteria: list[Criterion]
    final_answer: FinalAnswer


ANALYSIS_SCHEMA = {
    "name": "error_analysis",
    "schema": {
        "type": "object",
        "properties": {
            "required_criteria": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "criterion": {"type": "string"},
                        "present_in_wrong": {"type": ["boolean", "null"]},
                        "quality": {"type": ["string", "null"], "enum": ["correct", "partially correct", "incorrect", None]},
                        "evidence": {"type": ["string", "null"]},
                        "comment": {"type": ["string", "null"]},
                    },
                    "required": ["criterion", "present_in_wrong", "quality", "evidence", "comment"],
                    "additionalProperties": False,
                },
            },
            "final_answer": {
                "type": "object",
                "properties": {
                    "error_summary": {"type": "string"},
                    "error_title": {"type": "string"},
                    "not_model_error": {"type": ["string", "null"], "enum": [*NOT_MODEL_ERROR, None]},
                },
                "required": ["error_summary", "error_title", "not_model_error"],
                "additionalProperties": False,
            },
        },
        "required": ["required_criteria", "final_answer"],
        "additionalProperties": False,
    },
}

ANALYSIS_SYSTEM = """You are an expert evaluator analysing why a language model's output was scored as a failure on a benchmark item.

You get what the harness knew: the task's instructions, the prompt as the model received it, the
input (with the candidate answers for multiple choice), the reference answers, up to three
correct answers by other models (use them as worked solutions when the reference is only a final
answer), what the benchmark's own judges said about the failed output, how it was scored, and the
failed output itself.

1. List the criteria a correct answer must meet. For each: whether the failed output attempts it
   (present_in_wrong), its quality there (correct, partially correct, incorrect, or null when
   absent), evidence quoted verbatim from the failed output (copy the exact characters; null when
   there is nothing to quote), and a short comment.
2. Find the FIRST major error: the earliest mistake that sets the answer on the wrong path.
   Later errors that follow from it do not count.
3. final_answer.error_summary: two or three sentences about the model's thinking (what it
   misunderstood, assumed or skipped), not a restatement of the wrong answer.
   final_answer.error_title: a short free-form title (3-10 words) naming the failed skill,
   general enough to recur across items (e.g. "Misapplies the chain rule", not item specifics).
4. Not every failure is the model's fault. If you find no error in the failed output, leave
   error_summary and error_title empty and set not_model_error to "no error found". If the output
   matches a reference once numbers, case, punctuation, articles or wording are normalised, set it
   to "output matches a reference"; if the reference itself is wrong or ambiguous, to "reference
   wrong or ambiguous". In those two cases say why in error_summary and leave error_title empty.
   Otherwise not_model_error is null.

Answer with one JSON object only: {"required_criteria": [...], "final_answer": {"error_summary": ..., "error_title": ..., "not_model_error": ...}}."""

# The stage-1 fields, in prompt order: their tag and the label a context note uses for them.
_FIELD_LABELS = {
    "instructions": "task instructions",
    "prompt": "prompt as sent",
    "input": "input",
    "choices": "candidate answers",
    "references": "references",
    "other_references": "other references",
    "correct_1": "correct output 1",
    "correct_2": "correct output 2",
    "correct_3": "correct output 3",
    "judges": "judge notes",
    "scoring": "scoring",
    "output": "failed output",
    "analysis": "analysis under review",
}


def render_input(rec: dict) -> str:
    if rec.get("input_text"):
        return rec["input_text"]
    msgs = rec.get("input_messages") or []
    return "\n".join(f"[{m.get('role', '?')}] {m.get('content', '')}" for m in msgs)


_ROLE_HEADER = re.compile(r"(?m)^\[(?:system|developer|user|assistant|tool)\] ")


def _norm(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.casefold()))


def informative_outputs(correct: list[tuple[str, str]], rec: dict, n: int = MAX_CORRECT_OUTPUTS) -> list[tuple[str, str]]:
    """Up to `n` correct outputs of other models that say more than the reference: a bare option
    letter or a copy of a reference adds nothing, so those are left out; the rest, distinct,
    longest (most worked) first."""
    known = {_norm(str(r.get("text", ""))) for r in rec.get("refs") or []}
    known |= {_norm(k) for k in (rec.get("choices") or {})} | {_norm(v) for v in (rec.get("choices") or {}).values()}
    seen, kept = set(), []
    for model, text in correct:
        key = _norm(text or "")
        if not key or key in known or key in seen or len(key.split()) <= 3:
            continue
        seen.add(key)
        kept.append((model, text))
    kept.sort(key=lambda mt: (-len(mt[1]), mt[0]))
    return kept[:n]


def _judge_lines(notes: list[dict] | None) -> str:
    lines = []
    for n in notes or []:
        who = " · ".join(str(x) for x in (n.get("judge"), n.get("criterion")) if x not in (None, ""))
        score = n.get("score")
        head = f"- [{who or 'judge'}]" + (f" score {score:g}" if isinstance(score, (int, float)) else f" score {score}" if score is not None else "")
        explanation = (n.get("explanation") or "").strip()
        lines.append(head + (": " + explanation.replace("\n", "\n  ") if explanation else ""))
    return "\n".join(lines)


def _number(x) -> str:
    return f"{x:g}" if isinstance(x, (int, float)) else str(x)


def scoring_text(rec: dict) -> str:
    """How the failure was scored and why generation stopped, in words."""
    lines = []
    metric, score = rec.get("main_metric"), rec.get("score")
    if metric or score is not None:
        line = f"metric {metric or '(unnamed)'}: this output scored {_number(score) if score is not None else 'no number'}"
        if rec.get("pass_threshold") is not None:
            line += f"; a pass needs {'at most' if rec.get('lower_is_better') else 'at least'} {_number(rec['pass_threshold'])}"
        if rec.get("metric_max") is not None:
            line += f" (scale up to {_number(rec['metric_max'])}{', ' + rec['scale_source'] if rec.get('scale_source') else ''})"
        lines.append(line)
    if rec.get("finish_reason") or rec.get("output_tokens") is not None:
        parts = []
        if rec.get("finish_reason"):
            parts.append(f"generation stopped: {rec['finish_reason']}")
        if rec.get("output_tokens") is not None:
            parts.append(f"{rec['output_tokens']} output tokens" + (f" of at most {rec['max_tokens']}" if rec.get("max_tokens") else ""))
        lines.append("; ".join(parts))
    elif rec.get("max_tokens"):
        lines.append(f"generation limit: {rec['max_tokens']} tokens")
    if rec.get("output_kind"):
        lines.append(f"output kind: {rec['output_kind']}")
    if rec.get("verdict_note"):
        lines.append(f"note: {rec['verdict_note']}")
    return "\n".join(lines)


def analysis_fields(rec: dict, correct: list[tuple[str, str]]) -> dict[str, str]:
    """The texts of one failure's stage-1 prompt, whole, by field (empty fields left out)."""
    refs = rec.get("refs") or []
    input_text = render_input(rec)
    prompt = rec.get("prompt_text") or ""
    # the prompt as sent only when it says more than the instructions and the input (the role
    # headers of a rendered conversation aside)
    bare = _norm(_ROLE_HEADER.sub("", prompt))
    if bare in (_norm(input_text), _norm((rec.get("instructions") or "") + " " + input_text)):
        prompt = ""
    fields = {
        "instructions": rec.get("instructions") or "",
        "prompt": prompt,
        "input": input_text,
        "choices": "\n".join(f"{k}. {v}" for k, v in (rec.get("choices") or {}).items()),
        "references": "\n".join(f"- {r['text']}" for r in refs if r.get("correct")),
        "other_references": "\n".join(f"- {r['text']}" for r in refs if not r.get("correct")),
        **{f"correct_{i}": text for i, (_, text) in enumerate(informative_outputs(correct, rec), start=1)},
        "judges": _judge_lines(rec.get("judge_notes")),
        "scoring": scoring_text(rec),
        "output": rec.get("output_text") or "",
    }
    return {k: v for k, v in fields.items() if v or k == "output"}


_TAGS = {
    "instructions": "<task_instructions note=\"what the harness told the model for every item\">\n{}\n</task_instructions>",
    "prompt": "<prompt_as_sent note=\"the whole prompt the model received\">\n{}\n</prompt_as_sent>",
    "input": "<input>\n{}\n</input>",
    "choices": "<candidate_answers>\n{}\n</candidate_answers>",
    "references": "<reference_answers>\n{}\n</reference_answers>",
    "other_references": "<other_references note=\"labels or references not marked correct\">\n{}\n</other_references>",
    "judges": "<judge_notes note=\"what the benchmark's own judges said about the failed output\">\n{}\n</judge_notes>",
    "scoring": "<scoring>\n{}\n</scoring>",
    "output": "<failed_output>\n{}\n</failed_output>",
    "analysis": "<analysis_under_review>\n{}\n</analysis_under_review>",
}


def _user_text(fields: dict[str, str], mapped_output: str | None, closing: str) -> str:
    parts = []
    for key in _FIELD_LABELS:
        if key not in fields:
            continue
        if key.startswith("correct_"):
            parts.append(f"<correct_output_of_another_model n=\"{key[-1]}\">\n{fields[key]}\n</correct_output_of_another_model>")
        else:
            parts.append(_TAGS[key].format(fields[key]))
        if key == "output" and mapped_output and mapped_output.strip() != fields["output"].strip():
            parts.append(f"The failed output was read as the answer: {mapped_output}")
    parts.append(closing)
    return "\n\n".join(parts)


def failure_messages(system: str, fields: dict[str, str], rec: dict, closing: str,
                     budget: ContextBudget | None) -> tuple[list[dict], str | None]:
    """A request about one failure from its fields, and its context note: nothing is cut unless
    the whole prompt exceeds `budget` (context.fit states the rule)."""
    def messages(f: dict[str, str]) -> list[dict]:
        return [{"role": "system", "content": system},
                {"role": "user", "content": _user_text(f, rec.get("mapped_output"), closing)}]

    def tokens(f: dict[str, str]) -> int:
        return sum(budget.count(m["content"]) for m in messages(f))

    fields, note = fit(fields, tokens, budget, _FIELD_LABELS)
    return messages(fields), note


def analysis_messages(rec: dict, correct: list[tuple[str, str]], budget: ContextBudget | None = None) -> tuple[list[dict], str | None]:
    """The stage-1 request for one failure and its context note; `correct` = [(model, output)] of
    other models that passed."""
    return failure_messages(ANALYSIS_SYSTEM, analysis_fields(rec, correct), rec,
                            "Identify the first major error of the failed output, or say why it is not the model's fault.",
                            budget)


def _json_text(text: str) -> str:
    text = text.strip()
    fenced = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", text, re.S)
    return fenced.group(1) if fenced else text


def parse_analysis(text: str) -> Analysis | None:
    """The validated answer, or None when it is not the JSON we asked for."""
    try:
        return Analysis.model_validate_json(_json_text(text))
    except ValidationError:
        return None


# ---------------------------------------------------------------- stage 3


class Classified(BaseModel):
    error_text: str
    category: str


class Classification(BaseModel):
    classified_errors: list[Classified]


def classify_schema(taxonomy: Taxonomy) -> dict:
    return {
        "name": "error_classification",
        "schema": {
            "type": "object",
            "properties": {
                "classified_errors": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "error_text": {"type": "string"},
                            "category": {"type": "string", "enum": taxonomy.names},
                        },
                        "required": ["error_text", "category"],
                        "additionalProperties": False,
                    },
                }
            },
            "required": ["classified_errors"],
            "additionalProperties": False,
        },
    }


def classify_messages(taxonomy: Taxonomy, titles: list[str], attempt: int = 1,
                      summaries: dict[str, str] | None = None) -> list[dict]:
    """The stage-3 request: each title with the summary of an analysis that gave it (the summary
    says what the title names; the title is what is answered). A follow-up attempt says so, which
    also gives it its own cache key (re-sending identical messages would only replay the cached,
    incomplete answer)."""
    cats = "\n".join(f"- {c.name}: {c.description}" for c in taxonomy.categories)
    system = (
        "You classify errors found in analyses of language-model failures into a fixed "
        f"taxonomy ({taxonomy.version}). Each error is a short title with the analyst's summary of "
        "what went wrong; classify by both, the summary deciding when the title is vague. Assign "
        "every error exactly one category, copied exactly from this list; use Other only when no "
        "category fits.\n\n"
        f"{cats}\n\n"
        'Answer with one JSON object: {"classified_errors": [{"error_text": <the error_title, verbatim>, '
        '"category": <category>}, ...]} with one entry per error, in the given order.'
    )
    note = (
        f"Attempt {attempt}: an earlier answer left these errors out or gave them a category that "
        "is not in the list. Answer each exactly once.\n\n"
        if attempt > 1 else ""
    )
    summaries = summaries or {}
    items = [{"error_title": t, **({"error_summary": summaries[t]} if summaries.get(t) else {})} for t in titles]
    user = note + "TITLES TO CLASSIFY (JSON):\n" + json.dumps(items, ensure_ascii=False)
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def parse_classification(text: str) -> Classification | None:
    try:
        return Classification.model_validate_json(_json_text(text))
    except ValidationError:
        return None
