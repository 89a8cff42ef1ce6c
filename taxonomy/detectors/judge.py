"""The judge's own words: on jury-scored and model-graded logs the judge already wrote why the
output failed, so its sentence becomes the analysis.

Which note: of the prediction's judge notes (`judge_notes`: judge, criterion, score,
explanation) with a written explanation of 4+ words — a mechanical assertion message such as
promptfoo's "Expected output to contain …" is not an explanation — the one with the lowest score
(scores as the judge gave them, numbers or numeric strings; a note without a score comes last).

Which sentence: the explanation's first sentence of 5+ words that states a problem (missing,
omits, lacks, incorrect, not, fails, unsafe, invented …); after a short headline ("Several key
inaccuracies.") the sentence that follows it, which says what they are; else the first problem
sentence, else the first sentence; in "accurate, but misses the plan" the part after the
contrast. Any "GRADE: X" line of a model grader is left out.

What is kept: the judge's explanation is the analysis's summary, verbatim — the judge's words,
not a paraphrase. The title is the problem clause with its subject dropped ("The note omits the
dose" → "Omits the dose"), at most 12 words. Unlike a detector's fixed titles (`Title`), it comes
without a category: the offline title classifier files it, never keywords here, and that
classifier may say Hard to Analyze. The criterion's comment names the judge, its criterion and score and quotes the
sentence; the evidence quotes the output only where the judge itself quotes a piece of it that
occurs verbatim in the output.
"""

from __future__ import annotations

import re

from ..catalog import NO_ERROR
from .base import Evidence, Finding, Title, output_of, sentences, shorten

_MECHANICAL = re.compile(r"^\s*(?:expected\b|assertion\b|output (?:does|did) not (?:contain|match|equal)|"
                         r"custom function returned|javascript code returned|python code returned)", re.I)
_PROBLEM = re.compile(
    r"\b(?:miss(?:es|ing|ed)?|omit\w*|lack\w*|leav\w* out|left out|incomplete|incorrect\w*|inaccura\w*|wrong\w*|"
    r"error\w*|mistake\w*|not\b|no\b|n't\b|never|fail\w*|unsafe|harm\w*|danger\w*|illegal|invent\w*|fabricat\w*|"
    r"hallucinat\w*|irrelevant|off-topic|unrelated|inappropriate|unethical|ignor\w*|misinterpret\w*|misunderst\w*|confus\w*|refus\w*|"
    r"declin\w*|verbose|repetit\w*|redundant|unclear|insufficient|contradict\w*|false|enabl\w*|compl(?:y|ies|ied)|"
    r"provides? (?:specific|detailed|instructions|information|excuses|a template)|only\b|instead)", re.I)
_CONTRAST = re.compile(r"(?:,?\s+but\s+|;\s*however,?\s+|\.\s*however,?\s+|,\s*however,?\s+|\s+yet\s+|,\s*although\s+|"
                       r",\s*though\s+|\s+while\s+it\s+)", re.I)
_SUBJECT = re.compile(
    r"^(?:however,?\s+|overall,?\s+|unfortunately,?\s+)?(?:the|this)\s+(?:generated\s+|model(?:'s)?\s+|assistant(?:'s)?\s+|"
    r"candidate\s+|submitted\s+|final\s+)?(?:response|model|answer|note|clinical note|summary|output|submission|"
    r"translation|assistant|completion|reply|text|solution|essay|email|e-mail|letter|message|story|poem|article|code|"
    r"program|script|paragraph|rewrite|generation)\s+(?:itself\s+)?", re.I)
_COMMENT = re.compile(r",\s+(?:which|who|as|since|because|so that|given that)\s+", re.I)
_GRADE_LINE = re.compile(r"(?im)^\s*grade\s*:.*$")
_QUOTED = re.compile(r"[\"“']([^\"”'\n]{6,200})[\"”']")
TITLE_WORDS = 12


def _score(note: dict) -> float:
    try:
        return float(note.get("score"))
    except (TypeError, ValueError):
        return float("inf")


def _explanation(note: dict) -> str:
    text = _GRADE_LINE.sub("", str(note.get("explanation") or "")).strip()
    return text if len(text.split()) >= 4 and not _MECHANICAL.match(text) else ""


def critical_note(rec: dict) -> dict | None:
    """The judge note that explains the failure: the lowest-scored one with a real explanation."""
    notes = [n for n in rec.get("judge_notes") or [] if isinstance(n, dict) and _explanation(n)]
    if not notes:
        return None
    return min(enumerate(notes), key=lambda iv: (_score(iv[1]), iv[0]))[1]


