"""What an agent reads: the six answers of `python -m stats mcp` (mcp_server/server.py), built from
the same functions the CLI and the pages use, each bounded (mcp_server/bounds.py) and carrying the
dashboard link that shows the same view (stats/links.py).

No SQL here: every number comes from store.queries, store.agreement, store.evidence, store.analysis
or the stats functions over them. No name reaches a query unchecked: an unknown model, dataset,
domain, split, analyst or category is an answer that lists the known ones.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, replace
from typing import Callable

import duckdb
import polars as pl

import store
from core.counts import ANALYSED, LABELLED, LOADED_FAILURES, PREDICTIONS, UNDER_THRESHOLD, definitions
from core.numbers import NumberError, shown, whole_number
from stats import fmt
from stats.agents import agent_compare, compare_json
from stats.compare import compare as compare_models
from stats.compare import pick_analyst, verdict
from stats.headline import (
    headline_text,
    is_continuous,
    model_accuracy,
    unequal_questions,
)
from stats.links import base_url, view_url
from stats.signatures import shares, shares_method
from stats.suspects import by_dataset
from store import FaultlineError
from store import agreement as sa
from store import analysis as store_analysis
from store import evidence as store_evidence
from store import queries as q
from store import transcripts as store_transcripts
from taxonomy.catalog import NOT_ERROR_TYPES
from taxonomy.quotes import check_criteria, criteria

from .bounds import (
    DEFAULT_TOKENS,
    SECTIONS,
    TEXT_SCALES,
    Answer,
    Clipper,
    TooLarge,
    error,
    fit,
)

MAX_LIMIT = 500
# how long a text may be in each answer before it is cut (characters)
LIST_TEXT = 300       # lists of questions (compare, failures, suspects)
QUESTION_TEXT = 3000  # one question: its input and each model's output
MAX_REFERENCES, MAX_CHOICES = 10, 26
MAX_TOOLS, TRANSCRIPT_TEXT = 20, 600  # an agent run's summary: tools named, characters read of a step
WHOLE_TEXTS = "the question answer shows up to 3,000 characters of a text, the dashboard link all of it"


@dataclass(frozen=True)
class Settings:
    """What every answer needs besides its arguments: the store, the dashboard's address, the bound."""

    db: str | None = None
    base_url: str = ""
    budget: int = DEFAULT_TOKENS
    # texts are cut at their answer's lengths times this (see `answer`)
    text_scale: float = 1.0

    def clipper(self, limit: int) -> Clipper:
        return Clipper(limit, self.text_scale)

    def link(self, page: str, params: dict) -> str:
        return view_url(self.base_url or base_url(), page, params)


class AgentError(FaultlineError):
    """A request the store cannot answer, with what the agent can do instead (`details`: known
    names, close matches)."""

    def __init__(self, message: str, **details):
        super().__init__(message)
        self.details = details


# --- checking names -------------------------------------------------------------------------

def _close(value: str, known: list[str], n: int = 5) -> list[str]:
    """Known names that contain `value` (any case), else those that look like it."""
    low = value.lower()
    found = [k for k in known if low and low in k.lower()]
    return (found or difflib.get_close_matches(value, known, n=n, cutoff=0.5))[:n]


def unknown(kind: str, value: str, known: list[str], hint: str = "") -> AgentError:
    """The error for a name the store does not have, listing those it has and the look-alikes."""
    message = f"unknown {kind} {value!r}"
    if not known:
        message += f"; there are no {kind}s yet (load logs with `python -m ingest PATH`)"
    if hint:
        message += f"; {hint}"
    return AgentError(message, did_you_mean=_close(value, known), **{f"known_{kind}s": known})


