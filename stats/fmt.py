"""One number style for every page, table, CLI line and the report: percentages to one decimal,
p-values to two significant digits (never a bare 0), counts with thousands separators, intervals
no more precise than their sample allows, plain words and right plurals.

Plain Python (no Streamlit), so the CLI and the static report use the very same functions as the
dashboard.
"""

from __future__ import annotations

import math

# d3 formats for charts (Vega-Lite), matching `pct` and `count` below
D3_PERCENT = ".1%"
D3_COUNT = ",d"
# the smallest p a float can hold is ~5e-324; a p-value that underflowed to 0 is "below 1e-300"
P_FLOOR = "< 1e-300"
# the significance line every verdict uses (core.significance.ALPHA): a p or q is never printed onto it
SIGNIFICANCE = 0.05


def _missing(v) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def count(n) -> str:
    """1,600 — or "–" when unknown."""
    return "–" if _missing(n) else f"{int(n):,}"


def pct(v, decimals: int = 1) -> str:
    """54.5% (one decimal); a share that is not 0 never reads "0.0%", nor one below 1 "100.0%"."""
    if _missing(v):
        return "–"
    step = 10 ** -(decimals + 2)
    if 0 < v < step / 2:
        return f"< {step:.{decimals}%}"
    if 1 - step / 2 < v < 1:
        return f"> {1 - step:.{decimals}%}"
    return f"{v:.{decimals}%}"


def signed_pct(v, decimals: int = 1) -> str:
    """+12.5 pp style differences of shares, as signed percentages: +12.5%, −3.0%."""
    if _missing(v):
        return "–"
    text = f"{abs(v):.{decimals}%}"
    return ("+" if v > 0 else "−" if v < 0 else "±") + text


def interval_decimals(n: int) -> int:
    """Decimals worth printing on a 95% interval of a rate over n: below 100 questions a tenth
    of a percent is noise (the interval is tens of points wide), so whole percentages."""
    return 1 if n >= 100 else 0


def interval(low, high, n: int) -> str:
    """A 95% interval as "47.2–61.7%" (whole percentages when n < 100)."""
    if _missing(low) or _missing(high):
        return "–"
    d = interval_decimals(n)
    return f"{low * 100:.{d}f}–{high * 100:.{d}f}%"


def p_value(v) -> str:
    """A p- or q-value with two significant digits: 0.042, 0.31, 1, 9.0e-05 — never "0", and
    never "0.05" for a value that is not 0.05: one that rounds onto the significance line gets
    the digits that tell its side (0.0501, 0.0496)."""
    if _missing(v):
        return "–"
    if v == 0:
        return P_FLOOR
    if v >= 0.995:
        return "1"
    if v < 1e-3:
        return f"{v:.1e}"  # 9.0e-05: the second digit kept even when it is 0
    digits = 2
    text = f"{v:.{digits}g}"
    while float(text) == SIGNIFICANCE and v != SIGNIFICANCE and digits < 8:
        digits += 1
        text = f"{v:.{digits}g}"
    return text


def plural(n: int, one: str, many: str | None = None) -> str:
    """"1 question", "2 questions", "1,018 questions"."""
    return f"{n:,} {one if n == 1 else (many or one + 's')}"


def times(n: int) -> str:
    """"once", "twice", "3 times"."""
    return {1: "once", 2: "twice"}.get(n, f"{n:,} times")


def yes_no(v) -> str:
    """Plain words for a flag: "yes", "no", or "–" when unknown."""
    if v is None:
        return "–"
    if isinstance(v, str):
        v = v.strip().lower() in ("true", "yes", "1", "y")
    return "yes" if v else "no"


def _parsed(value):
    import json

    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return None
    return value


def option_letter(output: str | None, choices) -> str | None:
    """The option a multiple-choice output names ("C", " c.", "(C)"), when `choices` has it."""
    choices = _parsed(choices)
    if not isinstance(choices, dict) or not output:
        return None
    key = output.strip().strip("().:").strip()
    for k in choices:
        if str(k).strip().lower() == key.lower():
            return str(k)
    return None


def chosen(output: str | None, mapped_output: str | None, choices) -> str | None:
    """A multiple-choice answer as letter and text, "C · The hypothalamus"; None when the output
    is not an option letter (free text speaks for itself)."""
    letter = option_letter(output, choices)
    if letter is None:
        return f"{(output or '').strip()} · {mapped_output}" if mapped_output and output else None
    text = _parsed(choices).get(letter) or mapped_output or ""
    return f"{letter} · {text}" if text else letter


def gold(refs, choices=None) -> str:
    """The correct reference(s), with their option letter for multiple choice: "D · The cerebellum"."""
    refs, choices = _parsed(refs), _parsed(choices)
    items = [r for r in refs if isinstance(r, dict) and r.get("correct")] if isinstance(refs, list) else []
    letters = {str(v): str(k) for k, v in choices.items()} if isinstance(choices, dict) else {}
    out = []
    for r in items:
        text = str(r.get("text", ""))
        out.append(f"{letters[text]} · {text}" if text in letters else text)
    return "; ".join(out)


def number(v) -> str:
    """A score as logged, without float noise: 1, 0.75, 3.5, 0.6667, 2.2e-308, 1e+300."""
    if _missing(v):
        return "–"
    return f"{v:.4g}"


