"""lm-eval logs written by the tests: a task's samples file and the results file, as lm-eval
writes them (the samples' and results' names stamped with `STAMP`)."""

from __future__ import annotations

import json
from pathlib import Path

# lm-eval's results file as lm_eval/evaluator.py and evaluator_utils.py write it: `results` per
# task (a group's own row above its " - task" rows, which newer versions also put under `groups`),
# `group_subtasks`, `configs`, `n-samples` {original, effective} (effective: after --limit)
STAMP = "2025-03-04T05-06-07.000001"


def lmeval_sample(doc_id: int, passed: bool, metric: str, flt: str = "none") -> dict:
    return {"doc_id": doc_id, "doc": {"question": f"Question {doc_id}?", "answer": "#### 42"}, "target": "#### 42",
            "arguments": {"gen_args_0": {"arg_0": f"Question: Question {doc_id}?\nAnswer:", "arg_1": {"until": ["\n"]}}},
            "resps": [["42" if passed else "41"]], "filtered_resps": ["42" if passed else "41"], "filter": flt,
            "metrics": [metric], "doc_hash": "d", "prompt_hash": "p", "target_hash": "t", metric: float(passed)}


def lmeval_task(folder: Path, task: str, passes: list[bool], metric: str, flt: str = "none") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    rows = [lmeval_sample(n, ok, metric, flt) for n, ok in enumerate(passes)]
    (folder / f"samples_{task}_{STAMP}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def lmeval_results(folder: Path, results: dict, n_samples: dict, *, groups: dict | None = None,
                   group_subtasks: dict | None = None, limit: float | None = None) -> None:
    metric_list = [{"metric": m, "aggregation": "mean", "higher_is_better": True} for m in ("acc", "exact_match")]
    data = {"results": results, **({"groups": groups} if groups else {}),
            "group_subtasks": group_subtasks or {t: [] for t in results},
            "configs": {t: {"task": t, "test_split": "test", "num_fewshot": 0, "metric_list": metric_list}
                        for t in n_samples},
            "n-shot": {t: 0 for t in n_samples}, "higher_is_better": {t: {"acc": True, "exact_match": True} for t in n_samples},
            "n-samples": n_samples, "config": {"model": "hf", "model_args": "pretrained=org/model", "limit": limit},
            "model_name": "org/model"}
    (folder / f"results_{STAMP}.json").write_text(json.dumps(data))