def check_names(con, models=(), datasets=(), domains=(), split: str = q.MAIN_SPLIT) -> None:
    """AgentError naming the known values for the first unknown model, dataset, domain or split."""
    known = q.filter_options(con)
    for kind, asked in (("model", models), ("dataset", datasets), ("domain", domains)):
        for value in asked or ():
            if value not in known[kind + "s"]:
                raise unknown(kind, value, known[kind + "s"])
    splits = [q.MAIN_SPLIT, q.ALL_SPLITS, *known["splits"]]
    if split not in splits:
        raise unknown("split", split, splits, "'main' is each run's main split, 'all' every split")


def _analyst(con, analyst, models=None, datasets=None, domains=None, split=q.MAIN_SPLIT,
             required: bool = True) -> str | None:
    """The analyst asked for (checked) or the one with the most analyses under the filters."""
    if analyst is not None and not q.has_analyst(con, analyst):
        known = q.analysts(con)["analyst"].to_list()
        raise unknown("analyst", analyst, known, "analysts are named by `python -m taxonomy analyze --analyst`")
    chosen = pick_analyst(con, analyst, models, datasets, domains, split)
    if chosen is None and required:
        raise AgentError("no failure here is analysed yet: run `python -m taxonomy analyze --analyst offline` "
                         "(or an LLM analyst) first")
    return chosen


def _offset(cursor: str | None) -> int:
    """The rows a cursor skips: ASCII digits only (`"²".isdigit()` is True, `int("²")` raises;
    `int("٣")` is 3; 5,000 digits raise), read by core.numbers like every number given as text."""
    if cursor in (None, ""):
        return 0
    try:
        return whole_number(cursor, "cursor")
    except NumberError:
        raise AgentError(f"cursor {shown(cursor)} is not one this server gave: pass the page's next_cursor "
                         "(a number of rows to skip), or leave it out for the first page") from None


def _filters(models=None, datasets=None, domains=None, split=q.MAIN_SPLIT, analyst=None) -> dict:
    """The shared filters as the dashboard's URL parameters (docs/dashboard.md)."""
    return {"models": list(models or []), "datasets": list(datasets or []), "domains": list(domains or []),
            "split": None if split == q.MAIN_SPLIT else split, "analyst": analyst}


# --- 1. what is loaded ----------------------------------------------------------------------

def _grouped(rows: list[dict], *keys: str) -> dict[tuple, list[dict]]:
    out: dict[tuple, list[dict]] = {}
    for r in rows:
        out.setdefault(tuple(r[k] for k in keys), []).append(r)
    return dict(sorted(out.items(), key=lambda item: tuple("" if v is None else v for v in item[0])))


def _counts(mine: list[dict]) -> dict:
    return {"outcomes": sum(r["n"] for r in mine), "failed": sum(r["n"] - r["passed"] for r in mine)}


def _outcomes_by(stats: list[dict], *keys: str) -> list[dict]:
    """`q.outcome_stats` rows (per model, dataset, domain and run) summed over the rest: `n` outcomes,
    `passed` under the ingest's verdicts."""
    out: dict[tuple, dict] = {}
    for r in stats:
        row = out.setdefault(tuple(r[k] for k in keys), {**{k: r[k] for k in keys}, "n": 0, "passed": 0})
        row["n"] += r["n"]
        row["passed"] += r["passed"]
    return list(out.values())


