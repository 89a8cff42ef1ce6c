"""Generated HELM suites on continuous metrics, as `helm-run` writes them (no schema.json: the
headline metric and its scale come from HELM's own schema table): a MedHELM-shaped suite of
1–5 jury means and a Lite-shaped suite of F1 and BLEU-4, two models each, the same questions
for both. The scores are planted so the numbers are known: gpt-4.1's ACI-Bench jury mean is
4.48 of 1–5 while 97.5% of its notes pass ErrorMap's 0.7 line (3.8) — the issue's example."""

from __future__ import annotations

from pathlib import Path

from tests.helm_gen import Case, Run, write_run

A, B = "openai/gpt-4.1", "org/med-small"


def thirds(*counts: tuple[int, int]) -> list[float]:
    """Jury means of three 1–5 ratings: (sum of the ratings, how many) each, in that order."""
    return [total / 3 for total, n in counts for _ in range(n)]


# ACI-Bench, 40 notes. A: one note at 3.33 below the 3.8 line, the rest 4–5 (mean 538/120 = 4.483)
ACI = {A: thirds((10, 1), (12, 9), (13, 10), (14, 10), (15, 10)),
       B: thirds((7, 10), (9, 10), (11, 10), (13, 10))}
# MedDialog, run per subset (HELM reports the mean over them): 20 dialogues each
MED_DIALOG = {
    "healthcaremagic": {A: thirds((14, 12), (11, 8)), B: thirds((12, 10), (9, 10))},
    "icliniq": {A: thirds((15, 5), (13, 10), (10, 5)), B: thirds((14, 4), (8, 16))},
}
# NarrativeQA F1 (0–1), 30 questions; WMT-14 de-en BLEU-4 (0–1), 30 sentences: nothing reaches 0.7
NARRATIVE = {A: [1.0] * 8 + [0.8] * 4 + [0.5] * 6 + [0.25] * 6 + [0.0] * 6,
             B: [1.0] * 5 + [0.75] * 3 + [0.5] * 8 + [0.2] * 6 + [0.0] * 8}
WMT = {A: [0.01 * (i % 9) for i in range(30)], B: [0.005 * (i % 7) for i in range(30)]}


def _run(suite: Path, scenario: str, group: str, metric: str, model: str, scores: list[float],
         args: dict | None = None, prefix: str = "") -> None:
    cases = [Case(id=f"id{i}", question=f"{scenario} {prefix}question {i}", output=f"{model} answer {i}",
                  stats={metric: score}) for i, score in enumerate(scores)]
    write_run(suite, Run(scenario=scenario, model=model, groups=[group], cases=cases, args=args or {}))


def jury_suite(root: Path) -> Path:
    """A MedHELM-shaped suite: ACI-Bench (one run per model) and MedDialog (a run per subset)."""
    suite = root / "medhelm" / "benchmark_output" / "runs" / "v1"
    suite.mkdir(parents=True)
    for model in (A, B):
        _run(suite, "aci_bench", "aci_bench", "aci_bench_accuracy", model, ACI[model])
        for subset, scores in MED_DIALOG.items():
            _run(suite, "med_dialog", "med_dialog", "med_dialog_accuracy", model, scores[model],
                 args={"subset": subset}, prefix=f"{subset} ")
    return suite


def lite_suite(root: Path) -> Path:
    """A Lite-shaped suite: NarrativeQA judged on F1, WMT-14 (de-en) on BLEU-4."""
    suite = root / "lite" / "benchmark_output" / "runs" / "v1"
    suite.mkdir(parents=True)
    for model in (A, B):
        _run(suite, "narrative_qa", "narrative_qa", "f1_score", model, NARRATIVE[model])
        _run(suite, "wmt_14", "wmt_14", "bleu_4", model, WMT[model], args={"language_pair": "de-en"})
    return suite
