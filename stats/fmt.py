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
    """A p-value with two significant digits: 0.042, 0.31, 1, 9.0e-05 — never "0"."""
    if _missing(v):
        return "–"
    if v == 0:
        return P_FLOOR
    if v >= 0.995:
        return "1"
    if v < 1e-3:
        return f"{v:.1e}"  # 9.0e-05: the second digit kept even when it is 0
    return f"{v:.2g}"


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
    """A score as logged, without float noise: 1, 0.75, 3.5, 0.6667."""
    if _missing(v):
        return "–"
    return f"{v:.4g}"


def pass_rule(metric: str | None, threshold, metric_max, lower_is_better, scale_source) -> str:
    """How a run's score became pass/fail: "pass when exact_match ≥ 0.7 (scale 0–1, from the registry)"."""
    if not metric:
        return "the log's own verdict"
    if _missing(threshold):
        return f"the log's verdict on {metric}"
    op = "≤" if lower_is_better else "≥"
    scale = f"scale 0–{number(metric_max)}" if not _missing(metric_max) else "scale unknown"
    source = f", from the {scale_source}" if scale_source else ""
    return f"pass when {metric} {op} {number(threshold)} ({scale}{source})"


def outcome(row: dict) -> str:
    """A prediction's verdict in words: "passed", "failed", "infrastructure error" (the request
    errored: not the model's failure) or "not scored"."""
    if row.get("infra_error"):
        return "infrastructure error"
    return {True: "passed", False: "failed"}.get(row.get("is_correct"), "not scored")