def loaded(con, s: Settings, limit: int = 200, cursor: str | None = None) -> Answer:
    """Totals, then models, datasets, domains and analysts with their counts (main split)."""
    offset = _offset(cursor)
    totals = q.inventory(con)
    stats = q.outcome_stats(con).to_dicts()
    per = _outcomes_by(stats, "model", "dataset")
    per_domain = [r for r in _outcomes_by(stats, "model", "dataset", "domain") if r["domain"] is not None]
    domains_of = _grouped(per_domain, "dataset")
    rows: list[dict] = []
    for (model,), mine in _grouped(per, "model").items():
        counts = _counts(mine)
        rows.append({"_section": "models", "model": model, "questions": counts["outcomes"],
                     "failed": counts["failed"], "datasets": {r["dataset"]: r["n"] for r in mine}})
    for (dataset,), mine in _grouped(per, "dataset").items():
        rows.append({"_section": "datasets", "dataset": dataset, "models": len(mine), **_counts(mine),
                     "domains": len({r["domain"] for r in domains_of.get((dataset,), [])})})
    for (dataset, domain), mine in _grouped(per_domain, "dataset", "domain").items():
        rows.append({"_section": "domains", "dataset": dataset, "domain": domain, "models": len(mine),
                     **_counts(mine)})
    for r in q.analysts(con).to_dicts():
        rows.append({"_section": "analysts", "analyst": r["analyst"], "analysed": r["analysed"],
                     "classified": r["classified"], "classifiers": r["classifiers"],
                     "categories": q.category_names(con, r["analyst"])})
    head = {
        "store": {k: totals[k] for k in ("runs", "models", "datasets", "domains", "formats", "predictions",
                                         "failures", "infra_errors")},
        "splits": q.filter_options(con)["splits"],
        "definitions": {
            **{f"store.{k}": v for k, v in definitions(PREDICTIONS, LOADED_FAILURES).items()},
            "questions/outcomes/failed": "scored outcomes in each run's main split, a model's latest per question "
                                         "(outcomes = model x question)",
            **{f"analysts.{k}": v for k, v in definitions(ANALYSED, LABELLED).items()},
            "analysts.categories": "the error types their labels use",
        },
    }
    return Answer(head=head, link=s.link("", {}), rows_key=SECTIONS, rows=rows[offset:offset + limit],
                  total=len(rows), offset=offset, limit=limit, noun="entries")


# --- 2. results per model and dataset ------------------------------------------------------

def result_row(r: dict) -> dict:
    """One row of `python -m stats accuracy --json`, named for what it is: the harness's own number
    in its own metric and scale, and apart, the failures under the analysis threshold (for a 0/1
    metric the same verdicts, so `passed` + `failures` = `n`)."""
    continuous = is_continuous(r)
    return {"model": r["model"], "dataset": r["dataset"], "split": r["split"], "n": r["n"],
            "harness_number": {
                "metric": r["headline_metric"] or r["metric"], "kind": r["headline_kind"], "value": r["headline"],
                "text": headline_text(r), "ci": [r["headline_ci_low"], r["headline_ci_high"]],
                "interval": r["headline_interval"], "scale": [r["scale_min"], r["scale_max"]],
                "over": r["headline_of"], "note": r["headline_note"]},
            "passed": None if continuous else r["correct"],
            "failures": r["failures"], "failure_rate": r["failure_rate"],
            "failure_rate_ci": [r["failure_ci_low"], r["failure_ci_high"]],
            "analysis_threshold": r["analysis_threshold"], "analysis_rule": r["analysis_rule"]}


def results(con, s: Settings, models=None, datasets=None, domains=None, split: str = q.MAIN_SPLIT,
            limit: int = 100, cursor: str | None = None) -> Answer:
    offset = _offset(cursor)
    check_names(con, models, datasets, domains, split)
    acc = model_accuracy(con, models, datasets, domains, by="split", split=split)
    rows = [result_row(r) for r in acc.to_dicts()]
    head = {
        "split": split,
        "definitions": {
            "n": "scored questions (a model's latest outcome on each)",
            "harness_number": "the harness's own headline in its own metric and scale (a pass rate, or a mean "
                              "score such as a 1-5 jury mean or an F1), with its 95% interval and how it was made",
            **definitions(UNDER_THRESHOLD),  # (analysis_rule: the line on a continuous score; never the harness's number)
            "failure_rate_ci": "two-sided 95% Wilson interval",
        },
    }
    warnings = [f"models answered different numbers of questions on {line}: compare them with the "
                "compare tool, which pairs the questions both answered" for line in unequal_questions(acc)]
    if warnings:
        head["warnings"] = warnings
    return Answer(head=head, link=s.link("", _filters(models, datasets, domains, split)), rows_key="results",
                  rows=rows[offset:offset + limit], total=len(rows), offset=offset, limit=limit,
                  noun="model x dataset rows")


