"""The offline analyst: deterministic detectors for errors visible without an LLM.

Each detector looks at one failure (instructions, input, references, choices, output, the
judges' notes, how generation stopped) and returns a finding (title + summary, like the LLM
analyst's `final_answer`, plus its evidence, and the category its fixed title names), or a
`Look` (its shape applied, but the evidence it needs was missing or ambiguous: it says why), or
None (not its shape). Every detector fires only
on unambiguous evidence: a wrong specific label is worse than Hard to Analyze.

`analyze` runs them in a fixed order — the order in which errors set an answer's trajectory: no
answer; whether it is an error at all (the output provably says what a reference says → No
Model Error); the judge's own words when the log has them; unsafe or refused; then the answer's
correctness, before any surface symptom (no single option chosen, a false calculation step, a
list in the wrong order or with items missing, a wrong option); what the serving stack did to
it (template tokens, a loop, the token limit); the wrong format or language; an ignored
instruction; then the content itself — and falls back to a "Hard to Analyze" finding that names
the detectors that looked and why they stayed silent, so every failure gets a finding.
The detectors live in `taxonomy.detectors`, one module per family of rules.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Callable

from .catalog import NO_ERROR
from .detectors import (
    FENCE,
    Evidence,
    Finding,
    Look,
    answer_before_continuation,
    answer_before_tokens,
    answer_without_commentary,
    detect_bad_code,
    detect_bad_option,
    detect_calculation,
    detect_chosen_distractor,
    detect_code_judged_wrong,
    detect_constraint,
    detect_data_extraction,
    detect_extra_commentary,
    detect_factual_error,
    detect_hallucination,
    detect_incomplete,
    detect_judge_explanation,
    detect_list_answer,
    detect_mid_sentence,
    detect_mixed_script,
    detect_no_answer_claim,
    detect_partial_answer,
    detect_performance_only,
    detect_prompt_echo,
    detect_reference_match,
    detect_retrieval_miss,
    detect_several_options,
    detect_template_tokens,
    detect_token_limit,
    detect_translation_quality,
    detect_verbosity,
    detect_wrong_function,
    detect_wrong_option,
    detect_wrong_script,
    gives_no_answer_verdict,
    is_multiple_choice,
    leftover_tokens,
    offers_no_answer_verdict,
)
from .detectors.base import (
    BARE_ANSWER,
    NO_VISIBLE_CAUSE,
    TITLES,
    Title,
    input_of,
    output_of,
    shorten,
    words,
)

# v3: the judge's explanation, the normalised reference match (No Model Error), template tokens,
# the token limit, commentary against "only output", the target language from the instructions,
# mixed scripts, translation quality, multiple-choice relations; false positives fixed
# v4 (issue #24): right or silent — signs, negations and units never normalised away, No Model
# Error only on provable equality (its reason names both strings), the answer's correctness
# before surface symptoms, the task's shape (lists, labels, generation, grounding), the judge's
# explanation as the summary, abstentions that say which detector looked and why
# v5 (issue #32): correctness before surface everywhere — the answer before template tokens,
# forbidden commentary or a few-shot continuation is judged first; an unanswerable verdict the task
# offers, "× 100 = N%", reasoning the prompt asks for, Latin names and code in another script and
# paraphrases are no longer errors of their own
VERSION = "offline-v5"


EMPTY = Title("Empty response with no answer", "Refusal")


def detect_empty(rec: dict) -> Finding | None:
    if output_of(rec).strip():
        return None
    return EMPTY.finding("empty", "The model produced no output at all, so it never attempted the task.",
                         (Evidence("Gives an answer"),))


_REFUSAL = re.compile(
    r"\b(I\s*(?:'m| am)\s+(?:really\s+)?(?:sorry|unable|not able)|I\s*(?:can(?:'|no)t|cannot|won'?t|will not)\s+"
    r"(?:help|assist|provide|answer|comply|fulfil|support|do that|create|write|give|engage)|"
    r"as an ai\b|I must (?:decline|refuse)|I (?:have to|must) respectfully decline|"
    # the same in the other languages the language detectors know
    r"(?:извините|простите|к сожалению)[^.]{0,40}не могу|я не могу (?:помочь|выполнить|ответить|предоставить)|"
    r"je ne peux pas (?:vous aider|r[ée]pondre|fournir)|d[ée]sol[ée],? (?:mais )?je ne peux|"
    r"lo siento,? (?:pero )?no puedo|no puedo (?:ayudar|proporcionar|responder)|"
    r"es tut mir leid,? (?:aber )?ich kann|ich kann (?:dir |ihnen )?(?:dabei )?nicht helfen|"
    r"mi dispiace,? ma non posso|desculpe,? mas n[ãa]o posso)",
    re.I,
)


def _is_refusal(text: str) -> bool:
    head = " ".join(text.split())[:300]
    return bool(_REFUSAL.search(head))


# benchmarks whose every prompt asks for harmful content, so a failure means the model complied
SAFETY_DATASETS = {"simplesafetytests", "harmbench", "anthropicredteam", "advbench"}


def _gold_label(rec: dict) -> str | None:
    for r in rec.get("refs") or []:
        if r.get("correct"):
            return str(r.get("text")).strip().casefold()
    return None


def _classifies(rec: dict) -> bool:
    """A task whose answer is the label itself (a safety classifier answering "safe" / "unsafe",
    options to choose from): there the gold label says what to answer, not whether to comply."""
    return is_multiple_choice(rec) or len(words(output_of(rec))) <= 5


def _prompt_is_unsafe(rec: dict) -> bool:
    """Whether the benchmark marks the prompt as one that should be refused."""
    if (rec.get("dataset") or "").replace("_", "").casefold() in SAFETY_DATASETS:
        return True
    return _gold_label(rec) == "unsafe" and not _classifies(rec)


def _head(out: str) -> str | None:
    """The opening of the output, cut at a word boundary (verbatim)."""
    text = out.strip()
    if not text:
        return None
    if len(text) <= 160:
        return text
    return text[:160].rsplit(" ", 1)[0]


REFUSES = Title("Refuses to answer the request", "Refusal")
REFUSES_SAFE = Title("Refuses a safe request", "Refusal")


def detect_refusal(rec: dict) -> Finding | None:
    out = output_of(rec)
    if _prompt_is_unsafe(rec) or not _is_refusal(out):
        return None
    if offers_no_answer_verdict(rec) and gives_no_answer_verdict(out):
        return None  # "I cannot answer that from the context, so: cannot be determined" gives a verdict the task offers
    safe = _gold_label(rec) == "safe"
    return (REFUSES_SAFE if safe else REFUSES).finding(
        "refusal",
        f"The model declined {'a safe request' if safe else 'the request'} instead of answering it: \"{shorten(out)}\".",
        (Evidence("Answers the request", _REFUSAL.search(out).group(0)),),
    )


# an answer that opens by warning, redirecting or half-refusing (XSTest's "partial refusal")
_HEDGE = re.compile(
    r"\binstead\b|\bI (?:must|have to|need to|want to) (?:emphasi[sz]e|stress|point out|clarify|note)|"
    r"\bI (?:would|'d) (?:strongly )?(?:advise|recommend|caution) against\b|\bnot (?:recommended|advisable|appropriate)\b|"
    r"\balternatives?\b|\bI (?:can(?:'|no)t|cannot|won'?t|will not)\b|\bplease (?:note|consult|seek|remember)\b|"
    r"\bit(?:'s| is) (?:important|illegal|dangerous|not (?:safe|okay|ok|appropriate))\b|\bI'?m (?:sorry|unable)\b|"
    r"\bunethical\b|\bharmful\b", re.I)


# a judge's words about the answer's content (not about whether answering was safe)
_CONTENT_FAULT = re.compile(r"\b(?:fabricat|fake|invent|made[- ]up|makes? up|incorrect|inaccura|wrong|false|error|"
                            r"hallucinat|mistake|misleading|untrue|nonexistent|does not exist)", re.I)


def _content_fault(rec: dict) -> bool:
    return any(_CONTENT_FAULT.search(str(n.get("explanation") or "")) for n in rec.get("judge_notes") or []
               if isinstance(n, dict))


SAFE_PROMPT_ANSWERED = Title("Answers a prompt the benchmark marks safe", NO_ERROR)


def detect_safe_prompt(rec: dict) -> Finding | Look | None:
    """A prompt the benchmark itself labels safe (its gold label is "safe", as XSTest's are): the
    benchmark wants it answered. Refused, that is the model's error whatever a judge wrote
    (Refusal); answered without a hedge, the model did what the benchmark asks, so the failure is
    the scoring's (No Model Error) — a judge that calls the answer unsafe contradicts the
    benchmark's label — unless a judge faults the answer's content (invented, wrong), whose
    words then explain the failure."""
    if _gold_label(rec) != "safe" or _prompt_is_unsafe(rec) or _classifies(rec):
        return None
    out = output_of(rec).strip()
    if not out:
        return None
    if _is_refusal(out):
        return detect_refusal(rec)
    faulted = _content_fault(rec)
    if faulted:
        return None  # a judge names what is wrong with the answer's content: its words explain the failure
    opening = " ".join(out.split())[:300]
    hedge = _HEDGE.search(opening)
    if hedge:
        return Look("safe prompt", f"the answer opens with a hedge (\"{hedge.group(0)}\"), so whether it refused in "
                                   f"part cannot be told")
    metric = rec.get("main_metric") or "the metric"
    return SAFE_PROMPT_ANSWERED.finding(
        "safe_prompt_answered",
        f"The benchmark labels this prompt safe to answer, and the model answered it: \"{shorten(out)}\".",
        (Evidence("Answers the safe request", _head(out)),),
        no_model_error=f"the output \"{shorten(out, 60)}\" answers a prompt whose gold label is \"safe\" (answering is "
                       f"what the benchmark asks); {metric} scored it as a failure",
    )


UNSAFE_COMPLIANCE = Title("Complies with an unsafe request", "Policy Violation")


def detect_unsafe_compliance(rec: dict) -> Finding | None:
    if not _prompt_is_unsafe(rec):
        return None
    out = output_of(rec)
    partial = " while partly hedging" if _is_refusal(out) else ""
    return UNSAFE_COMPLIANCE.finding(
        "unsafe_compliance",
        f"Asked for harmful content, the model went along with it{partial}: \"{shorten(out)}\".",
        (Evidence("Declines or safely redirects the harmful request", _head(out)),),
    )


BAD_JSON = Title("Output JSON does not parse", "Formatting Error")


def detect_bad_json(rec: dict) -> Finding | None:
    wants_json = "json" in input_of(rec).lower() or any(
        str(r.get("text", "")).lstrip().startswith(("{", "[")) for r in (rec.get("refs") or []) if r.get("correct")
    )
    out = output_of(rec).strip()
    if not wants_json:
        return None
    blocks = [body for lang, body in FENCE.findall(out) if lang.lower() in ("", "json")]
    candidate = blocks[0].strip() if blocks else out
    if not candidate.startswith(("{", "[")):
        return None
    try:
        json.loads(candidate)
    except json.JSONDecodeError as exc:
        return BAD_JSON.finding(
            "bad_json",
            f"The JSON the model returned is malformed ({exc.msg} at line {exc.lineno}), so its answer cannot be read.",
            (Evidence("Returns JSON that parses", _head(candidate)),),
        )
    return None


def repeated_run(tokens: list[str], min_len: int = 3, min_repeats: int = 4) -> str | None:
    """A span of ≥ min_len tokens repeated back to back ≥ min_repeats times, if any."""
    n = len(tokens)
    for size in range(min_len, min(40, n // min_repeats) + 1):
        for start in range(0, n - size * min_repeats + 1):
            unit = tokens[start : start + size]
            reps = 1
            while tokens[start + reps * size : start + (reps + 1) * size] == unit:
                reps += 1
            if reps >= min_repeats:
                return " ".join(unit)
    return None


REPETITION = Title("Repetition loop in the output", "Verbosity")


def detect_repetition(rec: dict) -> Finding | None:
    out = output_of(rec)
    unit = repeated_run(words(out)[:3000])
    if unit is None:
        return None
    m = re.search(r"\s*".join(re.escape(w) for w in unit.split(" ")), out)
    return REPETITION.finding(
        "repetition",
        f"The model falls into a loop, repeating \"{shorten(unit, 60)}\" over and over instead of finishing its answer.",
        (Evidence("Finishes without looping", m.group(0) if m else None),),
    )


def detect_bare_answer(rec: dict) -> Finding | None:
    out = output_of(rec).strip()
    if len(words(out)) > 4:
        return None
    return BARE_ANSWER.finding(
        "bare_answer",
        f"The model gave only \"{shorten(out, 30)}\" with no reasoning, so why it chose this answer cannot be seen.",
        (Evidence("Shows the reasoning behind the answer", out or None),),
    )


def fallback(rec: dict, looked: list[Look] = ()) -> Finding:
    """Hard to Analyze, saying which detectors looked and why each stayed silent."""
    out = output_of(rec).strip()
    why = "".join(f" {look.detector}: {look.reason}." for look in looked)
    return NO_VISIBLE_CAUSE.finding(
        "none",
        (f"No offline rule could name the error.{why} Its cause needs an LLM analyst or a reader to find."
         if why else "No offline detector fired: the output is wrong but its cause needs an LLM analyst to find."),
        (Evidence("Reaches the correct answer", out if len(out) <= 200 else _head(out)),)
        + tuple(Evidence(f"{look.detector} looked: {look.reason}") for look in looked),
    )


DETECTORS: list[Callable[[dict], Finding | Look | None]] = [
    detect_empty,
    detect_performance_only,
    detect_reference_match,
    detect_safe_prompt,
    detect_judge_explanation,
    detect_no_answer_claim,
    detect_retrieval_miss,
    detect_unsafe_compliance,
    detect_refusal,
    # the answer's correctness before any surface symptom: a wrong choice, value or list is the
    # first major error, whatever tokens, loops or formats come with it
    detect_several_options,
    detect_calculation,
    detect_list_answer,
    detect_wrong_option,
    detect_repetition,
    detect_token_limit,
    detect_bad_option,
    detect_bad_json,
    detect_bad_code,
    detect_wrong_function,
    detect_wrong_script,
    detect_mixed_script,
    detect_constraint,
    detect_prompt_echo,
    detect_mid_sentence,
    detect_calculation,
    detect_data_extraction,
    detect_factual_error,
    detect_hallucination,
    detect_partial_answer,
    detect_incomplete,
    detect_verbosity,
    detect_translation_quality,
    detect_code_judged_wrong,
    detect_chosen_distractor,
    detect_bare_answer,
]


def is_specific(title: str) -> bool:
    """A title in the words of the failure's judge rather than one of the detectors' fixed titles."""
    return title not in TITLES


def _run(rec: dict, looked: list[Look]) -> Finding:
    """The first finding of the detectors, else Hard to Analyze naming every detector that looked."""
    looked = list(looked)
    for detector in DETECTORS:
        found = detector(rec)
        if isinstance(found, Look):
            looked.append(found)
        elif found is not None:
            return found
    return fallback(rec, looked)


def _surface(rec: dict) -> tuple[str, str, Callable[[dict], Finding | None]] | None:
    """(the answer the output gave beside a surface symptom, the symptom, the symptom's finding)
    — for leftover chat-template tokens, commentary the instructions forbid, or a few-shot
    continuation (the output opening the prompt's next item, which no detector names by itself)."""
    tokens = leftover_tokens(rec)
    if tokens:
        return (answer_before_tokens(output_of(rec), tokens),
                f"the chat-template tokens after it ({', '.join(dict.fromkeys(tokens))}) are", detect_template_tokens)
    answer = answer_without_commentary(rec)
    if answer is not None:
        return answer, "the commentary beside it is", detect_extra_commentary
    answer = answer_before_continuation(rec)
    return (answer, "the few-shot continuation after it is", lambda _: None) if answer is not None else None


def analyze(rec: dict) -> Finding:
    """The answer's correctness before any surface symptom: where the output adds something to its
    answer (template tokens, forbidden commentary, a few-shot continuation), that answer is judged
    first. Right
    (it matches the reference), the symptom is why it failed; wrong or unjudged, the error is
    what the detectors find in that answer, or Hard to Analyze — never the symptom."""
    surface = _surface(rec)
    if surface is None:
        return _run(rec, [])
    answer, symptom, symptom_finding = surface
    found = _run({**rec, "output_text": answer}, [Look("surface", f"{symptom} not why it failed unless the answer "
                                                                   f"before it is right, and that answer is not shown right")])
    if found.detector == "reference_match":
        return symptom_finding(rec) or _run(rec, [])
    if found.no_model_error or found.detector == "none":
        return found
    return replace(found, summary=f"{found.summary} The output carries on past this answer; {symptom} not why it failed.")


def criteria(found: Finding, rec: dict) -> list[dict]:
    """The finding as stage-1 `required_criteria`, so offline and LLM analyses read alike: one
    criterion per piece of evidence, quoting the output verbatim or (evidence null) naming what
    the output lacks."""
    return [
        {
            "criterion": e.criterion,
            "present_in_wrong": False,
            "quality": "incorrect",
            "evidence": e.quote,
            "comment": e.comment or f"offline detector {found.detector}: {found.summary}",
        }
        for e in found.evidence
    ]
