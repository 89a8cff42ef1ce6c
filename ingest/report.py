"""What an ingest tells the user beyond counts: per-run verdict notes, dataset-wide scales decided
after every run is read, and the files a folder search skipped, by reason."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

from . import lmeval
from .passfail import PassRule, column_rule, is_finite, metric_key
from .walk import every_file_below, helm_runs_below

if TYPE_CHECKING:
    from .records import ParsedRun
    from .registry import Reader

SKIP_REASONS = ("format not read", "results file without samples", "unreadable")
SHOWN_PATHS = 3


@dataclass(frozen=True)
class RunNote:
    """A run's verdict facts for the summary (small and picklable: workers send it back)."""

    run_id: str
    label: str
    dataset: str
    rule: PassRule
    harness_agrees: bool | None
    harness_note: str | None
    n_nonfinite: int
    score_min: float | None
    score_max: float | None
    all_integers: bool

    @classmethod
    def of(cls, parsed: "ParsedRun") -> "RunNote":
        run = parsed.run
        # a reader that decides its verdicts itself hands no rule: nothing is left to resolve
        rule = parsed.rule or PassRule(None, run.main_metric_source or "", None, run.metric_max, bool(run.lower_is_better), run.pass_threshold, run.scale_source or "")
        scores = [p.score for p in parsed.predictions if is_finite(p.score) and not p.infra_error]
        return cls(
            run_id=run.run_id,
            label=f"{run.run_name} ({run.model})" if run.model not in run.run_name else run.run_name,
            dataset=run.dataset,
            rule=rule,
            harness_agrees=run.harness_agrees,
            harness_note=run.harness_note,
            n_nonfinite=parsed.n_nonfinite,
            score_min=min(scores, default=None),
            score_max=max(scores, default=None),
            all_integers=all(float(s).is_integer() for s in scores),
        )


def resolve_pending(notes: list[RunNote]) -> list[int]:
    """Decide the scale of runs whose metric the registry does not know, in place, from the whole
    dataset column: every run of the ingest with the same dataset, metric and direction. Returns
    the positions of the runs that now have a threshold: their predictions are to be judged
    again (store.staging.RunStaging.rejudge)."""
    groups: dict[tuple, list[int]] = {}
    for i, note in enumerate(notes):
        if note.rule.pending:
            key = (note.dataset, metric_key(note.rule.metric), note.rule.lower_is_better)
            groups.setdefault(key, []).append(i)
    judged = []
    for members in groups.values():
        lows = [notes[i].score_min for i in members if notes[i].score_min is not None]
        highs = [notes[i].score_max for i in members if notes[i].score_max is not None]
        integers = all(notes[i].all_integers for i in members)
        for i in members:
            rule = column_rule(notes[i].rule, min(lows, default=None), max(highs, default=None), integers)
            notes[i] = replace(notes[i], rule=rule)
            if rule.threshold is not None:
                judged.append(i)
    return judged


def threshold_lines(notes: Iterable[RunNote]) -> list[str]:
    """One line per (dataset, metric) judged on a continuous scale: the line used and how to move it."""
    seen: dict[tuple, tuple[PassRule, int]] = {}
    for note in notes:
        rule = note.rule
        if rule.metric is None or rule.binary or rule.threshold is None:
            continue
        key = (note.dataset, rule.metric, rule.threshold, rule.lower_is_better)
        seen[key] = (rule, seen.get(key, (rule, 0))[1] + 1)
    lines = []
    for (dataset, metric, threshold, lower), (rule, runs) in seen.items():
        op = "≤" if lower else "≥"
        scale = f"scale {rule.low:g}–{rule.high:g} from the {rule.scale_source}" if rule.high is not None else rule.scale_source
        lines.append(
            f"  {dataset}: pass when {metric} {op} {threshold:.4g} ({scale}, {runs} run{'s' * (runs != 1)}); "
            f"change with --pass-threshold {dataset}=X"
        )
    return lines


def skipped_files(path: Path, readers: list["Reader"]) -> dict[str, list[Path]]:
    """Files below a folder that no chosen reader reads, grouped by reason."""
    if not path.is_dir():
        return {}
    names = {r.name for r in readers}
    suites = {run.parent for run in helm_runs_below(path)} if "helm" in names else set()
    out: dict[str, list[Path]] = {}
    for file, in_run in every_file_below(path):
        if "helm" in names and (in_run or file.parent in suites):
            continue
        if not os.access(file, os.R_OK):
            out.setdefault("unreadable", []).append(file)
            continue
        if any(r.name != "helm" and r.looks_like(file) for r in readers):
            continue
        if "lm-eval" in names and lmeval.is_results_file(file):
            if not lmeval.results_have_samples(file):
                out.setdefault("results file without samples", []).append(file)
            continue
        out.setdefault("format not read", []).append(file)
    return out


def skipped_lines(skipped: dict[str, list[str]]) -> list[str]:
    total = sum(len(v) for v in skipped.values())
    if not total:
        return []
    lines = [f"skipped {total:,} file{'s' * (total != 1)}:"]
    # the walk's own reasons first, then what readers reported (e.g. text-to-image records)
    for reason in [*SKIP_REASONS, *sorted(set(skipped) - set(SKIP_REASONS))]:
        paths = skipped.get(reason) or []
        if paths:
            more = f", … {len(paths) - SHOWN_PATHS:,} more" if len(paths) > SHOWN_PATHS else ""
            lines.append(f"  {reason} ({len(paths):,}): {', '.join(paths[:SHOWN_PATHS])}{more}")
    return lines