# --- 3. compare two models -------------------------------------------------------------------

WHICH = {"only_a_fails": "only A fails", "only_b_fails": "only B fails"}


def _answer_text(clip: Clipper, output, mapped, choices) -> str | None:
    return clip(fmt.chosen(output, mapped, choices) or output)


def compare(con, s: Settings, a: str, b: str, datasets=None, domains=None, analyst: str | None = None,
            split: str = q.MAIN_SPLIT, which: str | None = None, limit: int = 20,
            cursor: str | None = None) -> Answer:
    offset = _offset(cursor)
    check_names(con, [a, b], datasets, domains, split)
    if analyst is not None:
        _analyst(con, analyst)
    c = compare_models(con, a, b, datasets, domains, analyst, split)
    agent_runs = agent_compare(con, c.a, c.b, c.analyst, datasets, domains, split)
    summary = compare_json(c, agent_runs)
    # the page's words for each test's answer, and Δ = B's share − A's with its Newcombe interval
    extra = {r.category: r for r in c.categories}
    for row in summary["categories"]:
        r = extra[row["category"]]
        row.update(finding=r.finding, delta=r.delta, delta_ci=[r.delta_low, r.delta_high],
                   a_only_fail=r.a_only_fail, b_only_fail=r.b_only_fail)
    side = WHICH.get(which) if which else None
    total = {None: c.a_only_fail + c.b_only_fail, "only A fails": c.a_only_fail,
             "only B fails": c.b_only_fail}[side]
    clip = s.clipper(LIST_TEXT)
    found = q.discordant(con, a, b, c.analyst, datasets, domains, limit=min(limit, MAX_LIMIT), split=split,
                         offset=offset, which=side).to_dicts() if total else []
    rows = []
    for r in found:
        row = {"which": r["which"], "dataset": r["dataset"], "domain": r["domain"], "instance_id": r["instance_id"]}
        if r["b_instance_id"] != r["instance_id"]:
            row["b_instance_id"] = r["b_instance_id"]
        row.update(question=clip(r["input_text"]), gold=clip(fmt.gold(r["refs"], r["choices"]) or None),
                   a_answer=_answer_text(clip, r["a_output"], r["a_mapped"], r["choices"]),
                   b_answer=_answer_text(clip, r["b_output"], r["b_mapped"], r["choices"]),
                   category=r["category"], error_title=clip(r["error_title"]),
                   link=s.link("instances", {"instance": f"{r['dataset']}:{r['instance_id']}", "models": [a, b],
                                             "analyst": c.analyst}))
        rows.append(row)
    head = {
        "verdict": verdict(c),
        "comparison": summary,
        "definitions": {
            "pairs": "questions both models answered (paired by id, else by question text)",
            "mcnemar": "a_only_fail = A fails where B passes; p = exact two-sided McNemar; mde = the smallest "
                       "difference in failure rate (a share of the pairs) the test finds with 80% power at "
                       "alpha 0.05 given the observed discordance (null: none can be found); per dataset, q = "
                       "Benjamini-Hochberg over the datasets' tests. Where questions are clustered (a shared "
                       "passage, repeated trials), test = 'cluster-robust paired t' (CR1 sandwich over cluster "
                       "sums, t on clusters - 1 df, every trial weighed) replaces McNemar, p and mde are its, "
                       "and clusters says how many it rests on (null: none, McNemar exact)",
            "categories": "error types only: shares of each model's failures with an error type; p_fisher, "
                          "q_bh (Benjamini-Hochberg; finding significant at q <= 0.05), p_paired (McNemar "
                          "within the type), p_errormap (the ErrorMap paper's check, overstates significance)",
            "not_error_types": "Other, Hard to Analyze, No Model Error: counted apart, never tested",
            "corrected_delta": "B's share minus A's in the shares corrected for the analyst's measured "
                               "misclassification (people's labels; over all failures under the filters), with "
                               "corrected_low/high its 95% interval; null when no people's label measured the "
                               "analyst. A finding is significant only if that interval leaves out 0 as well "
                               "('within the analyst's error' otherwise)",
            "shares": "each model's share of its failures (every failure under the rule) whose true category "
                      "is this one, with share_low/high its 95% interval; shares_method says whether it is "
                      "corrected for the analyst's error or sampling error only",
            **({"agents": "agent runs on the tasks both ran: where the analyst's first decisive error falls "
                          "(early/middle/late third of the run), tools whose results errored (counted, not "
                          "tested), Wilcoxon signed-rank p on the first error's share of the run"}
               if agent_runs else {}),
        },
    }
    return Answer(head=head, link=s.link("compare", {"a": a, "b": b, **_filters(None, datasets, domains, split,
                                                                               c.analyst)}),
                  rows_key="questions_only_one_fails", rows=rows, total=total, offset=offset, limit=limit,
                  noun="questions only one model fails", clipped=clip.report(WHOLE_TEXTS))


