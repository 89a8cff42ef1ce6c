"""Human-readable column headers and one number format for every table the pages show.

The query and stats layers keep their machine names (`a_count`, `ci_low`: they are the JSON and
SQL interface); tables on screen show what the column means. The number style is stats/fmt.py's,
applied in Python before a table is drawn (`shown`): percentages to one decimal, rounded (a
number column with a `step` truncates — 0.9669 read "96.6%" — and would print a share the chart
rounds to 1.7% as 1.6%), p-values with two significant digits (a float column would print an
underflowed p as 0), scores on their scale, flags as yes/no; counts stay numbers with thousands
separators.
"""

from __future__ import annotations

import polars as pl
import streamlit as st

from core.counts import ANALYSED, LABELLED, UNDER_THRESHOLD
from stats import fmt

PERCENT = fmt.D3_PERCENT

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
    "analysed": ANALYSED.label,
    "classified": LABELLED.label,
    "classifiers": "Classified by",
    "a_count": "A: failures",
    "b_count": "B: failures",
    "a_only_fail": "Paired: only A fails with it",
    "b_only_fail": "Paired: only B fails with it",
    "is_correct": "Passed",
    "passed": "Passed",
    "finding": "Finding",
    "q_text": "q (BH)",
    "corrected_text": "Corrected Δ, 95%",
    "p_fisher_text": "p (Fisher)",
    "p_paired_text": "p (paired)",
    "p_errormap_text": "p (paper's check)",
    "ci": "95% interval",
    "harness": "The harness's number",
    "harness_ci": "95% interval",
    "headline_interval": "Interval",
    "threshold_failures": UNDER_THRESHOLD.label,
    "headline_note": "Note",
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
    "n_failures": "Failures (by the rule ingested)",
    "scale": "Scale",
    "n_infra_errors": "Infrastructure errors",
    "ingested_at": "Ingested",
    "error_summary": "Summary",
    "variant": "Variant",
    "rerun": "Rerun",
    "started_at": "Run made",
    "superseded_by": "Counts instead (run id)",
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
    "people": "People's labels",
    "labelled": "Labelled by the analyst",
    "reviewed_as_analyst": "Reviewed, analyst's label",
    "reviewed_as_people": "Reviewed, people's label",
    "analyst_category": "Analyst's category",
    "weight": "Weight",
}

# numbers shown as text (missing values read "–", intervals as "47.2–61.7%")
TEXT_NUMBERS = {
    "corrected_text": "The 95% interval of B's share minus A's in the shares corrected for the analyst's "
                      "misclassification people measured (every failure under the filters). A "
                      "difference counts only when this interval leaves out 0 as well.",
    "harness": "The harness's own headline, in its own metric and scale: a pass rate, a mean score "
               "(a jury mean of 1–5, an F1 of 0–1), or for a dataset HELM runs domain by domain "
               "(MMLU's subjects) the mean of the domains' numbers.",
    "harness_ci": "95% interval of the harness's number: Wilson for a pass rate, Student t for a mean, "
                  "t by domain for a mean of domains' numbers (stratified standard error; cut at the "
                  "scale's ends); whole percentages below 100 questions.",
    "threshold_failures": "The questions on the wrong side of the analysis threshold (the line that picks "
                          "which predictions are analysed; its rule is under the chart), of those answered: "
                          "not the harness's number. For a 0/1 metric it is one minus the pass rate.",
    "ci": "95% Wilson interval of the pooled accuracy; whole percentages below 100 questions.",
    "harness_value": "The log's own aggregate (HELM stats.json, lm-eval results, the Inspect header) in "
                     "its metric and scale, as the harness printed it.",
}

PERCENT_HELP = {
    "accuracy": "Questions passed / questions answered, pooled over the domains.",
}

PERCENT_COLUMNS = {
    "accuracy": "Pass rate (pooled)",
    "ci_low": "95% interval: low",
    "ci_high": "95% interval: high",
    "share": "Share of the model's failures",
    "a_share": "A: share",
    "b_share": "B: share",
    "delta": "Δ share (B − A)",
    "precision": "Precision",
    "recall": "Recall",
}

