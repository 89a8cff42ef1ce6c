"""What an ingest tells the user beyond counts: per-run verdict notes, dataset-wide scales settled
after every run is read, the harness check, the 0%/100%-fail guard, and the files a folder
search skipped, by reason."""

from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

from core.errors import SettingsNeeded
from core.verdicts import (
    PassRule,
    Unreadable,
    flag,
    is_finite,
    metric_key,
    refusal,
    settle,
    unreadable_refusal,
)
from store.runs import Collapsed

from . import files
from .sources import custom, lmeval
from .walk import HIDDEN, every_file_below, helm_bookkeeping, helm_runs_below

if TYPE_CHECKING:
    from core.records import ParsedRun

    from .source import Source

OWN_TABLE = "a table of your own: read only when named directly (python -m ingest FILE)"
SKIP_REASONS = (OWN_TABLE, "format not read", "results file without samples", "unreadable", files.NOT_REGULAR,
                files.OUTSIDE, HIDDEN)
SHOWN_PATHS = 3
# more skipped files than this: every one of them goes to a file whose path the summary prints
LISTED_IN_SUMMARY = 20
SHOWN_NOT_COMPARED = 10


@dataclass(frozen=True)
class RunNote:
    """A run's verdict facts for the summary (small and picklable: workers send it back)."""

    run_id: str
    label: str
    model: str
    dataset: str
    source: str
    rule: PassRule
    metric_source: str | None
    harness_agrees: bool | None
    harness_note: str | None
    n_nonfinite: int
    score_min: float | None
    score_max: float | None
    n_judged: int
    n_failed: int
    n_unscored: int = 0  # predictions (not failed requests) with no value of the judged metric at all

    @classmethod
    def of(cls, parsed: "ParsedRun") -> "RunNote":
        run = parsed.run
        # a reader that takes its verdicts from the log hands no rule: nothing is left to settle
        rule = parsed.rule or PassRule(None, run.main_metric_source or "", run.metric_min, run.metric_max, bool(run.lower_is_better), run.pass_threshold, run.scale_source)
        scores = [p.score for p in parsed.predictions if is_finite(p.score) and not p.infra_error]
        return cls(
            run_id=run.run_id,
            label=f"{run.run_name} ({run.model})" if run.model not in run.run_name else run.run_name,
            model=run.model,
            dataset=run.dataset,
            source=run.source_path,
            rule=rule,
            metric_source=run.main_metric_source,
            harness_agrees=run.harness_agrees,
            harness_note=run.harness_note,
            n_nonfinite=parsed.n_nonfinite,
            score_min=min(scores, default=None),
            score_max=max(scores, default=None),
            n_judged=sum(1 for p in parsed.predictions if p.is_correct is not None),
            n_failed=parsed.n_failures,
            n_unscored=sum(1 for p in parsed.predictions
                           if p.score is None and p.is_correct is None and not p.infra_error) - parsed.n_nonfinite,
        )


def resolve_pending(notes: list[RunNote]) -> list[int]:
    """Settle every run's scale on the whole dataset column — every run of the ingest with the
    same dataset, metric and direction — in place. Returns the positions of the runs whose rule
    changed: their predictions are judged again as they are written (store.runs `LateRule`).
    Datasets no evidence gives a scale are refused, all of them in one error."""
    unread = _unreadable(notes)
    groups: dict[tuple, list[int]] = {}
    for i, note in enumerate(notes):
        if note.rule.unreadable is not None:
            continue
        if note.rule.metric is not None and (note.rule.candidates or note.rule.threshold is None):
            key = (note.dataset, metric_key(note.rule.metric), note.rule.lower_is_better)
            groups.setdefault(key, []).append(i)
    problems: dict[tuple, tuple[str, str, str, str]] = {}
    changed = []
    for key, members in groups.items():
        lows = [notes[i].score_min for i in members if notes[i].score_min is not None]
        highs = [notes[i].score_max for i in members if notes[i].score_max is not None]
        lowest, highest = min(lows, default=None), max(highs, default=None)
        for i in members:
            old = notes[i].rule
            rule = settle(old, lowest, highest)
            if rule.refused:
                sources = sorted({notes[j].source for j in members})
                where = sources[0] if len(sources) == 1 else f"{len(sources)} logs, e.g. {sources[0]}"
                problems.setdefault(key, (notes[i].dataset, old.metric, where, rule.refused))
                continue
            notes[i] = replace(notes[i], rule=rule)
            if (rule.low, rule.high, rule.threshold) != (old.low, old.high, old.threshold):
                changed.append(i)
    if problems or unread:
        # one error for every refused dataset: its message each part's, its asks each part's
        parts = ([unreadable_refusal(unread)] if unread else []) + ([refusal(list(problems.values()))] if problems else [])
        raise SettingsNeeded("\n".join(p.message for p in parts), [ask for p in parts for ask in p.asks])
    return changed