# --- 4. failures by error type, with evidence ------------------------------------------------

def _evidence(row: dict, clip: Clipper, cap: int = 4) -> list[dict]:
    """The analyst's criteria that the output missed, each quote checked against the output."""
    checked = check_criteria(criteria(row.get("required_criteria")), row.get("output_text"))
    missed = [c for c in checked if c.get("quality") != "correct" and (c.get("evidence") or c.get("criterion"))]
    return [{"criterion": clip(c.get("criterion"), 200), "quality": c.get("quality"),
             "quote": clip(c.get("evidence"), 200) or None, "quote_in_output": c["evidence_verified"]}
            for c in missed[:cap]]


def failures(con, s: Settings, category: str | None = None, models=None, datasets=None, domains=None,
             analyst: str | None = None, split: str = q.MAIN_SPLIT, limit: int = 10,
             cursor: str | None = None) -> Answer:
    offset = _offset(cursor)
    check_names(con, models, datasets, domains, split)
    analyst = _analyst(con, analyst, models, datasets, domains, split)
    counts = q.category_counts(con, analyst, models, datasets, domains, split=split).to_dicts()
    by_category: dict[str, dict] = {}
    for r in counts:
        entry = by_category.setdefault(r["category"], {"category": r["category"], "failures": 0,
                                                       "error_type": r["category"] not in NOT_ERROR_TYPES,
                                                       "models": {}})
        entry["failures"] += r["count"]
        entry["models"][r["model"]] = r["count"]
    if category is not None and category not in by_category:
        raise unknown("category", category, sorted(by_category),
                      f"categories of {analyst}'s labelled failures under these filters")
    total = by_category[category]["failures"] if category else sum(e["failures"] for e in by_category.values())
    clip = s.clipper(LIST_TEXT)
    rows = []
    for r in store_evidence.failure_page(con, analyst, models, datasets, domains, category, split,
                                         limit=min(limit, MAX_LIMIT), offset=offset):
        row = {"model": r["model"], "dataset": r["dataset"], "domain": r["domain"], "instance_id": r["instance_id"],
               "category": r["category"], "error_title": clip(r["error_title"]),
               "summary": clip(r["error_summary"], 600)}
        if r["no_model_error"]:
            row["not_a_model_error"] = clip(r["no_model_error"])
        row.update(score=r["score"], answer=_answer_text(clip, r["output_text"], r["mapped_output"], r["choices"]),
                   gold=clip(fmt.gold(r["refs"], r["choices"]) or None), evidence=_evidence(r, clip),
                   link=s.link("instances", {"instance": f"{r['dataset']}:{r['instance_id']}",
                                             "models": [r["model"]], "analyst": analyst}))
        rows.append(row)
    ranked = sorted(by_category.values(), key=lambda e: (-e["failures"], e["category"]))
    if category is not None:
        est = shares(con, analyst, models, datasets, domains, split=split)
        by_category[category]["shares"] = [
            {k: r[k] for k in ("model", "share", "share_low", "share_high")}
            for r in est.frame.filter(pl.col("category") == category).to_dicts()]
        method = est.method
    else:  # no shares to show: the sampler need not run for the method's name
        method = shares_method(con, analyst, datasets, domains, split)
    head = {
        "analyst": analyst,
        "category": category,
        "shares_method": method,
        "by_category": [{k: v for k, v in e.items() if k != "models" or e["category"] == category}
                        for e in ranked],
        "definitions": {
            "failures": f"{LABELLED.name} of this analyst ({LABELLED.rule}), ordered by category, model, dataset, "
                        "question",
            "evidence": "the analyst's criteria the answer missed; quote_in_output = the quote occurs verbatim "
                        "in the model's output (false: the analyst paraphrased)",
            "error_type": "false for Other, Hard to Analyze and No Model Error: labels, not error types",
            "shares": "with a category: each model's share of its failures (every failure under the rule) whose "
                      "true category it is, with its 95% interval (shares_method: corrected for the analyst's "
                      "measured misclassification, or sampling error only)",
        },
    }
    link = s.link("instances", {**_filters(models, datasets, domains, split, analyst), "category": category,
                                "outcome": "failed"})
    return Answer(head=head, link=link, rows_key="failures", rows=rows, total=total, offset=offset, limit=limit,
                  noun=f"{category} failures" if category else "labelled failures", clipped=clip.report(WHOLE_TEXTS))