COUNT_COLUMNS = {"n", "correct", "count", "failures", "questions", "analysed", "classified",
                 "a_count", "b_count", "a_only_fail", "b_only_fail", "reviewed", "agreed",
                 "n_predictions", "n_failures", "n_infra_errors", "support", "predicted", "people",
                 "labelled", "reviewed_as_analyst", "reviewed_as_people"}

P_HELP = {
    "p_fisher_text": "Two-sided Fisher exact test of A's and B's shares.",
    "q_text": "p (Fisher) adjusted for testing every error type at once (Benjamini–Hochberg); "
              "significant when ≤ 0.05.",
    "p_paired_text": "Exact McNemar test on the questions only one model fails with this error type.",
    "p_errormap_text": "The ErrorMap paper's one-sided binomial check of the weaker model's count "
                       "under the stronger model's share. Shown for parity; it treats that share as "
                       "known and overstates significance.",
}

# the compare page's tables: the key columns fit a 1400 px window; the paired test sits apart
COMPARE_KEY = ["category", "finding", "a_count", "b_count", "a_share", "b_share", "delta", "q_text",
               "p_fisher_text"]
COMPARE_PAIRED = ["category", "a_only_fail", "b_only_fail", "p_paired_text", "p_errormap_text"]


def percent(label: str, help: str | None = None):
    """A share shown as a percentage with one decimal (54.5%), formatted by `shown`."""
    return st.column_config.TextColumn(label, help=help, alignment="right")


SIGNED_PERCENT = {"delta"}


def shown(frame: pl.DataFrame, *percent_columns: str) -> pl.DataFrame:
    """The frame as a table draws it: every share column (`PERCENT_COLUMNS`, and any named
    here) as stats/fmt.py text, so the same fraction reads the same on every page, chart and
    report."""
    wanted = set(PERCENT_COLUMNS) | set(percent_columns)
    return frame.with_columns(
        pl.Series(c, [(fmt.signed_pct if c in SIGNED_PERCENT else fmt.pct)(v) for v in frame[c].to_list()],
                  dtype=pl.String)
        for c in frame.columns if c in wanted and frame[c].dtype.is_float())


def count(label: str, help: str | None = None):
    """A count with thousands separators (1,600)."""
    return st.column_config.NumberColumn(label, help=help, format="localized", step=1)


def config(columns: list[str], **overrides) -> dict:
    """column_config for these columns: readable labels, percentages, counts, p-values."""
    out = {}
    for c in columns:
        if c in PERCENT_COLUMNS:
            out[c] = percent(PERCENT_COLUMNS[c], PERCENT_HELP.get(c))
        elif c in COUNT_COLUMNS:
            out[c] = count(LABELS.get(c, c))
        elif c in P_HELP:
            out[c] = st.column_config.TextColumn(LABELS[c], help=P_HELP[c], width="small", alignment="right")
        elif c in TEXT_NUMBERS:
            out[c] = st.column_config.TextColumn(LABELS[c], help=TEXT_NUMBERS[c], alignment="right")
        elif c == "per_100":
            out[c] = st.column_config.NumberColumn("Failures per 100 questions", format="%.1f")
        elif c in LABELS:
            out[c] = LABELS[c]
    out.update(overrides)
    return out


def compare_table(c) -> pl.DataFrame:
    """The compare page's table of error types, with its p-values as text and each row's finding."""
    frame = c.categories_frame()
    return frame.with_columns(
        finding=pl.Series([r.finding for r in c.categories], dtype=pl.String),
        q_text=pl.Series([fmt.p_value(r.q_bh) for r in c.categories], dtype=pl.String),
        p_fisher_text=pl.Series([fmt.p_value(r.p_fisher) for r in c.categories], dtype=pl.String),
        p_paired_text=pl.Series([fmt.p_value(r.p_paired) for r in c.categories], dtype=pl.String),
        p_errormap_text=pl.Series([fmt.p_value(r.p_errormap) for r in c.categories], dtype=pl.String),
        delta_text=pl.Series([fmt.signed_pct(r.delta) for r in c.categories], dtype=pl.String),
        corrected_text=pl.Series([None if r.corrected_delta is None else
                                  f"{fmt.signed_pct(r.corrected_low)} to {fmt.signed_pct(r.corrected_high)}"
                                  for r in c.categories], dtype=pl.String),
    )