def _unreadable(notes: list[RunNote]) -> list[tuple[str, str, str, Unreadable]]:
    """Per dataset and metric, the runs whose judged values are not numbers, taken together."""
    groups: dict[tuple[str, str], list[RunNote]] = {}
    for note in notes:
        if note.rule.unreadable is not None:
            groups.setdefault((note.dataset, note.rule.metric), []).append(note)
    out = []
    for (dataset, metric), members in groups.items():
        first = members[0].rule.unreadable
        total = replace(first, count=sum(n.rule.unreadable.count for n in members),
                        total=sum(n.rule.unreadable.total for n in members))
        sources = sorted({n.source for n in members})
        where = sources[0] if len(sources) == 1 else f"{len(sources)} logs, e.g. {sources[0]}"
        out.append((dataset, metric, where, total))
    return out


def threshold_lines(notes: Iterable[RunNote]) -> list[str]:
    """One line per (dataset, metric) judged on a continuous scale: the line used, where its
    scale came from, scales the data contradicted, and how to move it."""
    seen: dict[tuple, tuple[PassRule, int]] = {}
    for note in notes:
        rule = note.rule
        if rule.metric is None or rule.threshold is None or (rule.binary and not rule.rejected):
            continue
        key = (note.dataset, rule.metric, rule.threshold, rule.lower_is_better)
        seen[key] = (rule, seen.get(key, (rule, 0))[1] + 1)
    lines = []
    for (dataset, _, _, _), (rule, runs) in seen.items():
        passed_over = f"; not {', not '.join(rule.rejected)}" if rule.rejected else ""
        lines.append(
            f"  {dataset}: {rule.describe()} [{runs} run{'s' * (runs != 1)}{passed_over}]; "
            f"change with {flag('--pass-threshold', dataset, 'X')}"
        )
    return lines


# how a reader names a metric it chose itself because the harness named no headline
CHOSEN_METRIC = {"fallback": "the first of HELM's usual exact-match metrics it reports",
                 "first task metric": "the first task metric it reports"}


def chosen_metric_lines(notes: Iterable[RunNote]) -> list[str]:
    """Datasets judged on a metric Faultline picked because no schema names the run's headline."""
    seen: dict[tuple[str, str], tuple[str, int]] = {}
    for note in notes:
        if note.metric_source in CHOSEN_METRIC and note.rule.metric:
            key = (note.dataset, note.rule.metric)
            seen[key] = (note.metric_source, seen.get(key, ("", 0))[1] + 1)
    return [
        f"  {dataset}: judged on {metric}, {CHOSEN_METRIC[source]} [{runs} run{'s' * (runs != 1)}]; "
        f"name the headline with {flag('--main-metric', dataset, 'NAME')}"
        for (dataset, metric), (source, runs) in seen.items()
    ]


def impossible_rates(notes: Iterable[RunNote]) -> list[str]:
    """A model × dataset where every prediction fails, or none does, although the scores vary:
    the rule is probably wrong for these scores."""
    totals: dict[tuple[str, str], list] = {}
    for note in notes:
        if not note.n_judged or note.rule.metric is None or note.rule.threshold is None:
            continue  # verdicts the log itself gives (promptfoo's success, a correct column) are not ours to doubt
        t = totals.setdefault((note.model, note.dataset), [0, 0, None, None, note.rule])
        t[0] += note.n_judged
        t[1] += note.n_failed
        if note.score_min is not None:
            t[2] = note.score_min if t[2] is None else min(t[2], note.score_min)
            t[3] = note.score_max if t[3] is None else max(t[3], note.score_max)
    lines = []
    for (model, dataset), (judged, failed, low, high, rule) in totals.items():
        if low is None or low == high or 0 < failed < judged:
            continue
        what = "fail" if failed else "pass"
        lines.append(
            f"  {model} on {dataset}: all {judged:,} predictions {what} although their scores vary "
            f"({low:g}–{high:g}); the rule: {rule.describe()}. If that is wrong for these scores, set "
            f"{flag('--scale', dataset, 'LOW:HIGH')} or {flag('--pass-threshold', dataset, 'X')}"
        )
    return lines