# --- 5. one question across every model -----------------------------------------------------

def _model_row(row: dict, verified: list[dict], choices, clip: Clipper, steps: dict | None = None) -> dict:
    out = {"model": row["model"], "verdict": fmt.outcome(row), "score": row["score"],
           "rule": fmt.row_pass_rule(row),
           "split": row["split"], "answer": _answer_text(clip, row["output_text"], row["mapped_output"], choices)}
    for key in ("verdict_note", "finish_reason"):
        if row.get(key):
            out[key] = clip(row[key], 600)
    notes = [n for n in row.get("judge_notes") or [] if isinstance(n, dict)]
    if notes:
        out["judges"] = [{"judge": n.get("judge"), "criterion": clip(n.get("criterion"), 200), "score": n.get("score"),
                          "explanation": clip(n.get("explanation"), 1000)} for n in notes[:5]]
    if row.get("error_title"):
        checked = check_criteria(criteria(row.get("required_criteria")), row.get("output_text"))
        out["analysis"] = {
            "analyst": row["analyst"], "category": row["category"], "taxonomy_version": row["taxonomy_version"],
            "error_title": clip(row["error_title"]), "summary": clip(row["error_summary"], 1500),
            "criteria": [{"criterion": clip(c.get("criterion"), 300), "present": c.get("present_in_wrong"),
                          "quality": c.get("quality"), "quote": clip(c.get("evidence"), 300) or None,
                          "quote_in_output": c["evidence_verified"], "comment": clip(c.get("comment"), 300)}
                         for c in checked[:10]],
        }
        if row.get("step_index") is not None:  # a transcript's analysis names its first decisive error step
            out["analysis"]["first_error_step"] = {
                "step": row["step_index"], "of": row["n_steps"], "agent": row["step_agent"],
                "quote": clip(row["step_quote"], 300)}
        mine = [v for v in verified if v["run_id"] == row["run_id"]]
        if mine:
            out["analysis"]["verified"] = [{"verifier": v["verifier"], "accepted": v["accepted"],
                                            "reason": clip(v["reason"], 300)} for v in mine]
    elif row["is_correct"] is False:
        out["analysis"] = None
    if row.get("review_action"):
        out["review"] = {"action": row["review_action"], "category": row["review_category"],
                         "note": clip(row["review_note"], 600), "reviewer": row["reviewer"],
                         "at": row["reviewed_at"]}
    if steps is not None:
        out["transcript"] = _steps_summary(steps, clip)
    return out


