"""Incomplete Content and Verbosity, measured against the reference and the prompt.

Incomplete Content — the reference is split into its required parts: section headings ("Plan:",
"## History", "**Assessment**"), numbered steps, list items, or (for a reference of 3+ sentences
and 30+ words with none of those) its sentences as key points. A part is *covered* when the
output names its heading or holds at least a quarter of its content-word stems, *absent* when
it holds under 40% of them. Reported when at least one part is covered (the model did the task) and at
least a third of the parts, and at least one, are absent — and, unless the parts are named
sections, the output is shorter than 80% of the reference: one as long may say the same in other
words (a paraphrase shares few stems). The evidence names each absent part.

Verbosity — the output runs to 120+ words and 3× the longest reference of 8+ words (shorter
references are labels, not answers whose length compares) — unless the prompt asks for the
reasoning ("think step by step", "explain your reasoning", "show your work"), whose length is
then the task's, or the answer is visibly wrong (a wrong option or number is the first error,
not its length) — or the prompt asks for brevity in
words addressed to the model ("answer briefly", "be concise", "give a short summary", "short
answer", "in a few words" — in the instructions or in the input's lines that are not dialogue
turns, and not "I'll be brief") and the output runs past 80 words. Explicit counts ("at most 50 words") are Constraint Violation's.
"""

from __future__ import annotations

import re

from .base import (
    Evidence,
    Finding,
    Title,
    content_words,
    final_number,
    gold_refs,
    output_of,
    sentences,
    shorten,
    stem,
    task_of,
    word_count,
    words_from,
)
from .calculation import arithmetic_claims
from .instructions import answer_is_wrong

_HEADING = re.compile(
    r"^\s*(?:#{1,6}\s*(?P<md>[^\n#]{2,60}?)\s*#*\s*$"
    r"|\*\*(?P<bold>[^*\n]{2,60}?)\*\*:?\s*$"
    r"|(?P<caps>[A-Z][A-Z0-9 /&()-]{2,50}):?\s*$"
    r"|(?P<label>[A-Z][A-Za-z /&()-]{2,40}):\s+\S)",
    re.M,
)
_STEP = re.compile(r"^\s*(?:\d+[.)]|[-*•])\s+(?P<item>\S.*)$", re.M)


ABSENT_BELOW = 0.4
# an output at least this share of the reference's length can say all of it in other words, which
# shared stems do not see: leaving parts out is told only from a shorter answer
PARAPHRASE_LENGTH = 0.8


def reference_parts(ref: str) -> list[tuple[str, str]]:
    """(name, text) of each required part of a reference: sections, steps or list items, key sentences."""
    heads = list(_HEADING.finditer(ref))
    if len(heads) >= 2:
        parts = []
        for i, m in enumerate(heads):
            name = next(g for g in m.group("md", "bold", "caps", "label") if g)
            end = heads[i + 1].start() if i + 1 < len(heads) else len(ref)
            parts.append((name.strip(), ref[m.start():end]))
        return parts
    steps = [m.group("item").strip() for m in _STEP.finditer(ref)]
    if len(steps) >= 2:
        return [(shorten(s, 60), s) for s in steps]
    sents = sentences(ref)
    if len(sents) >= 3 and word_count(ref) >= 20:
        return [(shorten(s, 60), s) for s in sents]
    return []


def _coverage(part_text: str, name: str, out_stems: set[str], out_lower: str) -> float:
    if name and re.search(r"(?<!\w)" + re.escape(name.casefold()) + r"(?!\w)", out_lower) and len(name) > 3:
        return 1.0
    stems = {stem(w) for w in content_words(part_text)}
    if not stems:
        return 1.0
    return len(stems & out_stems) / len(stems)


def missing_parts(ref: str, out: str) -> tuple[list[str], int] | None:
    """(names of absent parts, number of parts) or None when the reference has no parts."""
    parts = reference_parts(ref)
    if len(parts) < 2:
        return None
    out_stems = {stem(w) for w in content_words(out)}
    out_lower = out.casefold()
    cover = [(name, _coverage(text, name, out_stems, out_lower)) for name, text in parts]
    absent = [name for name, c in cover if c < ABSENT_BELOW]
    if not any(c >= 0.25 for _, c in cover):
        return None
    return absent, len(parts)


OMITS_PARTS = Title("Omits required parts of the reference", "Incomplete Content")


def detect_incomplete(rec: dict) -> Finding | None:
    out = output_of(rec)
    refs = gold_refs(rec)
    if not out.strip() or not refs:
        return None
    headed = all(len(_HEADING.findall(r)) >= 2 for r in refs)  # named sections: a heading shows what is there
    if not headed and word_count(out) >= PARAPHRASE_LENGTH * min(word_count(r) for r in refs):
        return None  # as long as the reference: its parts may be there in other words (a paraphrase)
    results = [missing_parts(ref, out) for ref in refs]
    # every acceptable reference must find parts missing
    if not results or any(r is None or not r[0] or len(r[0]) * 3 < r[1] for r in results):
        return None
    absent, total = results[0]
    shown = ", ".join(f"\"{a}\"" for a in absent[:3]) + (" …" if len(absent) > 3 else "")
    return OMITS_PARTS.finding(
        "incomplete",
        f"The answer leaves out {len(absent)} of the reference's {total} required parts: {shown}.",
        tuple(Evidence(f"Covers \"{a}\"") for a in absent[:8]),
    )


