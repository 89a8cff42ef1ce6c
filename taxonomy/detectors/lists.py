"""List answers: the items a list-shaped reference names, against the list the output ends with.

It applies when the reference is a list of 2+ items — separated by commas (or "and"), or, for a
task that asks for an order (`shape.asks_for_order`: sort, rank, arrange), single words separated
by spaces, as a sorting task's answer is — and the output ends with a bare list: its marked
answer ("So the answer is …"), else what follows the last colon of its last line, else its last
line. Every item of that list must be one of the task's items (the reference's), or nothing is
concluded: a list with other words in it is not read.

- the reference's items, every one once, in another order, when the order is the answer: "Puts
  the items in the wrong order" (Reasoning Error: the ordering went wrong somewhere, and the
  evidence is the list);
- some of the reference's items and nothing else, others missing: "Gives only part of the
  answer" (Incomplete Content).
"""

from __future__ import annotations

from .base import (
    PART_OF_ANSWER,
    Evidence,
    Finding,
    Look,
    Title,
    gold_refs,
    output_of,
    shorten,
)
from .choice import is_multiple_choice
from .normalise import ITEMS, marked_answer, normalise
from .shape import asks_for_order, strip_template_tokens


def _items(text: str, by_space: bool) -> list[tuple[str, ...]]:
    parts = text.split() if by_space else ITEMS.split(text)
    return [t for t in (normalise(p).tokens for p in parts if p.strip(" .,;")) if t]


def final_list(out: str) -> str | None:
    """The list the output ends with, verbatim: its marked answer, else what follows the last
    colon of its last line, else its last line."""
    out = strip_template_tokens(out).strip()
    if not out:
        return None
    marked = marked_answer(out)
    if marked:
        return marked.rstrip(" .")
    last = out.splitlines()[-1]
    return (last.rsplit(":", 1)[-1] if ":" in last else last).strip().rstrip(" .") or None


WRONG_ORDER = Title("Puts the items in the wrong order", "Reasoning Error")


def detect_list_answer(rec: dict) -> Finding | Look | None:
    if is_multiple_choice(rec):
        return None
    ordered = asks_for_order(rec)
    out = output_of(rec)
    for ref in gold_refs(rec):
        by_space = "," not in ref and ordered and len(ref.split()) >= 2 and all(w.isalpha() for w in ref.split())
        want = _items(ref, by_space)
        if len(want) < 2 or (not by_space and "," not in ref):
            continue
        said = final_list(out)
        if not said:
            return None
        got = _items(said, by_space)
        if len(got) < 2 and len(want) > 2:
            return None
        unknown = [i for i in got if i not in want]
        if unknown:
            return Look("list answer", f"the answer's list holds \"{' '.join(unknown[0])}\", which is not one of the "
                                       f"reference's items, so how it differs cannot be told")
        if got == want or len(set(got)) != len(got):
            return None
        if sorted(got) == sorted(want):
            if not ordered:
                return None
            return WRONG_ORDER.finding(
                "list_answer",
                f"The answer lists the reference's {len(want)} items, each once, but in another order: "
                f"\"{shorten(said, 80)}\" where the reference has \"{shorten(ref, 80)}\".",
                (Evidence(f"Orders the items as the task asks (\"{shorten(ref, 60)}\")", said if said in out else None),),
            )
        missing = [i for i in want if i not in got]
        return PART_OF_ANSWER.finding(
            "list_answer",
            f"The answer lists {len(got)} of the reference's {len(want)} items and leaves out "
            + ", ".join(f"\"{' '.join(m)}\"" for m in missing[:5]) + ".",
            (Evidence("Lists every item the reference does", said if said in out else None),)
            + tuple(Evidence(f"Also lists \"{' '.join(m)}\"") for m in missing[:5]),
        )
    return None