def _steps_summary(steps: dict, clip: Clipper) -> dict:
    """An agent run's transcript in a few fields (store/transcripts.py question_across_models):
    how many steps, tool calls and tool errors, the tools used, the first step the log marks as an
    error and what it said, and the last step. The steps themselves are on the dashboard link."""
    tools = list(steps["tools"] or [])
    out = {"steps": steps["n_steps"], "tool_calls": steps["n_tool_calls"], "tool_errors": steps["n_tool_errors"],
           "tools": tools[:MAX_TOOLS]}
    if len(tools) > MAX_TOOLS:
        out["tools_left_out"] = len(tools) - MAX_TOOLS
    if steps["first_error_step"] is not None:
        out["first_logged_error"] = {"step": steps["first_error_step"], "error": clip(steps["first_error"], 300)}
    out["last_step"] = {"kind": steps["last_step_kind"], "text": clip(steps["last_step_text"], 600)}
    return out


def question(con, s: Settings, dataset: str, instance_id: str, models=None, analyst: str | None = None,
             limit: int = 20, cursor: str | None = None) -> Answer:
    offset = _offset(cursor)
    check_names(con, models, [dataset])
    analyst = _analyst(con, analyst, models, [dataset], None, q.ALL_SPLITS, required=False)
    detail = q.instance_detail(con, dataset, instance_id, analyst, models)
    if not detail:
        near = q.instance_list(con, None, models, [dataset], text=instance_id, limit=10, split=q.ALL_SPLITS)
        ids = list(dict.fromkeys(near["instance_id"].to_list()))
        if not ids:
            ids = list(dict.fromkeys(q.instance_list(con, None, models, [dataset], limit=10,
                                                     split=q.ALL_SPLITS)["instance_id"].to_list()))
        raise AgentError(f"no outcome for question {instance_id!r} of {dataset}"
                         + (" among these models" if models else "")
                         + "; ids are the store's (HELM's are qualified, e.g. anatomy/id138): the failures "
                           "and compare tools list them",
                         did_you_mean=ids)
    verified = store_analysis.question_verdicts(con, dataset, instance_id, analyst) if analyst else []
    first = detail[0]
    clip = s.clipper(QUESTION_TEXT)
    head = {
        "dataset": first["dataset"], "instance_id": first["instance_id"], "raw_instance_id": first["raw_instance_id"],
        "domain": first["domain"], "analyst": analyst,
        "input": clip(first["input_text"]) if first["input_text"] else clip(_chat_text(first["input_messages"])),
    }
    refs = [r for r in (first["refs"] or []) if isinstance(r, dict)]
    # in the log's order; past MAX_REFERENCES the correct ones are the ones kept
    kept = {id(r) for r in sorted(refs, key=lambda r: not r.get("correct"))[:MAX_REFERENCES]}
    head["references"] = [{"text": clip(r.get("text"), 500), "correct": bool(r.get("correct"))}
                          for r in refs if id(r) in kept]
    if len(refs) > MAX_REFERENCES:
        head["references_left_out"] = len(refs) - MAX_REFERENCES
    if isinstance(first["choices"], dict):
        head["choices"] = {str(k): clip(v, 200) for k, v in list(first["choices"].items())[:MAX_CHOICES]}
        if len(first["choices"]) > MAX_CHOICES:
            head["choices_left_out"] = len(first["choices"]) - MAX_CHOICES
    if first.get("instructions"):
        head["instructions"] = clip(first["instructions"], 1000)
    if first.get("prompt_text"):
        head["prompt"] = clip(first["prompt_text"], 1500)
    # agent runs: each model's transcript summarised, matched on the run its outcome comes from
    steps = {r["run_id"]: r for r in store_transcripts.question_across_models(
        con, dataset, instance_id, chars=TRANSCRIPT_TEXT, run_ids=[r["run_id"] for r in detail]
    ).iter_rows(named=True) if r["n_steps"]}
    rows = [_model_row(r, verified, first["choices"], clip, steps.get(r["run_id"])) for r in detail]
    link = s.link("instances", {"instance": f"{dataset}:{instance_id}", "models": list(models or []),
                                "analyst": analyst})
    return Answer(head=head, link=link, rows_key="models", rows=rows[offset:offset + limit], total=len(rows),
                  offset=offset, limit=limit, noun="models' outcomes",
                  clipped=clip.report("the dashboard link shows every text whole"))