# a request for brevity addressed to the model — not the word "brief" in the passage it works on
_BREVITY = re.compile(
    r"\b(?:be|keep\s+(?:it|the\s+\w+|your\s+\w+))\s+(?:very\s+)?(?:brief|concise|succinct|short)\b|"
    r"\b(?:briefly|concisely|succinctly)\s+(?:answer|explain|describe|summari[sz]e|state|list|respond|reply|write|discuss|outline)\b|"
    r"\b(?:answer|explain|describe|summari[sz]e|respond|reply|write)\b[^.\n]{0,40}?\b(?:briefly|concisely|succinctly|in brief|"
    r"in a few words|in one (?:sentence|line))\b|"
    r"\b(?:give|write|provide|produce|generate)\s+(?:a|an)\s+(?:very\s+)?(?:brief|concise|succinct|short|one-line)\s+"
    r"(?:\w+\s+){0,2}?(?:answer|summary|response|description|explanation|note|reply|overview|definition|account|"
    r"statement|paragraph)\b|\bshort answer\b|\bin a few words\b|"
    # "Briefly, who …", "Concisely: what …" — the adverb opening the request
    r"(?:^|(?<=[.!?:\n]))\s*(?:briefly|concisely|succinctly|in brief|in short)\s*[,:]",
    re.I,
)
_FIRST_PERSON = re.compile(r"\b(?:i'll|i will|i'm going to|i am going to|i'd|let me|we'll|we will)\s+$", re.I)
# a line of a dialogue or transcript: "Doctor: …", "[patient] …", "Speaker 2: …"
_SPEAKER = re.compile(r"\[[a-z_ ]{2,20}\]|^\s*(?:doctor|patient|dr|nurse|physician|speaker\s*\d*|user|interviewer|"
                      r"interviewee|caller|agent|customer|mother|father|parent|husband|wife|son|daughter)\s*:", re.I | re.M)


def brevity_request(rec: dict) -> str | None:
    """The words that ask the model to be brief, searched in the instructions and in the input's
    lines that are not dialogue turns, or None."""
    lines = [line for line in task_of(rec).splitlines() if not _SPEAKER.search(line)]
    for text in (rec.get("instructions") or "", "\n".join(lines)):
        for m in _BREVITY.finditer(text):
            if not _FIRST_PERSON.search(text[max(0, m.start() - 20):m.start()]):
                return m.group(0)
    return None


def _past(out: str, limit: int) -> str | None:
    """Where the excess begins (verbatim): the first sentence of 3+ words starting after `limit`
    words, else the ten words from there."""
    seen = 0
    for s in sentences(out):
        if seen >= limit and word_count(s) >= 3:
            return s
        seen += word_count(s)
    return words_from(out, limit)


# a request for the reasoning itself: the length it takes is what the prompt asked for
_REASONING_ASKED = re.compile(
    r"\b(?:step[- ]by[- ]step|chain[- ]of[- ]thought|think(?:ing)? (?:it |this )?through|"
    r"(?:explain|show|justify|give|describe|walk through)\s+(?:your|the|all)?\s*(?:reasoning|work(?:ing)?|steps|thinking|"
    r"answer|calculations?)|(?:with|and) (?:a |an )?(?:short |brief )?(?:explanation|justification|reasons?)\b|"
    r"explain (?:why|how)\b)", re.I)


def reasoning_asked(rec: dict) -> re.Match | None:
    """The words that ask the model to reason aloud, in the instructions or the task."""
    return _REASONING_ASKED.search(rec.get("instructions") or "") or _REASONING_ASKED.search(task_of(rec))


LONGER_THAN_REFERENCE = Title("Response far longer than the reference", "Verbosity")
LONGER_THAN_ASKED = Title("Longer than the prompt allows", "Verbosity")


def detect_verbosity(rec: dict) -> Finding | None:
    out = output_of(rec)
    if answer_is_wrong(rec):
        return None
    n = word_count(out)
    refs = gold_refs(rec)
    ref_len = max((word_count(r) for r in refs), default=0)
    # a worked solution (a numeric final answer, or steps of arithmetic) is long by design
    worked = any(final_number(r) and re.search(r"####|\\boxed", r) for r in refs) or len(arithmetic_claims(out)) >= 2
    if ref_len >= 8 and n >= 120 and n >= 3 * ref_len and not rec.get("choices") and not worked \
            and not reasoning_asked(rec):
        quote = _past(out, ref_len)
        return LONGER_THAN_REFERENCE.finding(
            "verbosity",
            f"The answer runs to {n} words against a {ref_len}-word reference; the extra length adds nothing the task asked for.",
            (Evidence("Keeps the answer in proportion to what was asked", quote),) if quote else (),
        )
    cue = brevity_request(rec)
    if cue and n > 80:
        quote = _past(out, 40)
        return LONGER_THAN_ASKED.finding(
            "verbosity",
            f"Asked to be brief (\"{cue}\"), the model writes {n} words.",
            (Evidence(f"Keeps it brief, as asked (\"{cue}\")", quote),) if quote else (),
        )
    return None

