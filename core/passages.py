"""Questions that share a passage: one cluster (core/clustered.py) per passage.

A reading-comprehension or long-context dataset asks several questions of one passage (a story, a
patient note); HELM writes each question's input as the passage followed by the question. Two
questions share a passage when their inputs begin with the same text of at least
`MIN_PASSAGE_CHARS` characters that is also at least half of the shorter input — a long common
opening, not a prompt template's first words. Questions linked that way, directly or through
others, are one cluster, named by a hash of the text they all begin with (up to its last line
break), so the same passage gets the same name in every model's run.
"""

from __future__ import annotations

import hashlib
import os

MIN_PASSAGE_CHARS = 500  # a prompt template's shared instructions run to ~250 (HELM MMLU formal logic)
PREFIX = "passage:"


def _shared(a: str, b: str) -> int:
    """The length of the opening `a` and `b` share, when it is long enough to be a passage, else 0."""
    n = len(os.path.commonprefix((a, b)))
    return n if n >= MIN_PASSAGE_CHARS and 2 * n >= min(len(a), len(b)) else 0


def passage_clusters(inputs: dict[str, str | None]) -> dict[str, str]:
    """{question id: cluster} for the questions that share a passage with another (`inputs`:
    question id → its input text); a question on its own passage is left out."""
    ordered = sorted((text, qid) for qid, text in inputs.items() if text)
    out: dict[str, str] = {}
    start = 0
    while start < len(ordered):
        end, common = start + 1, None
        # in sorted order a passage's questions are adjacent, and a run of them shares the shortest
        # of its adjacent openings
        while end < len(ordered):
            n = _shared(ordered[end - 1][0], ordered[end][0])
            if not n:
                break
            common = n if common is None else min(common, n)
            end += 1
        if common:
            # named by the opening up to its last line break, so a run holding only some of the
            # passage's questions ("Question: What …") names it as a run holding all of them does
            opening = ordered[start][0][:common]
            cut = opening.rfind("\n")
            if cut >= MIN_PASSAGE_CHARS:
                opening = opening[:cut]
            name = PREFIX + hashlib.sha1(opening.encode()).hexdigest()[:16]
            out.update((qid, name) for _, qid in ordered[start:end])
        start = end
    return out