HEADLINE_WORDS = 5


def problem_sentence(explanation: str) -> str:
    """The sentence of the explanation that states the problem, verbatim: the first of 5+ words
    that names a problem; after a shorter headline that does ("Several key inaccuracies."), the
    sentence after it; else the first problem sentence, else the first sentence."""
    found = sentences(explanation)
    if not found:
        return explanation.strip()
    for i, s in enumerate(found):
        if _PROBLEM.search(s):
            if len(s.split()) >= HEADLINE_WORDS:
                return s
            if i + 1 < len(found) and len(found[i + 1].split()) >= HEADLINE_WORDS:
                return found[i + 1]
    return next((s for s in found if _PROBLEM.search(s)), found[0])


def title_from(sentence: str) -> str:
    """A short error title from the judge's sentence: the problem clause, its subject dropped."""
    parts = _CONTRAST.split(sentence, maxsplit=1)
    clause = parts[1] if len(parts) == 2 and _PROBLEM.search(parts[1]) else sentence
    clause = _SUBJECT.sub("", clause.strip()).strip(" .;:,")
    # a comment on the problem ("…, which is documented in the record") is not the problem; a
    # clause that names it is ("…, which is unsafe")
    parts = _COMMENT.split(clause, maxsplit=1)
    if len(parts) == 2 and not _PROBLEM.search(parts[1]):
        clause = parts[0].strip(" .;:,")
    clause = re.sub(r"^(?:is|are|was)\s+(?=(?:missing|incomplete|incorrect|inaccurate|wrong|unsafe|irrelevant|"
                    r"verbose|unclear|not\b))", "", clause, flags=re.I)
    words = clause.split()
    title = " ".join(words[:TITLE_WORDS]).rstrip(" ,;:")
    return (title[:1].upper() + title[1:]) if title else shorten(sentence, 80)


# an assertion about how the answer was served, not what it says ("Latency 5027ms is greater than
# threshold 3000ms", "Cost 0.0021 is greater than threshold 0.002": promptfoo's latency and cost)
_PERFORMANCE = re.compile(r"^\s*(?:latency|cost|duration|response time)\b[^\n]*\b(?:greater|more|higher|longer|exceeds?|"
                          r"above|over)\b[^\n]*\bthreshold", re.I)


def _is_performance(note: dict) -> bool:
    return str(note.get("judge") or "").casefold() in ("latency", "cost") or bool(
        _PERFORMANCE.match(str(note.get("explanation") or "")))


PERFORMANCE_ONLY = Title("Fails only a latency or cost limit", NO_ERROR)


def detect_performance_only(rec: dict) -> Finding | None:
    """The only assertions the output failed are on its latency or cost: the failure says nothing
    about the answer (No Model Error), whatever else the notes say."""
    notes = [n for n in rec.get("judge_notes") or [] if isinstance(n, dict)]
    failed = [n for n in notes if _score(n) == 0]
    if not failed or not all(_is_performance(n) for n in failed):
        return None
    said = "; ".join(f"\"{str(n.get('explanation') or n.get('judge')).strip()}\"" for n in failed)
    others = len(notes) - len(failed)
    content = f"; the other {others} assertion(s) passed" if others else ""
    out = output_of(rec).strip()
    return PERFORMANCE_ONLY.finding(
        "performance_only",
        f"The output failed only its run's limits on how it was served ({said}){content}: nothing about the answer itself.",
        (Evidence("Meets the run's latency and cost limits", None, comment=f"failed: {said}"),),
        no_model_error=f"the output \"{shorten(out, 60)}\" failed only {said}{content}",
    )


def detect_judge_explanation(rec: dict) -> Finding | None:
    note = critical_note(rec)
    if note is None:
        return None
    explanation = _explanation(note)
    sentence = problem_sentence(explanation)
    who = note.get("judge") or "the judge"
    about = f" on {note['criterion']}" if note.get("criterion") else ""
    score = f" (score {note['score']})" if note.get("score") is not None else ""
    said = f"{who}{about}{score}: \"{sentence}\""
    out = output_of(rec)
    quoted = [q for q in _QUOTED.findall(explanation) if q in out]
    criterion = f"Satisfies the judge{about}"
    evidence = tuple(Evidence(criterion, q, comment=f"judge {said}") for q in quoted[:3]) or (
        Evidence(criterion, None, comment=f"judge {said}"),)
    return Finding("judge_explanation", title_from(sentence), str(note["explanation"]).strip(), evidence)