def compare_key(c) -> list[str]:
    """The compare table's key columns: where people's labels measured the analyst, the corrected
    difference's interval after Δ, and Fisher's p (q decides) moves to the paired tests' table so
    the key columns still fit a 1280 px window."""
    if not any(r.corrected_delta is not None for r in c.categories):
        return COMPARE_KEY
    return COMPARE_KEY[:7] + ["corrected_text", "q_text"]


def compare_paired(c) -> list[str]:
    """The paired tests' table (in the expander): Fisher's p joins it when the key table has no room."""
    moved = any(r.corrected_delta is not None for r in c.categories)
    return COMPARE_PAIRED[:1] + (["p_fisher_text"] if moved else []) + COMPARE_PAIRED[1:]


def _cut(texts: list[str | None], limit: int = 2000) -> list[str | None]:
    from .text import cell

    return [cell(t, limit) for t in texts]


def discordant_table(rows: pl.DataFrame, links: list[str]) -> pl.DataFrame:
    """Questions only one model fails, as shown: the gold beside both answers (option letter and
    text for multiple choice), the analyst's label, then the question. Built from Python lists:
    50 rows a page, and polars' per-row callbacks deadlock a server under concurrent sessions."""
    choices = rows["choices"].to_list()

    def answer(outputs: str, mapped: str) -> list[str | None]:
        return [fmt.chosen(o, m, ch) or o for o, m, ch in
                zip(rows[outputs].to_list(), rows[mapped].to_list(), choices)]

    # B's own id only when some question was paired by its text under another id
    ids = ["instance_id"] + (["b_instance_id"] if (rows["b_instance_id"] != rows["instance_id"]).any() else [])
    return rows.select(*ids).with_columns(
        reference=pl.Series([fmt.gold(r, ch) for r, ch in zip(rows["refs"].to_list(), choices)], dtype=pl.String),
        a_output=pl.Series(_cut(answer("a_output", "a_mapped")), dtype=pl.String),
        b_output=pl.Series(_cut(answer("b_output", "b_mapped")), dtype=pl.String),
        category=rows["category"], error_title=rows["error_title"],
        input_text=pl.Series(_cut(rows["input_text"].to_list()), dtype=pl.String),
        dataset=rows["dataset"], domain=rows["domain"],
        open=pl.Series(links, dtype=pl.String),
    )


def discordant_config(columns: list[str], a: str, b: str) -> dict:
    wide = {c: st.column_config.TextColumn(LABELS[c], width="medium")
            for c in ("reference", "input_text", "error_title") if c in columns}
    return config(columns, **wide,
                  a_output=st.column_config.TextColumn(f"A: {a}", width="medium", help=f"A's answer ({a})"),
                  b_output=st.column_config.TextColumn(f"B: {b}", width="medium", help=f"B's answer ({b})"),
                  open=st.column_config.LinkColumn("Details", display_text="open", width="small"))


INTERVAL_SHORT = {"Wilson": "Wilson", "t": "t", "t over domains": "t by domain"}


