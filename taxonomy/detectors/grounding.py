"""Claims the input and references do not support.

- Hallucination: on a task grounded in a source (an input of 50+ words that gives a passage,
  documents, a transcript or record, or says to use one — `shape.is_grounded`; never a task that
  asks for new content, `shape.asks_for_new_content`, and never a closed-book question, whose
  wrong details are wrong facts, not inventions), the output states specifics — numbers with two
  or more digits or a unit, e-mail addresses, URLs, capitalised names — found in neither the
  input, the references nor the options. Numbers said in words count as given ("one thirty over
  eighty" gives 130 and 80); numbers that label steps ("Thought 10:", "Step 3.") are not
  details; a capitalised word that the source or the output also writes in lower case, a heading
  word, or the first word of a line, list item or heading is not a name. Numbers are not checked
  in a worked answer (one that shows arithmetic) or when the question asks for a computed number
  ("how many", "difference", "more than", "in total").
- Factual Error: a closed-book question (input of at most 60 words) that asks for a number ("how
  many", "what year", "when did" …) and whose reference is a short numeric answer (a year, a
  count); a short output (at most 30 words) gives a different number and never the reference's.
"""

from __future__ import annotations

import re
from fractions import Fraction

from .base import (
    STOPWORDS,
    Evidence,
    Finding,
    Look,
    Title,
    explicit_question,
    gold_refs,
    input_of,
    number_values,
    numbers_in,
    output_of,
    shorten,
    stem,
    unit_of,
    word_count,
)
from .choice import is_multiple_choice
from .echo import answer_part
from .shape import asks_for_new_content, is_grounded, label_spans

GROUNDED_MIN_WORDS = 50
_UNITS = {"mg", "mcg", "g", "kg", "ml", "l", "%", "mmhg", "bpm", "unit", "units", "tablet", "tablets",
          "year", "years", "month", "months", "week", "weeks", "day", "days", "hour", "hours", "minute",
          "minutes", "percent", "dollars", "cm", "mm", "km", "miles", "lb", "lbs", "times"}
_EMAIL_URL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+|https?://[^\s)>\]]+|www\.[^\s)>\]]+")
_NAME = re.compile(r"(?<![\w.])[A-Z][a-z]{2,}(?:\s+(?:[A-Z][a-z]+|of|de|van|von|al))*(?:\s+[A-Z][a-z]+)?")
_HONORIFIC = re.compile(r"\b(?:Dr|Mr|Mrs|Ms|Prof|St)\.\s*$")
_SENTENCE_START = re.compile(r"(?:^|[.!?:;\n\"“(*#-]|\d[.)])\s*$")


# a question whose answer is a number computed from the given ones ("how many years after …")
_ASKS_COMPUTED = re.compile(r"\bhow (?:many|much|long|old|far)\b|\bdifference\b|\b(?:more|fewer|less|older|younger|"
                            r"longer|shorter|larger|smaller) than\b|\bin total\b|\baltogether\b|\bcombined\b", re.I)


def _ungrounded(out: str, source: str, question: str = "") -> list[str]:
    src_vals = number_values(source, spelled=True)
    src_stems = {stem(w) for w in re.findall(r"\w+", source.casefold())}
    found: list[str] = []
    # a worked answer computes new numbers from the given ones, and so does the answer to "how
    # many … after", "what is the difference …": those numbers are not invented
    computed = bool(re.search(r"\d\s*[+\-−×x*/÷]\s*\$?\d[^=\n]*=", out)) or bool(_ASKS_COMPUTED.search(question))
    labels = set(label_spans(out))
    for v, m in ([] if computed else numbers_in(out)):
        if m.span() in labels:
            continue  # "Thought 10:" numbers a step
        line_start = out.rfind("\n", 0, m.start()) + 1
        if re.fullmatch(r"\s*[-*]?\s*", out[line_start:m.start()]) and re.match(r"[.)]", out[m.end():m.end() + 1] or " "):
            continue  # a list number "1." / "2)"
        if v in src_vals:
            continue
        unit = unit_of(out, m)
        digits = len(m.group(0).replace(",", "").replace(".", "").lstrip("-"))
        has_unit = unit is not None and (unit in _UNITS or unit + "s" in _UNITS) or out[m.end():m.end() + 1] == "%"
        if digits >= 2 or has_unit or (m.start() > 0 and out[m.start() - 1] == "$"):
            found.append(out[m.start() - (1 if m.start() and out[m.start() - 1] == "$" else 0):m.end()])
    for m in _EMAIL_URL.finditer(out):
        if m.group(0).casefold().rstrip(".") not in source.casefold():
            found.append(m.group(0).rstrip("."))
    # a capitalised word also written in lower case (in the source or the output) is a common
    # word that starts a heading or a list item ("Plan", "Continue"), not a name
    common = {w for w in re.findall(r"(?<![\w-])[a-z][a-z'-]+", source + "\n" + out)} | _HEADING_WORDS
    for m in _NAME.finditer(out):
        before = out[max(0, m.start() - 6):m.start()]
        line_start = out.rfind("\n", 0, m.start()) + 1
        line_end = out.find("\n", m.end())
        line = out[line_start:line_end if line_end >= 0 else len(out)]
        if m.start() == 0 or (_SENTENCE_START.search(before[-3:]) and not _HONORIFIC.search(before)):
            continue
        if _LINE_OPENING.fullmatch(out[line_start:m.start()]) or ("\n" in out.strip() and _is_heading(line)):
            continue
        name = re.sub(r"(?:\s+(?:of|de|van|von|al))+$", "", m.group(0))
        name_words = [w for w in re.findall(r"[A-Za-z]+", name) if w[0].isupper() and w.casefold() not in common]
        if name_words and all(stem(w.casefold()) not in src_stems for w in name_words):
            found.append(name)
    return list(dict.fromkeys(found))