def harness_lines(notes: list[RunNote]) -> list[str]:
    checked = [n for n in notes if n.harness_agrees is not None]
    differing = [n for n in checked if n.harness_agrees is False]
    not_compared = [n for n in notes if n.harness_agrees is None and n.harness_note]
    lines = []
    if checked:
        lines.append(
            f"harness check: {len(checked) - len(differing):,} of {len(checked):,} runs agree "
            "with the harness's own headline"
        )
        lines.extend(f"  {n.label}: {n.harness_note}" for n in differing)
    if not_compared:
        lines.append(f"harness check: {len(not_compared):,} run{'s' * (len(not_compared) != 1)} not compared:")
        lines.extend(f"  {n.label}: {n.harness_note}" for n in not_compared[:SHOWN_NOT_COMPARED])
        rest = Counter(_why_not(n.harness_note) for n in not_compared[SHOWN_NOT_COMPARED:])
        if rest:
            # every run not compared says why, the ones not shown by their reason
            reasons = "; ".join(f"{count:,} × {why}" for why, count in rest.most_common())
            lines.append(f"  … {rest.total():,} more: {reasons} (runs.harness_note has each)")
    return lines


def _why_not(note: str) -> str:
    """A "not compared" note's reason without the run's own numbers, to count runs by it."""
    why = note.removeprefix("not compared: ").split("; ", 1)[0]
    while (bare := re.sub(r"\s*\([^()]*\)", "", why)) != why:  # asides, innermost first
        why = bare
    return re.sub(r"(?<!\w)\d[\d,.]*", "…", why)  # numbers, not a metric's digits (f1, rouge2)


def details(summary: "IngestSummary", skipped_list: Path | None = None) -> list[str]:
    """What the one-line summary cannot hold: harness check, thresholds, impossible pass rates,
    unscored predictions, skipped files."""
    notes = summary.notes
    lines = harness_lines(notes)
    chosen = chosen_metric_lines(notes)
    if chosen:
        lines.append("no headline known (no schema names the run group's main metric):")
        lines.extend(chosen)
    thresholds = threshold_lines(notes)
    if thresholds:
        lines.append("thresholds on continuous metrics:")
        lines.extend(thresholds)
    warnings = impossible_rates(notes)
    if warnings:
        lines.append("warning: 0% or 100% of predictions fail while their scores vary:")
        lines.extend(warnings)
    nonfinite = sum(n.n_nonfinite for n in notes)
    if nonfinite:
        runs = [n.label for n in notes if n.n_nonfinite]
        lines.append(
            f"unscored: {nonfinite:,} predictions with a NaN or infinite score "
            f"(in {', '.join(runs[:3])}{', …' if len(runs) > 3 else ''})"
        )
    missing = sum(n.n_unscored for n in notes)
    if missing:
        runs = [n.label for n in notes if n.n_unscored]
        lines.append(
            f"unscored: {missing:,} predictions have no value of their run's judged metric, so no verdict "
            f"(in {', '.join(runs[:3])}{', …' if len(runs) > 3 else ''})"
        )
    lines.extend(rerun_lines(summary.reruns))
    lines.extend(skipped_lines(summary.skipped, skipped_list))
    return lines


SHOWN_RERUNS = 10


def rerun_lines(reruns: list) -> list[str]:
    """Reruns of one model on one task collapsed into their latest (store/runs.py `reruns`)."""
    collapsed = sum(c.superseded for c in reruns)
    if not collapsed:
        return []
    lines = [f"reruns: {collapsed:,} earlier run{'s' * (collapsed != 1)} of a model on questions a later run of it "
             "answered again are collapsed into the latest, which counts (the earlier ones stay in the store, "
             "runs.superseded_by):"]
    for c in reruns[:SHOWN_RERUNS]:
        how = ("no log says when it ran and they were ingested together, so the last by path counts: "
               "ingest the one that should count last" if c.by == "path order" else f"the latest by {c.by}")
        lines.append(f"  {c.model} on {c.dataset}: {c.runs:,} runs, {c.superseded:,} collapsed; {how}")
    if len(reruns) > SHOWN_RERUNS:
        lines.append(f"  … {len(reruns) - SHOWN_RERUNS:,} more models and datasets (the data page lists each run)")
    return lines


