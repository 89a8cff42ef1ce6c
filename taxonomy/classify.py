"""Stage 3: the unique error titles (each with the summary of an analysis that gave it), in
batches, each assigned exactly one taxonomy category.

An LLM answer is checked title by title: a title missing from the answer, answered twice, or
given a category outside the taxonomy is asked again in a smaller follow-up batch; after
`rounds` tries it falls back to Other with `is_fallback` set. Results are stored per (title,
taxonomy version, classifier), so a title is never classified twice by the same classifier.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from store.analysis import Batch

from .catalog import OTHER, Taxonomy
from .llm import InvalidAnswer, LLMClient, LLMUnavailable, Writer, gather_all
from .prompts import CLASSIFY_PROMPT_VERSION, classify_messages, classify_schema, parse_classification
from .title_classifier import check_supports, offline_classifier

OFFLINE = "offline"
DEFAULT_BATCH_SIZE = 50
ROUNDS = 3


@dataclass
class StageResult:
    categories: dict[str, str] = field(default_factory=dict)
    fallbacks: int = 0
    unavailable: int = 0


def offline_name() -> str:
    return offline_classifier().name


def classify_offline(titles: list[str], taxonomy: Taxonomy) -> dict[str, str]:
    check_supports(taxonomy)
    clf = offline_classifier()
    return dict(zip(titles, clf.predict(titles)))


def _accept(answer, pending: list[str], taxonomy: Taxonomy) -> dict[str, str]:
    """Title → category for the entries that are valid: a pending title, answered once, a known category."""
    exact = set(pending)
    folded: dict[str, list[str]] = {}
    for t in pending:
        folded.setdefault(t.casefold(), []).append(t)
    seen: dict[str, list[str | None]] = {}
    for item in answer.classified_errors:
        text = " ".join(item.error_text.split())
        # models sometimes change a title's case; accept that unless two titles differ only so
        candidates = [text] if text in exact else folded.get(text.casefold(), [])
        if len(candidates) == 1:
            title = candidates[0]
            seen.setdefault(title, []).append(taxonomy.canonical(item.category))
    return {t: cats[0] for t, cats in seen.items() if len(cats) == 1 and cats[0] is not None}


async def _classify_batch(
    client: LLMClient, writer: Writer, taxonomy: Taxonomy, titles: list[str], rounds: int, result: StageResult, on_done,
    summaries: dict[str, str] | None = None,
) -> None:
    pending = list(titles)
    schema = classify_schema(taxonomy)
    for attempt in range(1, rounds + 1):
        if not pending:
            return
        try:
            answer, key, cache_row = await client.request(
                classify_messages(taxonomy, pending, attempt, summaries), schema, CLASSIFY_PROMPT_VERSION, "classification",
                parse_classification,
            )
        except InvalidAnswer:
            continue
        except LLMUnavailable:
            result.unavailable += len(pending)
            return
        got = _accept(answer, pending, taxonomy)
        writer.put(Batch(
            cache=[cache_row] if cache_row else [],
            classifications=[(t, taxonomy.version, client.model, c, False, key) for t, c in got.items()],
        ))
        result.categories.update(got)
        on_done(len(got))
        pending = [t for t in pending if t not in got]
    if pending:
        writer.put(Batch(classifications=[(t, taxonomy.version, client.model, OTHER, True, None) for t in pending]))
        result.categories.update({t: OTHER for t in pending})
        result.fallbacks += len(pending)
        on_done(len(pending))


async def classify_llm(
    client: LLMClient, writer: Writer, taxonomy: Taxonomy, titles: list[str],
    batch_size: int = DEFAULT_BATCH_SIZE, rounds: int = ROUNDS, on_done=lambda n: None,
    summaries: dict[str, str] | None = None,
) -> StageResult:
    """`summaries`: title → the summary of an analysis that gave it, sent with the title."""
    result = StageResult()
    batches = [titles[i : i + batch_size] for i in range(0, len(titles), batch_size)]
    await gather_all(_classify_batch(client, writer, taxonomy, b, rounds, result, on_done, summaries) for b in batches)
    return result
