"""Data Extraction: a value the input gives and the reference uses (a number with its unit, a
labelled entity, a short answer span) is missing from the output, and the output puts something
else in its place (the same unit with another number, the same entity under another label or
merged into a longer span, another span of the passage).
"""

from __future__ import annotations

import re

from .base import (
    Evidence,
    Finding,
    Title,
    by_unit,
    contains_phrase,
    gold_refs,
    labelled_items,
    norm,
    number_values,
    numbers_in,
    shorten,
    task_of,
    unit_of,
    with_unit,
    word_count,
)
from .choice import is_multiple_choice
from .echo import answer_part


def _number_substitutes(task: str, ref: str, out: str) -> list[tuple[str, str]]:
    """(the input's "N unit" the reference uses — any of the input's when the reference is a bare
    final answer — and the output's "M unit" in its place): the output never writes N with that
    unit, and M is given with that unit by neither the input nor the reference, nor is it the
    result of one of the output's own calculations ("= M")."""
    in_units, ref_units, out_units = by_unit(task), by_unit(ref), by_unit(out)
    ref_vals = number_values(ref)
    pairs = []
    for v, m in numbers_in(task):
        unit = unit_of(task, m)
        # a reference that is a final answer only (one number) cannot show which inputs it used
        used = v in ref_vals or len(ref_vals) <= 1
        if unit is None or unit in ("and", "or", "the", "a") or not used or v in out_units.get(unit, set()):
            continue
        for w, om in numbers_in(out):
            if unit_of(out, om) != unit or w in in_units.get(unit, set()) | ref_units.get(unit, set()):
                continue
            # "= M", "is M.", "makes M": a result the output computed, right or wrong, not a misread
            # input — unless an operator follows ("is 52 weeks * 35 hours": an operand)
            operand = re.match(r"\s*[A-Za-z/]*\s*[*×x/+\-−]\s*\$?\d", out[om.end():om.end() + 20])
            if re.search(r"=\s*\$?$", out[max(0, om.start() - 4):om.start()]) or (not operand and re.search(
                    r"\b(?:is|are|was|were|makes?|gives?|equals?|totals?|comes? to)\s*\$?$",
                    out[max(0, om.start() - 12):om.start()], re.I)):
                continue
            pairs.append((with_unit(task, m), with_unit(out, om)))
            break
    return pairs


def _entity_errors(task: str, ref: str, out: str) -> tuple[list[str], list[str]]:
    """For a labelled answer ("PER: Paul Otieno $$ LOC: Kisumu"): reference items whose entity
    the input gives but the output misses (named), and output items that hold such an entity
    under another label or merged into a longer span (quoted)."""
    out_items = labelled_items(out)
    if not out_items:
        return [], []
    missing, mislabelled = [], []
    for item, label, value in labelled_items(ref):
        if not contains_phrase(task, value):
            continue
        holding = [o for o in out_items if contains_phrase(o[2], value)]
        if any(o[1][:3] == label[:3] and norm(o[2]) == norm(value) for o in holding):
            continue
        if holding:
            mislabelled.append(holding[0][0])
        elif not contains_phrase(out, value):
            missing.append(item)
    return missing, mislabelled


PASSAGE_MIN_WORDS = 25


def _short_span_substitute(task: str, ref: str, out: str) -> str | None:
    """A short answer the passage gives (the reference) replaced by another span of the passage
    (a word of 3+ letters, or a number)."""
    answer = out.strip().strip(".").strip()
    if not (1 <= word_count(ref) <= 8 and 1 <= word_count(answer) <= 8) or word_count(task) < PASSAGE_MIN_WORDS:
        return None
    if not contains_phrase(task, ref) or contains_phrase(out, ref) or contains_phrase(ref, answer):
        return None
    if len(re.findall(r"[^\W\d_]", answer)) < 3 and not re.fullmatch(r"[\d.,]{2,}", answer):
        return None
    return answer if contains_phrase(task, answer) else None


def _number_instead(task: str, ref: str, out: str) -> str | None:
    """A short answer (at most 12 words) giving a number the passage (15+ words) never mentions
    where the passage gives the reference's number: a year or count misread or made up instead of read."""
    wanted = number_values(ref)
    if word_count(task) < 15 or word_count(out) > 12 or len(wanted) != 1 or not wanted <= number_values(task):
        return None
    got = numbers_in(out)
    if not got or wanted & {v for v, _ in got}:
        return None
    given = number_values(task, spelled=True)
    stray = [m.group(0) for v, m in got if v not in given and len(m.group(0).replace(",", "").replace(".", "")) >= 2]
    return stray[0] if stray else None


WRONG_VALUES = Title("Extracts the wrong values from the input", "Data Extraction")


def detect_data_extraction(rec: dict) -> Finding | None:
    out = answer_part(rec)
    refs = gold_refs(rec)
    if not out.strip() or not refs:
        return None
    task = task_of(rec)
    multiple_choice = is_multiple_choice(rec)
    per_ref = []
    for ref in refs:
        evidence: list[Evidence] = []
        for given, used in _number_substitutes(task, ref, out):
            evidence.append(Evidence(f"Uses \"{given}\" as the input gives it", used))
        missing, mislabelled = _entity_errors(task, ref, out)
        evidence += [Evidence("Labels the entity as the reference does", q) for q in mislabelled]
        evidence += [Evidence(f"Extracts \"{m}\" from the input") for m in missing]
        # a multiple-choice answer is a choice among the options, not a span pulled from the passage
        span = None if multiple_choice else _short_span_substitute(task, ref, out) or _number_instead(task, ref, out)
        if span:
            evidence.append(Evidence(f"Gives \"{ref.strip()}\", as the passage does", out[out.find(span):out.find(span) + len(span)]))
        per_ref.append(evidence)
    # with several acceptable references the output must miss what every one of them uses
    if not per_ref or not all(per_ref):
        return None
    evidence = per_ref[0]
    quoted = [e.quote for e in evidence if e.quote]
    missing = [e.criterion for e in evidence if not e.quote]
    what = f"puts \"{shorten(quoted[0], 40)}\" where the input's value belongs" if quoted else f"leaves out what the input gives ({len(missing)} item(s))"
    return WRONG_VALUES.finding(
        "data_extraction",
        f"The model {what}; the reference uses the input's own value.",
        tuple(evidence[:6]),
    )