def skipped_files(path: Path, readers: list["Source"]) -> dict[str, list[Path]]:
    """Files below a folder that no chosen reader reads, grouped by reason (a HELM suite's own
    files are part of the suite)."""
    if not path.is_dir():
        return {}
    names = {r.name for r in readers}
    suites = {run.parent for run in helm_runs_below(path)} if "helm" in names else set()
    out: dict[str, list[Path]] = {}
    for file, in_run, passed_over in every_file_below(path):
        if in_run and "helm" in names or helm_bookkeeping(file, suites):
            continue
        refused = passed_over or files.refusal(file)
        if refused:
            out.setdefault(refused, []).append(file)
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
        reason = OWN_TABLE if file.suffix.lower() in custom.SUFFIXES else "format not read"
        out.setdefault(reason, []).append(file)
    return out


def _reasons(skipped: dict[str, list[str]]) -> list[str]:
    # the walk's own reasons first, then what readers reported (e.g. text-to-image records)
    return [r for r in (*SKIP_REASONS, *sorted(set(skipped) - set(SKIP_REASONS))) if skipped.get(r)]


def skipped_list_path(db: Path) -> Path:
    return db.with_name(f"{db.stem}.skipped.txt")


def write_skipped_list(skipped: dict[str, list[str]], db: Path) -> Path | None:
    """Every skipped file, by reason, in a file beside the store, when there are more than the
    summary shows; its path, or None."""
    if sum(len(v) for v in skipped.values()) <= LISTED_IN_SUMMARY:
        return None
    target = skipped_list_path(db)
    text = "".join(f"{reason}\t{p}\n" for reason in _reasons(skipped) for p in skipped[reason])
    target.write_text(text, encoding="utf-8")
    return target


def skipped_lines(skipped: dict[str, list[str]], listed_in: Path | None = None) -> list[str]:
    total = sum(len(v) for v in skipped.values())
    if not total:
        return []
    if total > LISTED_IN_SUMMARY:
        where = f"every one listed in {listed_in}" if listed_in else "not all shown"
        lines = [f"skipped {total:,} files ({where}):"]
    else:
        lines = [f"skipped {total:,} file{'s' * (total != 1)}:"]
    for reason in _reasons(skipped):
        paths = skipped[reason]
        if total <= LISTED_IN_SUMMARY:
            lines.append(f"  {reason} ({len(paths):,}): {', '.join(paths)}")
        else:
            more = f", … {len(paths) - SHOWN_PATHS:,} more" if len(paths) > SHOWN_PATHS else ""
            lines.append(f"  {reason} ({len(paths):,}): {', '.join(paths[:SHOWN_PATHS])}{more}")
    return lines


@dataclass
class IngestSummary:
    db: Path
    runs: int = 0
    predictions: int = 0
    failures: int = 0
    infra_errors: int = 0
    unscored: int = 0  # predictions with no verdict that are not failed requests
    steps: int = 0  # transcript steps of agent predictions
    tool_calls: int = 0
    seconds: float = 0.0
    run_ids: list[str] = field(default_factory=list)
    notes: list[RunNote] = field(default_factory=list)
    # what readers and the loader did that the user should hear about (e.g. repeats stored once)
    remarks: list[str] = field(default_factory=list)
    skipped: dict[str, list[str]] = field(default_factory=dict)
    # reruns of a model on a task among the written runs' groups, collapsed into their latest
    reruns: list[Collapsed] = field(default_factory=list)

    @property
    def differing(self) -> list[RunNote]:
        """Runs whose recomputed rate differs from the log's own aggregate."""
        return [n for n in self.notes if n.harness_agrees is False]

    @property
    def nonfinite(self) -> int:
        return sum(n.n_nonfinite for n in self.notes)

    def details(self, skipped_list: Path | None = None) -> list[str]:
        """What the one-line summary cannot hold: harness check, thresholds, unscored, skipped files."""
        return details(self, skipped_list)

    def line(self) -> str:
        infra = f", {self.infra_errors:,} infrastructure errors" if self.infra_errors else ""
        unscored = f", {self.unscored:,} without a verdict" if self.unscored else ""
        steps = (f", {self.steps:,} transcript steps ({self.tool_calls:,} tool calls)" if self.steps else "")
        collapsed = sum(c.superseded for c in self.reruns)
        reruns = f", {collapsed:,} earlier rerun{'s' * (collapsed != 1)} collapsed (the latest counts)" if collapsed else ""
        remarks = f"; {'; '.join(self.remarks)}" if self.remarks else ""
        return (
            f"ingested {self.runs:,} runs, {self.predictions:,} predictions, {self.failures:,} failures"
            f"{infra}{unscored}{steps}{reruns} in {self.seconds:.1f} s into {self.db}{remarks}"
        )
