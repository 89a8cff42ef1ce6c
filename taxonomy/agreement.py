"""How far to trust an analyst's categories: agreement with people or with another analyst.

The reference labels are human reviews (a confirmed label keeps its category, a relabel gives
the new one; flags are not labels), an imported gold CSV (dataset, instance_id, model,
category), or another analyst's categories on the same failures. The report gives n, raw
agreement, Cohen's κ with a 95% percentile-bootstrap interval (2,000 resamples of the labelled
failures, fixed seed; resamples where κ is undefined are skipped), per-category precision and
recall of the analyst against the reference, the confusion matrix (rows: reference, columns:
analyst) and the disagreeing failures — and, because a wrong specific label does more harm than
an abstention, the precision of the analyst's specific labels (every label but Hard to Analyze
and Other, No Model Error included: it is a claim too) beside the share it abstained on.

For agent transcripts it also measures the first error's step and agent (`StepReport`): against
people's labels (reviews with action `label`, e.g. Who&When's) or another analyst, how often the
analyst names a step (coverage), and its exact-step, ±1-step, ±3-step and agent agreement — as
accuracy over every labelled transcript (naming no step is a miss, as Who&When counts it) and as
precision over the transcripts it named a step for, each with its count and a 95% Wilson interval.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from store import FaultlineError, read_connection, resolve_db_path
from store.agreement import analyst_labels, labelled_by_both
from store.first_errors import labelled_steps

from .catalog import HARD, OTHER
from .select import choose_analyst

BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 20240601
GOLD_COLUMNS = ("dataset", "instance_id", "model", "category")
# labels that name no error type: the analyst abstained
ABSTAINED = (HARD, OTHER)


class AgreementError(FaultlineError):
    """An analyst, a gold file or a comparison that cannot be measured."""


@dataclass
class Pair:
    dataset: str
    instance_id: str
    model: str
    analyst: str  # the analyst's category
    reference: str  # the reference category


def _rate(k: int, n: int) -> dict:
    """k of n as {k, n, rate, ci} (the 95% Wilson interval; rate and ci null when n is 0)."""
    if not n:
        return {"k": k, "n": n, "rate": None, "ci": None}
    from core.significance import wilson

    low, high = wilson(k, n)
    return {"k": k, "n": n, "rate": k / n, "ci": [low, high]}


def _same_agent(a: str | None, b: str | None) -> bool:
    return a is not None and b is not None and " ".join(a.split()).casefold() == " ".join(b.split()).casefold()


@dataclass
class StepReport:
    """The first error's step and agent against a reference (see the module docstring)."""

    pairs: list[dict] = field(default_factory=list)

    def as_json(self) -> dict:
        stepped = [p for p in self.pairs if p["ref_step"] is not None]
        agented = [p for p in self.pairs if p["ref_agent"] is not None]
        named = [p for p in stepped if p["step_index"] is not None]
        named_agent = [p for p in agented if p["step_agent"] is not None]

        def within(p: dict, d: int) -> bool:
            return p["step_index"] is not None and abs(p["step_index"] - p["ref_step"]) <= d

        def count(rows: list[dict], test) -> int:
            return sum(1 for p in rows if test(p))

        agent = lambda p: _same_agent(p["step_agent"], p["ref_agent"])  # noqa: E731
        named_any = [p for p in self.pairs if p["step_index"] is not None]
        either = lambda p: (p["ref_step"] is not None and within(p, 1)) or agent(p)  # noqa: E731
        return {
            "n": len(self.pairs),
            "named": len(named_any),
            "coverage": len(named_any) / len(self.pairs) if self.pairs else None,
            "accuracy": {
                "exact_step": _rate(count(stepped, lambda p: within(p, 0)), len(stepped)),
                "within_1_step": _rate(count(stepped, lambda p: within(p, 1)), len(stepped)),
                "within_3_steps": _rate(count(stepped, lambda p: within(p, 3)), len(stepped)),
                "agent": _rate(count(agented, agent), len(agented)),
            },
            "precision": {
                "exact_step": _rate(count(named, lambda p: within(p, 0)), len(named)),
                "within_1_step": _rate(count(named, lambda p: within(p, 1)), len(named)),
                "within_3_steps": _rate(count(named, lambda p: within(p, 3)), len(named)),
                "agent": _rate(count(named_agent, agent), len(named_agent)),
                "within_1_step_or_agent": _rate(count(named_any, either), len(named_any)),
            },
        }

    def line(self) -> str:
        if not self.pairs:
            return ""
        j = self.as_json()
        acc, prec = j["accuracy"], j["precision"]

        def pct(m: dict) -> str:
            return f"{m['rate']:.1%} ({m['k']}/{m['n']})" if m["rate"] is not None else f"- (0/{m['n']})"

        return (f"first error steps on {j['n']} labelled transcripts: a step named for {j['named']} "
                f"({j['coverage']:.1%}); accuracy exact step {pct(acc['exact_step'])}, ±3 steps "
                f"{pct(acc['within_3_steps'])}, agent {pct(acc['agent'])}; where a step was named, within ±1 step or "
                f"the same agent {pct(prec['within_1_step_or_agent'])}")


