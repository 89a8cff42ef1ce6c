"""Build small synthetic stores for tests: runs written through the store's run writer (as the
ingest writes them), analyses and classifications inserted with parameterized SQL."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

import store
from core.records import InstanceRecord, ParsedRun, PredictionRecord, Reference, RunRecord
from store.analysis import refresh_labels
from store.runs import replace_runs, stage_run

T0 = datetime(2026, 1, 1)


def seed(db, rows: list[dict], analyst: str = "offline", taxonomy_version: str = "test-v1",
         run_tag: str = "r1", ingested_at: datetime = T0) -> None:
    """Write one run per (model, dataset, domain, settings) in `rows` through the store's own
    run writer (so variants and latest outcomes are maintained as at ingest).

    Each row: model, dataset, instance_id, is_correct, and optionally domain, split (default
    "test"), main_split (of its run), settings (a dict; of its run), source_path (of its run),
    question_hash, output, input, title + category (an analysis by `analyst` with that title,
    classified into that category, stamped from `ingested_at`); and the evidence the readers
    keep: run (extra RunRecord fields of its run: main_metric, pass_threshold, metric_max,
    instructions, ...), choices, refs ([(text, correct)]), mapped_output, score, judge_notes,
    verdict_note, finish_reason, prompt_text.
    """
    runs: dict[tuple, list[dict]] = {}
    for r in rows:
        key = (r["model"], r["dataset"], r.get("domain"), json.dumps(r.get("settings"), sort_keys=True))
        runs.setdefault(key, []).append(r)
    staged = []
    for (model, dataset, domain, settings), items in runs.items():
        run_id = f"{run_tag}:{model}:{dataset}:{domain}" + (f":{settings}" if items[0].get("settings") else "")
        run = RunRecord(
            run_id=run_id, source_format="test", content_hash=run_id, run_name=run_id,
            source_path=items[0].get("source_path", f"/seed/{run_tag}/{run_id}"), model=model,
            dataset=dataset, domain=domain, main_split=items[0].get("main_split"),
            settings=items[0].get("settings"), **items[0].get("run", {}),
        )
        instances = [InstanceRecord(
            instance_id=r["instance_id"], raw_instance_id=r["instance_id"], split=r.get("split", "test"),
            input_text=r.get("input", f"question {r['instance_id']}"),
            refs=[Reference(text=t, correct=c) for t, c in r.get("refs", [("the answer", True)])],
            question_hash=r.get("question_hash"), choices=r.get("choices"), prompt_text=r.get("prompt_text"),
        ) for r in items]
        predictions = [PredictionRecord(
            instance_id=r["instance_id"], output_text=r.get("output", f"{model} says {r['instance_id']}"),
            score=r.get("score", None if r["is_correct"] is None else float(r["is_correct"])),
            is_correct=r["is_correct"], mapped_output=r.get("mapped_output"),
            judge_notes=r.get("judge_notes"), verdict_note=r.get("verdict_note"),
            finish_reason=r.get("finish_reason"),
        ) for r in items]
        staged.append(stage_run(ParsedRun(run=run, instances=instances, predictions=predictions)))
    with store.write_session(db) as con:
        con.execute("BEGIN")
        replace_runs(con, staged)
        con.execute("COMMIT")
        for (model, dataset, domain, settings), items in runs.items():
            run_id = f"{run_tag}:{model}:{dataset}:{domain}" + (f":{settings}" if items[0].get("settings") else "")
            for r in items:
                if r.get("title"):
                    con.execute(
                        "INSERT INTO analyses (run_id, instance_id, train_trial_index, analyst,"
                        " prompt_version, pair_hash, error_title, error_summary, required_criteria,"
                        " created_at) VALUES (?, ?, 0, ?, 'p1', 'h', ?, ?, ?, ?)",
                        [run_id, r["instance_id"], analyst, r["title"], f"summary of {r['title']}",
                         json.dumps(r.get("criteria", [])), ingested_at + timedelta(seconds=1)],
                    )
                    if r.get("category"):
                        con.execute(
                            "INSERT INTO classifications (error_title, taxonomy_version, classifier,"
                            " category, is_fallback, created_at) VALUES (?, ?, ?, ?, false, ?)",
                            [r["title"], taxonomy_version, analyst, r["category"],
                             ingested_at + timedelta(seconds=2)],
                        )
        refresh_labels(con)


def label_failures(db, categories: list[str], analyst: str = "offline",
                   taxonomy_version: str = "test-v1") -> None:
    """Give every failed prediction in a store an analysis and a category, cycling through
    `categories` in (run_id, instance_id) order — a stand-in for the analysis pipeline."""
    with store.write_session(db) as con:
        failed = con.execute(
            "SELECT run_id, instance_id, train_trial_index FROM predictions"
            " WHERE is_correct = false ORDER BY run_id, instance_id, train_trial_index"
        ).fetchall()
        for i, (run_id, instance_id, trial) in enumerate(failed):
            category = categories[i % len(categories)]
            title = f"{category} title {i % 7}"
            con.execute(
                "INSERT INTO analyses (run_id, instance_id, train_trial_index, analyst,"
                " prompt_version, pair_hash, error_title, error_summary, required_criteria,"
                " created_at) VALUES (?, ?, ?, ?, 'p1', 'h', ?, 'seeded summary', '[]', ?)",
                [run_id, instance_id, trial, analyst, title, T0],
            )
        titles = {f"{c} title {i % 7}": c for i, c in
                  ((i, categories[i % len(categories)]) for i in range(len(failed)))}
        for title, category in titles.items():
            con.execute(
                "INSERT INTO classifications (error_title, taxonomy_version, classifier, category,"
                " is_fallback, created_at) VALUES (?, ?, ?, ?, false, ?)",
                [title, taxonomy_version, analyst, category, T0],
            )
        refresh_labels(con)
