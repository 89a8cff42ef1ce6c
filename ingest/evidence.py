"""What a harness knew about a prediction besides its score, in the shapes readers share: the
prompt as the model saw it, the task's instructions, the judges' own words (`JudgeNote`s), why
generation stopped and how long it ran.

Each reader extracts its format's evidence in small functions of its own (named `_evidence_*`
or after the field); what several formats share lives here.
"""

from __future__ import annotations

import json
import math
from typing import Any, Iterable

from core.numbers import number_or_none
from core.records import JudgeNote

# Judge fields as LLM-judge annotators name them (HELM annotators, EEE, promptfoo): the written
# reason, the score or label, and texts worth reading next to the reason.
EXPLANATION_FIELDS = ("explanation", "reasoning", "justification", "rationale", "feedback", "comment",
                      "critique", "reason", "response_text")
SCORE_FIELDS = ("score", "label", "equivalence_judgement", "judgement", "verdict", "rating", "grade",
                "decision")
EXTRA_FIELDS = {"strengths": "strengths", "weaknesses": "weaknesses", "student_final_answer": "answer read as"}
_FIELDS = (*EXPLANATION_FIELDS, *SCORE_FIELDS, *EXTRA_FIELDS)
# Keys of an annotation that hold what the judge was asked, not what it said.
PROMPT_KEYS = ("prompt_text", "prompt", "annotator_prompt")


def text_of(content: Any) -> str | None:
    """A message content as text: a string, or the text parts of a list of typed parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)]
        return "\n".join(parts) if parts else None
    return None


def render_messages(messages: Any) -> str | None:
    """Chat messages as one text, each headed by its role (and name, e.g. a few-shot example)."""
    if not isinstance(messages, list):
        return None
    blocks = []
    for m in messages:
        if not isinstance(m, dict):
            continue
        text = text_of(m.get("content"))
        if text is None:
            continue
        role = str(m.get("role") or "?")
        name = m.get("name")
        blocks.append(f"[{role}{f' {name}' if isinstance(name, str) and name else ''}] {text.strip()}")
    return "\n\n".join(blocks) if blocks else None


def system_text(messages: Any) -> str | None:
    """The system messages of a conversation (few-shot examples sent as named system messages
    left out), joined."""
    if not isinstance(messages, list):
        return None
    texts = [
        text_of(m.get("content")) for m in messages
        if isinstance(m, dict) and m.get("role") in ("system", "developer") and not m.get("name")
    ]
    texts = [t.strip() for t in texts if t and t.strip()]
    return "\n\n".join(texts) if texts else None


def common(values: Iterable[str | None]) -> str | None:
    """The one value every instance shares (e.g. a system prompt), else None: a run's
    instructions are what every instance was given."""
    seen = set()
    for v in values:
        seen.add(v)
        if len(seen) > 1:
            return None
    return seen.pop() if seen else None


def positive_int(value: Any) -> int | None:
    """A token count or limit as the log gives it (ints, floats like 168.0, numeric strings)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None  # float() of a 400-digit int would overflow
    if isinstance(value, str):
        value = number_or_none(value)  # ASCII digits only
    if isinstance(value, float) and math.isfinite(value) and value >= 0 and value.is_integer():
        return int(value)
    return None


def judge_score(value: Any) -> float | str | None:
    """A judge's score as it gave it: numbers (numeric text too) as numbers, labels and booleans as text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        number = number_or_none(value)  # None for an int too large for a float
        return number if number is not None and math.isfinite(number) else None
    if isinstance(value, str):
        text = value.strip()
        number = number_or_none(text)  # ASCII digits only
        if number is None:
            return text or None
        return number if math.isfinite(number) else text
    if value is None:
        return None
    return json.dumps(value, ensure_ascii=False)


def note(judge: str | None, criterion: str | None, fields: dict) -> JudgeNote | None:
    """One note from a judge's fields (its score, reason, strengths, …); None when it said nothing."""
    texts = [str(fields[k]).strip() for k in EXPLANATION_FIELDS if isinstance(fields.get(k), str) and fields[k].strip()]
    texts += [f"{label}: {str(fields[k]).strip()}" for k, label in EXTRA_FIELDS.items()
              if isinstance(fields.get(k), (str, int, float)) and str(fields[k]).strip()]
    score = next((judge_score(fields[k]) for k in SCORE_FIELDS if fields.get(k) is not None), None)
    if score is None and not texts:
        return None
    return JudgeNote(judge=judge, criterion=criterion, score=score, explanation="\n".join(texts) or None)


def _split_field(key: str) -> tuple[str | None, str | None]:
    """("gpt", "reasoning") for "gpt_reasoning"; (None, "score") for "score"; (None, None) for other keys."""
    for field in sorted(_FIELDS, key=len, reverse=True):
        if key == field:
            return None, field
        if key.endswith("_" + field):
            return key[: -len(field) - 1], field
    return None, None


def annotation_notes(annotations: Any) -> list[JudgeNote] | None:
    """Judge notes from free-form LLM-judge annotations `{annotator: {...}}`, in the shapes HELM's
    annotators write:

    - a jury per criterion (MedHELM): `{judge: {criterion: {score, explanation}}}`;
    - one judge's answer: `{judge: {score, explanation}}`;
    - prefixed fields (HELM Safety, WildBench, Omni-MATH): `{gpt_score, gpt_reasoning, ...}`;
    - the annotator's own fields: `{score, reasoning}`, `{label, explanation}`.

    The judge's prompt (`prompt_text`) is left out: it repeats the input and the output."""
    if not isinstance(annotations, dict):
        return None
    notes: list[JudgeNote] = []
    for annotator, value in annotations.items():
        if not isinstance(value, dict):
            continue
        flat: dict[str | None, dict] = {}
        for key, v in value.items():
            if key in PROMPT_KEYS:
                continue
            if isinstance(v, dict):
                notes += _judge_dict(f"{annotator}/{key}", v)
                continue
            judge, field = _split_field(key)
            if field is None:
                # a field no judge format names: keep it as the annotator's word on `key`
                n = note(annotator, key, {"score": v} if not isinstance(v, str) or len(v) < 40 else {"explanation": v})
                notes += [n] if n else []
                continue
            flat.setdefault(judge, {})[field] = v
        for judge, fields in flat.items():
            n = note(f"{annotator}/{judge}" if judge else annotator, None, fields)
            notes += [n] if n else []
    return notes or None


def _judge_dict(judge: str, value: dict) -> list[JudgeNote]:
    if any(k in value for k in _FIELDS):
        n = note(judge, None, value)
        return [n] if n else []
    out = []
    for criterion, fields in value.items():
        n = note(judge, str(criterion), fields if isinstance(fields, dict) else {"score": fields})
        out += [n] if n else []
    return out