@dataclass
class Report:
    analyst: str
    against: str
    pairs: list[Pair] = field(default_factory=list)
    n: int = 0
    agreement: float | None = None
    kappa: float | None = None
    kappa_ci: list[float] | None = None
    kappa_note: str | None = None
    per_category: dict[str, dict] = field(default_factory=dict)
    labels: list[str] = field(default_factory=list)
    matrix: list[list[int]] = field(default_factory=list)
    specific: dict = field(default_factory=dict)
    steps: StepReport = field(default_factory=StepReport)

    @property
    def disagreements(self) -> list[Pair]:
        return [p for p in self.pairs if p.analyst != p.reference]

    def as_json(self) -> dict:
        return {
            "n": self.n,
            "agreement": self.agreement,
            "kappa": self.kappa,
            "kappa_ci": self.kappa_ci,
            "per_category": self.per_category,
            **(self.specific or specific_figures([], [])),
            "confusion": {
                "labels": self.labels,
                "matrix": self.matrix,
                "disagreements": [
                    {"dataset": p.dataset, "instance_id": p.instance_id, "model": p.model,
                     "analyst": p.analyst, "reference": p.reference}
                    for p in self.disagreements
                ],
            },
            "steps": self.steps.as_json(),
        }

    def line(self) -> str:
        steps = self.steps.line()
        return self._category_line() + (f"; {steps}" if steps else "")

    def _category_line(self) -> str:
        if not self.n:
            return f"agreement of {self.analyst} with {self.against}: no failures labelled by both"
        kappa = f"κ {self.kappa:.3f}" if self.kappa is not None else f"κ undefined ({self.kappa_note})"
        ci = f" [{self.kappa_ci[0]:.3f}, {self.kappa_ci[1]:.3f}]" if self.kappa_ci else ""
        sp = self.specific
        specific = (f"; specific labels {sp['specific_right']}/{sp['specific']} right "
                    f"({sp['specific_precision']:.1%})" if sp.get("specific") else "; no specific labels")
        return (f"agreement of {self.analyst} with {self.against} on {self.n} failures: "
                f"{self.agreement:.1%}, {kappa}{ci}{specific}, {sp.get('abstained', 0)} abstained "
                f"({sp.get('abstention_rate') or 0:.1%}); {len(self.disagreements)} disagreements")


def matrix_kappa(m) -> float | None:
    """Cohen's κ of a confusion matrix (counts, or weights: taxonomy.calibration weighs each review
    by its stratum); None when chance agreement is 1."""
    import numpy as np

    m = np.asarray(m, dtype=float)
    total = m.sum()
    po = np.trace(m) / total
    pe = float((m.sum(axis=0) / total) @ (m.sum(axis=1) / total))
    return None if pe >= 1.0 else float((po - pe) / (1 - pe))


def cohen_kappa(a: Sequence[str], b: Sequence[str]) -> tuple[float | None, str | None]:
    """Cohen's κ of two label sequences, or (None, reason) when it is undefined."""
    import numpy as np

    if not a:
        return None, "no labelled pairs"
    index = {c: i for i, c in enumerate(sorted(set(a) | set(b)))}
    m = np.zeros((len(index), len(index)))
    np.add.at(m, ([index[x] for x in a], [index[y] for y in b]), 1)
    kappa = matrix_kappa(m)
    if kappa is None:
        return None, "both sides use a single category, so chance agreement is 1 and κ is 0/0"
    return kappa, None


def specific_figures(reference: Sequence[str], analyst: Sequence[str]) -> dict:
    """How far to trust the analyst's specific labels: `specific` (labels other than Hard to
    Analyze and Other), `specific_right` (those equal to the reference), `specific_precision`,
    `abstained` (Hard to Analyze or Other) and `abstention_rate` (of all labelled failures)."""
    n = len(analyst)
    specific = [(r, a) for r, a in zip(reference, analyst) if a not in ABSTAINED]
    right = sum(r == a for r, a in specific)
    return {"specific": len(specific), "specific_right": right,
            "specific_precision": right / len(specific) if specific else None,
            "abstained": n - len(specific), "abstention_rate": (n - len(specific)) / n if n else None}


def _bootstrap_ci(a: list[str], b: list[str]) -> list[float] | None:
    import numpy as np

    n = len(a)
    if n < 2:
        return None
    labels = sorted(set(a) | set(b))
    index = {c: i for i, c in enumerate(labels)}
    ai = np.array([index[x] for x in a])
    bi = np.array([index[x] for x in b])
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    draws = rng.integers(0, n, size=(BOOTSTRAP_RESAMPLES, n))
    sa, sb = ai[draws], bi[draws]
    po = (sa == sb).mean(axis=1)
    k = len(labels)
    pa = np.stack([(sa == c).mean(axis=1) for c in range(k)], axis=1)
    pb = np.stack([(sb == c).mean(axis=1) for c in range(k)], axis=1)
    pe = (pa * pb).sum(axis=1)
    ok = pe < 1.0
    if not ok.any():
        return None
    kappas = (po[ok] - pe[ok]) / (1 - pe[ok])
    low, high = np.percentile(kappas, [2.5, 97.5])
    return [float(low), float(high)]