# words that head the sections of notes and reports
_HEADING_WORDS = set("""assessment plan history examination exam impression diagnosis diagnoses medications medication
    allergies vitals vital signs subjective objective summary recommendations recommendation instructions follow
    followup findings results labs imaging procedure procedures complaint chief present illness review systems
    social family past medical surgical physical disposition discharge education counseling orders problem
    problems background conclusion conclusions introduction overview notes note key points""".split())
# what may open a line before its first word: a bullet, a number, a letter label
_LINE_OPENING = re.compile(r"\s*(?:[-*•●▪◦‣–—>+]|\(?\d+[.)]|\(?[a-zA-Z][.)]|#+)?\s*(?:\*\*)?\s*")


def _is_heading(line: str) -> bool:
    """A heading line (of a text with several lines): Markdown or bold, or short Title Case / CAPS
    words ending in a colon or nothing."""
    text = line.strip().strip("*_#").strip()
    if not text:
        return False
    if line.lstrip().startswith(("#", "**")) or text.endswith(":"):
        return True
    words = text.split()
    return len(words) <= 6 and not re.search(r"[.!?,;]$", text) and all(w[:1].isupper() or w.casefold() in STOPWORDS for w in words)


INVENTS_DETAILS = Title("Invents details not in the source", "Hallucination")


def detect_hallucination(rec: dict) -> Finding | Look | None:
    out = answer_part(rec)
    source = input_of(rec)
    if word_count(source) < GROUNDED_MIN_WORDS or not out.strip():
        return None
    if asks_for_new_content(rec):
        return Look("hallucination", "the task asks for new content, so names and numbers the input lacks are not "
                                     "invented")
    if not is_grounded(rec):
        return None
    options = [str(v) for v in (rec.get("choices") or {}).values()]
    invented = _ungrounded(out, "\n".join([source, *gold_refs(rec), *options]), explicit_question(rec))
    if not invented:
        return None
    shown = ", ".join(f"\"{shorten(x, 40)}\"" for x in invented[:3])
    return INVENTS_DETAILS.finding(
        "hallucination",
        f"The answer states {shown}, found in neither the input nor the references.",
        tuple(Evidence("States only details the source gives", x) for x in invented[:5]),
    )


# --- factual error ---------------------------------------------------------------------------

CLOSED_BOOK_MAX_WORDS = 60
_ASKS_NUMBER = re.compile(
    r"\b(?:how many|how much|how old|how long|how far|how tall|how high|what year|which year|in what year|"
    r"when did|when was|what percentage|what is the (?:number|population|temperature|boiling|melting|speed|distance|"
    r"height|age|value))\b", re.I)


WRONG_DATE_OR_NUMBER = Title("Gives a wrong date or number", "Factual Error")


def detect_factual_error(rec: dict) -> Finding | None:
    out = output_of(rec)
    refs = gold_refs(rec)
    if is_multiple_choice(rec):
        return None  # a choice among the options: the multiple-choice detectors describe it
    if not refs or word_count(input_of(rec)) > CLOSED_BOOK_MAX_WORDS or word_count(out) > 30:
        return None
    if not _ASKS_NUMBER.search(input_of(rec)):
        return None
    ref_vals: set[Fraction] = set()
    for ref in refs:
        if word_count(ref) > 6:
            return None
        ref_vals |= number_values(ref)
    if not ref_vals:
        return None
    out_nums = numbers_in(out)
    if not out_nums or ref_vals & {v for v, _ in out_nums}:
        return None
    asked = number_values(input_of(rec))
    if len(asked) >= 2 or re.search(r"\d\s*[+\-−×x*/÷]\s*\d", out):
        return None  # a word problem or a worked answer: its numbers are computed, not recalled
    wrong = [m.group(0) for v, m in out_nums if v not in asked]
    if not wrong:
        return None
    return WRONG_DATE_OR_NUMBER.finding(
        "factual_error",
        f"The model answers \"{wrong[0]}\" where the reference gives {shorten(refs[0], 30)}.",
        (Evidence(f"States {shorten(refs[0], 30)}", wrong[0]),),
    )