def results_table(acc: pl.DataFrame) -> pl.DataFrame:
    """Each model's result per dataset as shown (`stats.model_accuracy` rows), narrow enough for
    a 1280 px window: the harness's number and its interval (with how it was made) in the
    metric's own units, and — for a continuous metric — the failures under the analysis threshold
    apart; the pooled pass rate where HELM's mean over domains differs from it. Every number is
    stats/fmt.py text; the notes are under each dataset's chart."""
    from stats.headline import headline_interval_text, headline_text, is_continuous

    rows = acc.to_dicts()
    table = acc.select("model", "dataset", "n").with_columns(
        harness=pl.Series([headline_text(r) for r in rows], dtype=pl.String),
        harness_ci=pl.Series([f"{headline_interval_text(r)} ({INTERVAL_SHORT.get(r['headline_interval'], '–')})"
                              if r["headline_interval"] else "–" for r in rows], dtype=pl.String),
        threshold_failures=pl.Series([f"{fmt.count(r['failures'])} ({fmt.pct(r['failure_rate'])})"
                                      if is_continuous(r) else "same number" for r in rows], dtype=pl.String),
    )
    if not any(is_continuous(r) for r in rows):
        table = table.drop("threshold_failures")
    if any(r["accuracy"] is not None and r["headline"] is not None and abs(r["accuracy"] - r["headline"]) > 1e-12
           for r in rows):
        table = table.with_columns(accuracy=pl.Series([fmt.pct(r["accuracy"]) for r in rows], dtype=pl.String))
    return table


def runs_table(runs: pl.DataFrame) -> pl.DataFrame:
    """The data page's runs as shown: the metric's scale as "1–5", the harness's own number as
    stats/fmt.py prints a score (2.2e-308 stays readable), empty text cells as a dash."""
    shown = words(runs, "harness_agrees").with_columns(
        metric_min=pl.Series([fmt.span(lo, hi) if hi is not None else None
                              for lo, hi in runs.select("metric_min", "metric_max").iter_rows()], dtype=pl.String),
        harness_value=pl.Series([None if v is None else fmt.number(v) for v in runs["harness_value"].to_list()],
                                dtype=pl.String),
    ).rename({"metric_min": "scale"}).drop("metric_max")
    return shown.with_columns(pl.col(pl.String).fill_null("—"))