def span(low, high) -> str:
    """A metric's scale as printed everywhere: "1–5", "0–1", "0–100"; "unknown scale" without
    a top, "up to 5" without a known bottom (a store from before migration 010)."""
    if _missing(high):
        return "unknown scale"
    if _missing(low):
        return f"up to {number(high)}"
    return f"{number(low)}–{number(high)}"


def score_decimals(low, high) -> int | None:
    """Decimals a mean score on this scale is printed with: 3 on 0–1 (F1 0.339), 2 on 1–5
    (a jury mean 4.48) or 0–10, 1 on 0–100 (BLEU 42.1); None when the scale is unknown."""
    if _missing(low) or _missing(high) or not high > low:
        return None
    return max(0, 3 - math.ceil(math.log10(high - low)))


def score(v, low=None, high=None) -> str:
    """A score or a mean score in its metric's own units, as many decimals as its scale merits
    (rounded): 0.339, 4.48, 42.1; `.4g` when the scale is unknown."""
    if _missing(v):
        return "–"
    d = score_decimals(low, high)
    return number(v) if d is None else f"{v:.{d}f}"


def headline(v, as_rate: bool, low=None, high=None) -> str:
    """The harness's own number in its own units: a rate as a percentage (54.5%), a mean score
    with its scale (4.48 of 1–5, 0.339 of 0–1)."""
    if _missing(v):
        return "–"
    return pct(v) if as_rate else f"{score(v, low, high)} of {span(low, high)}"


def signed_score(v, low=None, high=None) -> str:
    """A difference of scores with its sign, in the metric's units: +0.12, −1.15, ±0."""
    if _missing(v):
        return "–"
    text = score(abs(v), low, high)
    return ("±" if float(text) == 0 else "+" if v > 0 else "−") + text


def score_interval(low_v, high_v, low=None, high=None, signed: bool = False) -> str:
    """A 95% interval of a mean score, in its units: "4.31–4.62"; of a difference, signed and
    joined by "to": "−1.27 to −1.03"."""
    if _missing(low_v) or _missing(high_v):
        return "–"
    if signed:
        return f"{signed_score(low_v, low, high)} to {signed_score(high_v, low, high)}"
    return f"{score(low_v, low, high)}–{score(high_v, low, high)}"


def relative(threshold, low, high, lower_is_better: bool = False) -> float | None:
    """Where a threshold sits on its scale, as ErrorMap counts it: 0.7 for 3.8 on 1–5; for a
    lower-is-better metric, the share of the way from the top (0.7 for 0.3 on 0–1)."""
    if _missing(threshold) or _missing(low) or _missing(high) or not high > low:
        return None
    share = (threshold - low) / (high - low)
    return round(1 - share if lower_is_better else share, 6)


def failure_rule(threshold, low, high, lower_is_better: bool = False, set_by: str | None = None) -> str:
    """The analysis threshold in words, with where it comes from: "failures: score < 3.8 of 1–5
    — ErrorMap's 0.7 of the range". `set_by`: None (the default line, ErrorMap's 0.7 of the
    range), "ingest" (--pass-threshold when the logs were read) or "you" (set for this view)."""
    if _missing(threshold):
        return "failures: the log's own verdicts"
    op = ">" if lower_is_better else "<"
    where = relative(threshold, low, high, lower_is_better)
    share = f"{where:g} of the range" if where is not None else "on an unknown scale"
    why = {None: f"ErrorMap's {share}", "ingest": f"--pass-threshold at ingest, {share}",
           "you": f"set for this view, {share}"}.get(set_by, share)
    return f"failures: score {op} {number(threshold)} of {span(low, high)} — {why}"


def pass_rule(metric: str | None, threshold, metric_max, lower_is_better, scale_source,
              metric_min=None, binary: bool = False) -> str:
    """How a run's score became pass/fail: "pass = correct (exact_match is 0/1, from the
    registry)" for a 0/1 metric, else "pass when aci_bench_accuracy ≥ 3.8 (scale 1–5, from the
    helm display name)"."""
    if not metric:
        return "the log's own verdict"
    source = f", from the {scale_source}" if scale_source else ""
    if binary:
        return f"pass = correct ({metric} is 0/1{source})"
    if _missing(threshold):
        return f"the log's verdict on {metric}"
    op = "≤" if lower_is_better else "≥"
    scale = f"scale {span(metric_min, metric_max)}" if not _missing(metric_max) else "scale unknown"
    return f"pass when {metric} {op} {number(threshold)} ({scale}{source})"


def row_pass_rule(row: dict) -> str:
    """`pass_rule` for a stored prediction's row (its run's main_metric, pass_threshold,
    metric_min/max, lower_is_better, scale_source): one phrasing for pages, the report and the
    MCP server."""
    from core.verdicts import (
        is_binary_rule,  # the verdict rules' own test of a 0/1 metric
    )

    metric, low, high = row.get("main_metric"), row.get("metric_min"), row.get("metric_max")
    return pass_rule(metric, row.get("pass_threshold"), high, row.get("lower_is_better"), row.get("scale_source"),
                     metric_min=low, binary=is_binary_rule(metric, low, high, row.get("scale_source")))


def outcome(row: dict) -> str:
    """A prediction's verdict in words: "passed", "failed", "infrastructure error" (the request
    errored: not the model's failure) or "not scored"."""
    if row.get("infra_error"):
        return "infrastructure error"
    return {True: "passed", False: "failed"}.get(row.get("is_correct"), "not scored")