def measure(pairs: list[Pair], analyst: str, against: str) -> Report:
    report = Report(analyst=analyst, against=against, pairs=pairs, n=len(pairs))
    if not pairs:
        report.kappa_note = "no failures are labelled by both sides"
        return report
    a = [p.analyst for p in pairs]
    b = [p.reference for p in pairs]
    report.agreement = sum(x == y for x, y in zip(a, b)) / len(pairs)
    report.specific = specific_figures(b, a)
    report.kappa, report.kappa_note = cohen_kappa(b, a)
    report.kappa_ci = _bootstrap_ci(b, a) if report.kappa is not None else None
    report.labels = sorted(set(a) | set(b))
    idx = {c: i for i, c in enumerate(report.labels)}
    report.matrix = [[0] * len(report.labels) for _ in report.labels]
    for x, y in zip(b, a):
        report.matrix[idx[x]][idx[y]] += 1
    for c in report.labels:
        tp = report.matrix[idx[c]][idx[c]]
        predicted = sum(row[idx[c]] for row in report.matrix)
        support = sum(report.matrix[idx[c]])
        report.per_category[c] = {
            "precision": tp / predicted if predicted else None,
            "recall": tp / support if support else None,
            "support": support,
            "predicted": predicted,
        }
    return report


def read_gold(path: str | Path) -> dict[tuple[str, str, str], str]:
    """(dataset, instance_id, model) → category from a gold CSV."""
    p = Path(path)
    try:
        with open(p, newline="", encoding="utf-8-sig") as fh:
            reader = csv.DictReader(fh)
            missing = [c for c in GOLD_COLUMNS if c not in (reader.fieldnames or [])]
            if missing:
                raise AgreementError(f"{p}: the gold file lacks the column(s) {', '.join(missing)}; "
                                     f"it needs {', '.join(GOLD_COLUMNS)}")
            gold = {}
            for line, row in enumerate(reader, start=2):
                values = [(row.get(c) or "").strip() for c in GOLD_COLUMNS]
                if not all(values):
                    raise AgreementError(f"{p}: line {line} leaves {GOLD_COLUMNS[values.index('')]} empty")
                gold[tuple(values[:3])] = " ".join(values[3].split())
            return gold
    except FileNotFoundError:
        raise AgreementError(f"{p}: gold file not found") from None
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise AgreementError(f"{p}: cannot read the gold file: {exc}") from None


def _canonical(category: str, known: dict[str, str]) -> str:
    return known.get(" ".join(category.split()).casefold(), category)


def compare(con, analyst: str | None = None, against: str = "reviews",
            gold_labels: dict[tuple[str, str, str], str] | None = None, gold_name: str = "gold file",
            models: Sequence[str] = (), datasets: Sequence[str] = ()) -> Report:
    """Compare `analyst` (default: the one with most labels) with reviews, gold labels, or
    another analyst on the same failures, on an open connection."""
    analyst = choose_analyst(con, analyst, AgreementError)
    if gold_labels is not None:
        labels = analyst_labels(con, analyst, models, datasets)
        folded = {c.casefold(): c for c in {r["category"] for r in labels}}
        refs = [gold_labels.get((r["dataset"], r["instance_id"], r["model"])) for r in labels]
        refs = [_canonical(c, folded) if c else None for c in refs]
        pairs = [Pair(r["dataset"], r["instance_id"], r["model"], r["category"], ref)
                 for r, ref in zip(labels, refs) if ref]
        return measure(pairs, analyst, gold_name)
    if against != "reviews":
        against = choose_analyst(con, against, AgreementError)
    pairs = [Pair(*row) for row in labelled_by_both(con, analyst, against, models, datasets)]
    against_name = "human reviews" if against == "reviews" else against
    report = measure(pairs, analyst, against_name)
    report.steps = StepReport(labelled_steps(con, analyst, against, models, datasets))
    return report


def agreement(db=None, analyst: str | None = None, against: str = "reviews", gold: str | None = None,
              models: Sequence[str] = (), datasets: Sequence[str] = ()) -> Report:
    """`compare` on the store at `db` (the CLI's entry point)."""
    path = resolve_db_path(db)
    if not path.exists():
        raise AgreementError(f"{path}: no database here yet; load logs with `python -m ingest PATH`")
    gold_labels = read_gold(gold) if gold else None
    with read_connection(path) as con:
        return compare(con, analyst, against, gold_labels, f"gold file {gold}", models, datasets)