def split_error_types(sig: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A signature's error types (with `model_label`: the model, and on a second line how many of
    its failures carry the analyst's label out of all of them, the shares' denominator) and,
    apart, the labels that are not error types."""
    labelled = "labelled" if "labelled" in sig.columns else "failures"
    errors = sig.filter(pl.col("error_type"))
    # plain Python on collected rows: a Python callback inside polars runs in its thread pool
    labels = [f"{m}\nlabelled {fmt.count(k)} of {fmt.count(n)} failures"
              for m, k, n in errors.select("model", labelled, "failures").iter_rows()]
    errors = errors.with_columns(model_label=pl.Series(labels, dtype=pl.String))
    return errors, sig.filter(~pl.col("error_type"))


def share_table(sig: pl.DataFrame, *keys: str) -> pl.DataFrame:
    """A signature's rows as a table shows them: the keys, the analyst's count and people's labels,
    the denominator, the share and its 95% interval as text (whole percents below 100 failures,
    as stats/fmt.py prints an interval), a row with few labelled failures said in words."""
    rows = sig.to_dicts()
    cols = [c for c in ("count", "people", "failures", "labelled") if c in sig.columns]
    # the share and its interval first: at 1280 px the columns after them scroll out of sight
    table = sig.select(*keys, "share").with_columns(
        share_ci=pl.Series([fmt.interval(r["share_low"], r["share_high"], r["failures"]) for r in rows],
                           dtype=pl.String)).with_columns(sig.select(cols))
    if "few" in sig.columns:
        table = table.with_columns(few=sig["few"])
        table = words(table, "few")
    extra = [c for c in ("questions", "per_100") if c in sig.columns]
    return shown(table.with_columns(sig.select(extra)))


SHARE_HELP = {
    "share": "The estimated share of the model's failures (all of them under the pass rule, labelled "
             "or not) whose true category is this one: corrected by people's reviews of the analyst "
             "where there are any, the analyst's own count where not.",
    "share_ci": "95% interval of the share: the analyst's measured misclassification and the sampling "
                "of failures (a latent-class model's posterior, docs/stats.md) when people reviewed its "
                "labels, else Wilson's on the count (sampling only). Whole percentages below 100 failures.",
    "few": "Fewer than 5 of the model's failures carry a label here: read the counts, not the share.",
}


def share_config(columns_: list[str], **overrides) -> dict:
    """column_config of a `share_table`."""
    return config(columns_, **{
        "share": percent("Share of the model's failures", SHARE_HELP["share"]),
        "share_ci": st.column_config.TextColumn("95% interval", help=SHARE_HELP["share_ci"], alignment="right"),
        "few": st.column_config.TextColumn("Few labelled", help=SHARE_HELP["few"], width="small"),
        "failures": count("Failures (denominator)", f"Every failure of the model: the {UNDER_THRESHOLD.name}, "
                          f"{UNDER_THRESHOLD.rule}, labelled or not"),
        "count": count("Analyst's count", "The model's failures the analyst filed under this category"),
        "people": count("People's labels", "Failures people labelled with this category (reviews, loaded "
                        "label tables)"),
        **overrides})


def words(frame: pl.DataFrame, *flags: str) -> pl.DataFrame:
    """Boolean columns as plain words: "yes", "no", "–" (a checkbox or "true" reads as code)."""
    return frame.with_columns(
        pl.col(c).replace_strict({True: "yes", False: "no"}, default="–", return_dtype=pl.String)
        for c in flags)


def unlabelled(frame: pl.DataFrame) -> pl.DataFrame:
    """An outcome's missing label in words (a grey "None" read like a category named None): a
    failure no analysis has labelled says so; a pass, or an outcome without a verdict, has no
    error to name. `passed` holds words already (`words`)."""
    return frame.with_columns(
        pl.when(pl.col("category").is_not_null()).then(pl.col("category"))
        .when(pl.col("passed") == "no").then(pl.lit("not analysed"))
        .otherwise(pl.lit("–")).alias("category"),
        pl.col("error_title").fill_null("–"),
    )


def error_types_last(frame: pl.DataFrame) -> pl.DataFrame:
    """Rows by category: error types first (by name), then the labels that are not error types."""
    from taxonomy.catalog import NOT_ERROR_TYPES

    return frame.sort(pl.col("category").is_in(list(NOT_ERROR_TYPES)), "category")


# /instances' list: column → width in px, in the order shown. The columns before `output` are
# the ones a reader scans (which question, whose, passed, why) and together fit the main column
# of a 1280 px window (~820 px, less the row marker); the output's start and the domain follow.
INSTANCE_WIDTHS = {"dataset": 130, "instance_id": 85, "model": 150, "passed": 60, "category": 150,
                   "error_title": 200, "output": 400, "domain": 120}
INSTANCE_KEY_COLUMNS = ("dataset", "instance_id", "model", "passed", "category", "error_title")
# A name longer than its column takes room from the error title, which keeps at least this much
# (the key columns' total stays what fits the window). Pixels per character of the grid's 14 px
# font, rounded up for capitals and digits, and a cell's padding.
ERROR_TITLE_MIN_PX = 110
CHAR_PX = 7.5
CELL_PAD_PX = 20


def instance_widths(rows: pl.DataFrame) -> dict[str, int]:
    """INSTANCE_WIDTHS, with the dataset, then the id, then the model column widened to their
    longest name in `rows` as far as the error title can give room."""
    widths = dict(INSTANCE_WIDTHS)
    for column in ("dataset", "instance_id", "model"):
        longest = rows[column].cast(pl.String).str.len_chars().max() if rows.height else None
        need = int(longest * CHAR_PX + CELL_PAD_PX + 0.5) if longest else 0
        grow = min(max(0, need - widths[column]), widths["error_title"] - ERROR_TITLE_MIN_PX)
        widths[column] += grow
        widths["error_title"] -= grow
    return widths


def instance_list_config(widths: dict[str, int]) -> dict:
    labels = {"category": "Category", "error_title": "Error title", "output": "Output (start)"}
    return {c: st.column_config.TextColumn(labels.get(c) or LABELS.get(c, c), width=width)
            for c, width in widths.items()}
