"""The hand-labelled failure sets of the offline analyst (tests/data/offline_devset*.yaml) and how
its labels are measured against them.

A written case is a whole failure (`record`); a real one names a failure of the shared fixture
logs (`fixture_record` finds it in a store built from them). `label` gives the label the store
would give the offline analysis; `split` is the fixed development / held-out rule recorded in
the files; `measure` counts what docs/analysis.md reports: agreement, κ, and the precision of
specific labels beside the abstention rate (via taxonomy.agreement.specific_figures).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import yaml

from taxonomy import HARD, NO_ERROR, offline
from taxonomy.agreement import specific_figures
from taxonomy.title_classifier import offline_classifier

DATA = Path(__file__).resolve().parent / "data"
# the columns ingest adds beyond a failure's text (left out where a set is measured on text only)
EVIDENCE = ("instructions", "max_tokens", "prompt_text", "judge_notes", "finish_reason", "output_tokens",
            "verdict_note", "output_kind", "metric_max", "lower_is_better", "pass_threshold", "scale_source")


def load(name: str) -> list[dict]:
    return yaml.safe_load((DATA / name).read_text(encoding="utf-8"))


def case_key(ex: dict) -> str:
    """What the split hashes: a written case's id, a real failure's "path|model|id"."""
    return f"{ex['path']}|{ex['model']}|{ex['id']}" if "path" in ex else str(ex["id"])


def split(ex: dict) -> str:
    """The fixed rule recorded in offline_devset_shapes*.yaml: "dev" when the SHA-256 of the
    case's key is even, else "held-out"."""
    return "dev" if int(hashlib.sha256(case_key(ex).encode("utf-8")).hexdigest(), 16) % 2 == 0 else "held-out"


def record(ex: dict) -> dict:
    """A written case as `store.analysis.failures` gives a failure."""
    return {"input_text": ex["input"], "instructions": ex.get("instructions"),
            "refs": [{"text": r, "correct": True} for r in ex["refs"]], "output_text": ex["output"],
            "choices": ex.get("choices"), "mapped_output": ex.get("mapped_output"), "main_metric": ex.get("metric"),
            "judge_notes": ex.get("judge_notes"), "max_tokens": ex.get("max_tokens"),
            "output_tokens": ex.get("output_tokens"), "finish_reason": ex.get("finish_reason"),
            "dataset": ex.get("dataset", ex["task"])}


def fixture_failures(db, paths) -> dict[tuple[str, str, str], dict]:
    """(fixture folder, model, instance id) → the failure as ingest gives it, from a store built
    from those folders."""
    from store import read_connection
    from store.analysis import failures

    with read_connection(db) as con:
        where = dict(con.execute("SELECT run_id, source_path FROM runs").fetchall())
        found: dict[tuple[str, str, str], dict] = {}
        for f in failures(con):
            source = where[f["run_id"]].replace("\\", "/") + "/"
            for p in paths:
                if f"/{p}/" in source:
                    found.setdefault((p, f["model"], f["instance_id"]), f)
    return found


def label(rec: dict) -> str:
    """The label the store gives the offline analysis of `rec` (store.analysis's label rule): No
    Model Error, else the category its detector gave, else (a title in a judge's words) the title
    classifier's."""
    found = offline.analyze(rec)
    if found.no_model_error:
        return NO_ERROR
    return found.category or offline_classifier().predict([found.title])[0]


def steps_of(ex: dict) -> list[dict]:
    """A written transcript case's steps as the store holds them (built by the readers' Transcript)."""
    from ingest.transcript import Transcript

    t = Transcript()
    for n, spec in enumerate(ex["steps"]):
        spec = dict(spec)
        t.add("q1", 0, spec.pop("kind"), where=f"{ex['id']} step {n}", **spec)
    return [{k: v for k, v in row.items() if k not in ("instance_id", "train_trial_index")} for row in t.table().to_pylist()]


def case_label(ex: dict) -> str:
    """The offline analyst's label of a written case: a transcript's category from the transcript
    detectors (Hard to Analyze when no rule is certain), a plain failure's as `label` gives it."""
    if "steps" not in ex:
        return label(record(ex))
    from taxonomy.detectors.transcript import analyze as detect_steps

    found = detect_steps(steps_of(ex), {**record(ex), "source_format": ex.get("source_format")})
    return found.category if found else HARD


def measure(pairs: list[tuple[str, str]]) -> dict:
    """(person, analyst) labels → agreement, κ, specific-label precision and abstention, and the
    No Model Error counts (found among the people's, given to real errors)."""
    from sklearn.metrics import cohen_kappa_score

    people = [p for p, _ in pairs]
    analyst = [a for _, a in pairs]
    not_errors = [a for p, a in pairs if p == NO_ERROR]
    errors = [a for p, a in pairs if p != NO_ERROR]
    return {"n": len(pairs), "agree": sum(p == a for p, a in pairs),
            "kappa": cohen_kappa_score(people, analyst) if len(set(people) | set(analyst)) > 1 else None,
            **specific_figures(people, analyst),
            "nme_found": not_errors.count(NO_ERROR), "nme_total": len(not_errors),
            "nme_false": errors.count(NO_ERROR), "errors_total": len(errors)}
