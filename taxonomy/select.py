"""Choosing which failures to analyse: filters, per-(model, dataset) sampling, identical pairs."""

from __future__ import annotations

import hashlib
import json
import math
import random
from typing import Sequence

from store import FaultlineError

SAMPLE_SEED = 20240601


class SelectionError(FaultlineError):
    """--models / --datasets / --sample name something the store does not have."""


def check_names(kind: str, asked: Sequence[str], known: Sequence[str]) -> None:
    unknown = [a for a in asked if a not in set(known)]
    if unknown:
        shown = ", ".join(known[:20]) + (" …" if len(known) > 20 else "")
        raise SelectionError(f"unknown {kind}: {', '.join(unknown)} (the database has: {shown or 'none'})")


def choose_analyst(con, analyst: str | None, error: type[FaultlineError] = SelectionError) -> str:
    """`analyst` when the store has labels of it, else (None) the analyst with the most labels;
    `error` names the problem otherwise."""
    from store.agreement import analyst_names

    known = [name for name, _ in analyst_names(con)]
    if analyst is None:
        if not known:
            raise error("no analysed failures yet; run `python -m taxonomy analyze`")
        return known[0]
    if analyst not in known:
        raise error(f"unknown analyst {analyst!r}; analysts with results: {', '.join(known) or 'none'}")
    return analyst


def sample(failures: list[dict], ratio: float | None, seed: int = SAMPLE_SEED) -> list[dict]:
    """Keep `ratio` of the failures of each (model, dataset) pair, at least one per pair.

    Each pair draws from its own seeded generator, so adding another model to the store or to
    the filters never changes which failures a pair keeps.
    """
    if ratio is None or ratio >= 1:
        return failures
    if not 0 < ratio:
        raise SelectionError(f"--sample must be a ratio in (0, 1], got {ratio}")
    groups: dict[tuple[str, str], list[dict]] = {}
    for f in failures:
        groups.setdefault((f["model"], f["dataset"]), []).append(f)
    kept = []
    for (model, dataset), rows in groups.items():
        k = max(1, math.ceil(ratio * len(rows) - 1e-9))
        rng = random.Random(f"{seed}:{model}:{dataset}")
        kept += rng.sample(rows, k)
    order = {id(f): i for i, f in enumerate(failures)}
    return sorted(kept, key=lambda f: order[id(f)])


def pair_hash(rec: dict) -> str:
    """Identity of an (input, output) pair: identical pairs are analysed once. The instructions
    and the judges' notes are part of it: an analyst given other instructions or other judges'
    words may see the same output differently."""
    blob = json.dumps(
        [rec.get("input_text"), rec.get("input_messages"), rec.get("choices"), rec.get("output_text"),
         *([rec.get("instructions"), rec.get("judge_notes")] if rec.get("instructions") or rec.get("judge_notes") else [])],
        sort_keys=True, ensure_ascii=False,
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:32]


def group_pairs(failures: list[dict]) -> dict[str, list[dict]]:
    groups: dict[str, list[dict]] = {}
    for f in failures:
        groups.setdefault(pair_hash(f), []).append(f)
    return groups


def failure_key(rec: dict) -> tuple[str, str, int]:
    return (rec["run_id"], rec["instance_id"], rec["train_trial_index"])