def _chat_text(messages) -> str | None:
    """A chat input as "role: content" lines."""
    if not isinstance(messages, list):
        return None
    return "\n".join(f"{m.get('role', '?')}: {m.get('content', '')}" for m in messages if isinstance(m, dict))


# --- 6. suspect benchmark items -------------------------------------------------------------

def suspects(con, s: Settings, models=None, datasets=None, domains=None, analyst: str | None = None,
             split: str = q.MAIN_SPLIT, limit: int = 30, cursor: str | None = None) -> Answer:
    offset = _offset(cursor)
    check_names(con, models, datasets, domains, split)
    analyst = _analyst(con, analyst, models, datasets, domains, split, required=False)
    items = sa.suspect_items(con, analyst, models, datasets, domains, split)
    clip = s.clipper(LIST_TEXT)
    rows = [{"dataset": r["dataset"], "instance_id": r["instance_id"], "failures": r["failures"],
             "why": clip(r["why"], 600), "shared_answer": clip(r["answer"]), "models": clip(r["models"], 600),
             "link": s.link("instances", {"instance": f"{r['dataset']}:{r['instance_id']}", "analyst": analyst})}
            for r in items.slice(offset, limit).to_dicts()]
    head = {
        "analyst": analyst,
        "suspect_failures": int(items["failures"].sum()) if items.height else 0,
        "by_dataset": by_dataset(items).to_dicts(),
        "definitions": {
            "suspects": "failures the analyst found not to be the model's fault (No Model Error, with its "
                        "reason), and questions every model (two or more) fails with the same answer: check "
                        "the reference and the scoring before reading them as model errors",
        },
    }
    if analyst is None:
        head["note"] = "no analyses yet: only questions every model fails with the same answer are listed"
    link = s.link("taxonomy", _filters(models, datasets, domains, split, analyst))
    return Answer(head=head, link=link, rows_key="suspects", rows=rows, total=items.height, offset=offset,
                  limit=limit, noun="suspect questions", clipped=clip.report(WHOLE_TEXTS))


# --- answering ------------------------------------------------------------------------------

TOOLS: dict[str, Callable[..., Answer]] = {
    "loaded": loaded, "results": results, "compare": compare, "failures": failures, "question": question,
    "suspects": suspects,
}


def answer(tool: str, settings: Settings, **arguments) -> tuple[str, bool]:
    """(JSON text, is_error) for one call: read-only, on a connection held for this call alone.
    An answer whose fixed part and first row do not fit under the bound is built again with its
    texts cut shorter (TEXT_SCALES), then refused with an error saying how to narrow it."""
    budget = settings.budget
    try:
        with store.read_connection(settings.db, upgrade=False) as con:
            for scale in TEXT_SCALES:
                built = TOOLS[tool](con, replace(settings, text_scale=scale), **arguments)
                try:
                    return fit(built, budget), False
                except TooLarge as exc:
                    too_large = exc
        raise too_large
    except AgentError as exc:
        return error(exc.message, budget, **exc.details), True
    except (FaultlineError, TooLarge) as exc:
        return error(getattr(exc, "message", str(exc)), budget), True
    except duckdb.Error as exc:
        return error(f"{store.db_spec(settings.db)}: cannot read the store: {exc}", budget), True
