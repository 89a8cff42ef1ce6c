"""Human-readable column headers and one number format for every table the pages show.

The query and stats layers keep their machine names (`a_count`, `ci_low`: they are the JSON and
SQL interface); tables on screen show what the column means. Shares and rates use Streamlit's
"percent" format everywhere (up to two decimals, trailing zeros dropped); charts use the
matching d3 format `PERCENT`.
"""

from __future__ import annotations

import streamlit as st

PERCENT = ".2~%"

LABELS = {
    "model": "Model",
    "dataset": "Dataset",
    "domain": "Domain",
    "split": "Split",
    "category": "Category",
    "instance_id": "Question id",
    "b_instance_id": "B's question id",
    "input_text": "Question",
    "reference": "Reference answer",
    "a_output": "A's output",
    "b_output": "B's output",
    "error_title": "Error title",
    "n": "Questions",
    "correct": "Correct",
    "count": "Failures in category",
    "failures": "Classified failures",
    "questions": "Questions answered",
    "analyst": "Analyst",
    "analysed": "Failures analysed",
    "classified": "Classified",
    "classifiers": "Classified by",
    "a_count": "A: failures in category",
    "b_count": "B: failures in category",
    "a_only_fail": "Paired: only A fails with it",
    "b_only_fail": "Paired: only B fails with it",
    "is_correct": "Passed",
    "output": "Output (start)",
    "reviewed": "Labels reviewed",
    "agreed": "Reviews that confirmed",
    "run_id": "Run id",
    "source_format": "Format",
    "source_path": "Source",
    "suite": "Suite",
    "run_name": "Run name",
    "main_metric": "Pass/fail metric",
    "n_predictions": "Predictions",
    "n_failures": "Failures",
    "n_infra_errors": "Infrastructure errors",
    "ingested_at": "Ingested",
    "error_summary": "Summary",
    "variant": "Variant",
    "file": "File",
    "main_split": "Main split",
    "settings": "Settings",
    "harness_metric": "Harness metric",
    "harness_split": "Harness split",
    "harness_value": "Harness's own number",
    "harness_n": "Harness counts",
    "harness_agrees": "Agrees with the harness",
    "harness_note": "Harness check",
    "headline_metric": "Harness's headline metric",
    "verdict_rule": "Pass/fail rule",
    "judged": "Predictions judged",
    "failed": "Failed",
    "score_min": "Lowest score",
    "score_max": "Highest score",
    "wrong_answer": "Wrong answer chosen",
    "models": "Models",
    "chosen_by": "Chosen by",
    "precision": "Precision",
    "recall": "Recall",
    "support": "Reference labels",
    "predicted": "Analyst's labels",
}

PERCENT_COLUMNS = {
    "accuracy": "Accuracy",
    "ci_low": "95% interval: low",
    "ci_high": "95% interval: high",
    "share": "Share of the model's failures",
    "a_share": "A: share of its failures",
    "b_share": "B: share of its failures",
    "delta": "Δ share (B − A)",
}

P_COLUMNS = {
    "p_fisher": ("p (Fisher, shares)", "Two-sided Fisher exact test of A's and B's shares."),
    "q_bh": ("q (Benjamini–Hochberg)", "p_fisher adjusted for testing every category at once."),
    "p_paired": ("p (paired McNemar)", "Exact McNemar test on the questions only one model "
                                       "fails with this category."),
    "p_errormap": ("p (ErrorMap paper's check)",
                   "The ErrorMap paper's one-sided binomial check of the weaker model's count "
                   "under the stronger model's share. Shown for parity; it treats that share as "
                   "known and overstates significance."),
}


def config(columns: list[str], **overrides) -> dict:
    """column_config for these columns: readable labels, percentages, p-values like 1.8e-12."""
    out = {}
    for c in columns:
        if c in PERCENT_COLUMNS:
            out[c] = st.column_config.NumberColumn(PERCENT_COLUMNS[c], format="percent")
        elif c in P_COLUMNS:
            label, help_ = P_COLUMNS[c]
            out[c] = st.column_config.NumberColumn(label, help=help_, format="%.2g")
        elif c == "per_100":
            out[c] = st.column_config.NumberColumn("Failures per 100 questions", format="%.1f")
        elif c in LABELS:
            out[c] = LABELS[c]
    out.update(overrides)
    return out


def p_value(v: float | None) -> str:
    """A p-value for text: 0.042, 0.31, 1.8e-12 — never a row of zeros or a blank."""
    if v is None or v != v:
        return "–"
    if v >= 0.999:
        return "1"
    if v == 0:
        return "< 1e-300"  # below what a float holds
    # two significant digits, kept even when the second is 0: 9.0e-05, not 9e-05
    return f"{v:.1e}" if v < 1e-3 else f"{v:.3f}".rstrip("0").rstrip(".")
