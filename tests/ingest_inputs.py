"""Small inputs the ingest tests build: a JSONL file, predictions of one model, and a minimal HELM
run folder in HELM's own layout."""

from __future__ import annotations

import json
from pathlib import Path


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def preds(model: str, n: int, start: int = 0) -> list[dict]:
    return [{"model": model, "instance_id": f"q{i}", "output": f"answer {i}", "correct": i % 2 == 0}
            for i in range(start, start + n)]


def helm_run(folder: Path, name: str = "mmlu:subject=anatomy,model=m_a", model: str = "m/a", n: int = 4,
             instances: list | None = None, predictions: list | None = None, text_words: int = 3) -> Path:
    """A minimal HELM run folder in HELM's own layout (run_spec, scenario, display files)."""
    folder.mkdir(parents=True)
    (folder / "run_spec.json").write_text(json.dumps({
        "name": name, "adapter_spec": {"model": model, "method": "generation"},
        "scenario_spec": {"args": {"subject": "anatomy"}}, "groups": ["mmlu"]}))
    (folder / "scenario.json").write_text(json.dumps({"name": "mmlu"}))
    if instances is None:
        instances = [{"id": f"id{i}", "split": "test", "input": {"text": f"question {i}"},
                      "references": [{"output": {"text": f"gold {i}"}, "tags": ["correct"]}]} for i in range(n)]
    if predictions is None:
        predictions = [{"instance_id": f"id{i}", "train_trial_index": 0,
                        "predicted_text": " ".join(["word"] * text_words) + f" {i}",
                        "stats": {"exact_match": float(i % 2)}} for i in range(n)]
    (folder / "instances.json").write_text(json.dumps(instances))
    (folder / "display_predictions.json").write_text(json.dumps(predictions))
    return folder
