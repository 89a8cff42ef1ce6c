"""The shared model / dataset / domain / split filters, the analysis thresholds and the analyst
picker, all kept in the URL so a copied link reproduces the view and the filters follow the user
from page to page."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import streamlit as st

from stats import fmt

from store import queries as q

from .data import load
from .nav import menu
from .text import md, visible
from .urlstate import seed_list, seed_one


THRESHOLD = "threshold"  # URL parameter, repeated: DATASET:X, the analysis threshold moved for a dataset


@dataclass(frozen=True)
class Filters:
    models: list[str] = field(default_factory=list)
    datasets: list[str] = field(default_factory=list)
    domains: list[str] = field(default_factory=list)
    split: str = q.MAIN_SPLIT
    # the analysis threshold the analyst moved, per dataset judged on a continuous score
    thresholds: dict[str, float] = field(default_factory=dict)

    def kwargs(self) -> dict:
        return {"models": self.models, "datasets": self.datasets, "domains": self.domains,
                "split": self.split, "thresholds": self.thresholds}

    def params(self) -> dict[str, list[str] | str]:
        out = {k: v for k, v in self.kwargs().items() if v and v != q.MAIN_SPLIT and k != "thresholds"}
        if self.thresholds:
            out[THRESHOLD] = threshold_params(self.thresholds)
        return out


def threshold_params(thresholds: dict[str, float]) -> list[str]:
    """The URL values of moved thresholds: `aci_bench:4.2`, sorted by dataset."""
    return [f"{d}:{v:g}" for d, v in sorted(thresholds.items())]


def sidebar_filters() -> Filters:
    """The shared filters in the sidebar; empty means "all"."""
    opts = load(q.filter_options)
    with st.sidebar:
        nav = st.container()
        st.caption("Filters (shared by every page; empty = all)")
        values, unknown = {}, []
        for key, label in (("models", "Models"), ("datasets", "Datasets"), ("domains", "Domains")):
            unknown += [(key, v) for v in st.query_params.get_all(key) if v not in opts[key]]
            if not opts[key]:
                values[key] = []
                continue
            # invisible characters in a name shown as <U+XXXX> (the URL keeps the name itself)
            values[key] = st.multiselect(label, opts[key], format_func=visible, **seed_list(key, opts[key]))
        splits = [q.MAIN_SPLIT, *opts["splits"], q.ALL_SPLITS]
        if (asked := st.query_params.get("split")) is not None and asked not in splits:
            unknown.append(("splits", asked))
        values["split"] = st.selectbox(
            "Split", splits, format_func=_split_label, **seed_one("split", splits, q.MAIN_SPLIT),
            help="Each run's main split (HELM: the group's main_split) is what the harness's "
                 "headline number uses; a run without one counts every row.")
        values["thresholds"], threshold_warnings = threshold_knobs(values["datasets"])
    for key, value in unknown:
        st.warning(f"The link names {key[:-1]} “{md(value)}”, which this store does not have; "
                   f"it is left out of the filter.", icon=":material/link_off:")
    for warning in threshold_warnings:
        st.warning(warning, icon=":material/link_off:")
    filters = Filters(**values)
    analyst = st.query_params.get("analyst")
    with nav:
        menu({**filters.params(), **({"analyst": [analyst]} if analyst else {})})
    return filters


def _asked_thresholds(rules: dict) -> tuple[dict[str, float], list[str]]:
    """The thresholds the URL asks for that apply, and a warning for each one that does not."""
    import stats

    try:
        asked = stats.headline.parse_thresholds(st.query_params.get_all(THRESHOLD))
    except ValueError as exc:
        return {}, [f"The link's {THRESHOLD} parameter is not one: {md(str(exc))}; it is left out."]
    kept, dropped = stats.headline.usable_thresholds(rules, asked)
    return kept, [f"The link moves an analysis threshold that cannot be moved here — {md(why)}; it is "
                  "left out." for why in dropped]


def _write_thresholds(rules: dict) -> None:
    """A knob was changed: write every moved threshold to the URL (one repeated parameter)."""
    moved = {}
    for dataset, rule in rules.items():
        value = st.session_state.get(f"{THRESHOLD}:{dataset}")
        if value is not None and rule.movable and not math.isclose(value, rule.stored or math.nan, abs_tol=1e-12):
            moved[dataset] = float(value)
    if moved:
        st.query_params[THRESHOLD] = threshold_params(moved)
    elif THRESHOLD in st.query_params:
        del st.query_params[THRESHOLD]


def threshold_knobs(datasets: list[str]) -> tuple[dict[str, float], list[str]]:
    """The analysis threshold of each dataset judged on a continuous score (under the dataset
    filter), as number inputs in the sidebar, seeded from and written to the URL: a prediction
    scoring below the line is a failure. Moving it re-judges nothing stored and re-ingests
    nothing: pages count failures under the line shown here. Returns the moved thresholds and
    the warnings about those the link asks for that cannot apply."""
    import stats

    rules = load(stats.dataset_rules)
    moved, warnings = _asked_thresholds(rules)
    shown = {d: r for d, r in rules.items() if r.movable and (not datasets or d in datasets)}
    if not shown:
        return moved, warnings
    with st.expander("Analysis threshold", expanded=bool(moved), icon=":material/tune:"):
        st.caption("Which predictions count as failures on a continuous score (ErrorMap: below 0.7 of "
                   "the metric's range). Moving it re-judges the pages, not the store; the harness's "
                   "own number does not change.")
        for dataset, rule in shown.items():
            key = f"{THRESHOLD}:{dataset}"
            line = moved.get(dataset, rule.stored if rule.stored is not None else rule.line(0.7))
            # a line given at ingest outside the scale still shows (at the scale's end)
            st.session_state[key] = min(max(line, rule.low), rule.high)
            decimals = fmt.score_decimals(rule.low, rule.high) or 2
            st.number_input(
                f"{md(dataset)}: fail {'above' if rule.lower_is_better else 'below'} ({md(rule.metric)}, "
                f"{fmt.span(rule.low, rule.high)})",
                min_value=float(rule.low), max_value=float(rule.high), step=10.0 ** -max(decimals - 1, 0),
                format=f"%.{decimals}f", key=key, on_change=_write_thresholds, args=(rules,),
                help=f"0.5, 0.7 and 0.9 of the range: {fmt.number(rule.line(0.5))}, "
                     f"{fmt.number(rule.line(0.7))}, {fmt.number(rule.line(0.9))}; the logs were judged "
                     f"at {fmt.number(rule.stored)}.")
    return moved, warnings


def _split_label(split: str) -> str:
    return {q.MAIN_SPLIT: "main split of each run", q.ALL_SPLITS: "all splits"}.get(split, visible(split))


def analyst_picker(filters: Filters) -> str | None:
    """The analyst whose labels to show: default the one with the most analyses."""
    found = load(q.analysts, **filters.kwargs())
    if found.is_empty():
        return None
    names = found["analyst"].to_list()
    counts = dict(zip(names, found["analysed"].to_list()))
    asked = st.query_params.get("analyst")
    if asked is not None and asked not in names:
        st.warning(f"The link names analyst “{md(asked)}”, who has no analyses here; showing "
                   f"{md(names[0])}.", icon=":material/link_off:")
    with st.sidebar:
        return st.selectbox("Analyst", names, format_func=lambda a: f"{visible(a)} ({counts[a]} analyses)",
                            **seed_one("analyst", names, names[0]))
