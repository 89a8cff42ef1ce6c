"""Real logs with one value swapped for a value of the wrong type, anywhere in the file: every
reader must answer with an IngestError naming the file (or read it), never a traceback."""

from __future__ import annotations

import json
import random
import shutil

import pytest

from conftest import FIXTURES, q, requires_fixtures
from ingest import IngestError, ingest_paths

pytestmark = requires_fixtures

WRONG = [None, 5, "x", [], {}, [1], {"a": 1}, True, 1.5, "attachment://missing"]
SOURCES = [
    FIXTURES / "helm/mmlu-v1/benchmark_output/runs/v1/mmlu:subject=anatomy,method=multiple_choice_joint,model=groq_llama3-8b-8192",
    FIXTURES / "helm/scenario-state-only/narrative_qa-model=openai_gpt2",
    FIXTURES / "helm/safety-v4/xstest:model=openai_gpt-4o-2024-05-13",
    FIXTURES / "lm-eval/pyfade_gsm8k_gemma3_base",
    FIXTURES / "lm-eval/lmeval_pr1974_bias_classification_llama3_8b",
    FIXTURES / "inspect/eee_tests/data_arc_qwen.json",
    FIXTURES / "inspect/inspect_ai_tests/2025-05-12T20-28-13-04-00_popularity.json",
    FIXTURES / "every-eval-ever/schema_0.3.0_reference_demo",
    FIXTURES / "every-eval-ever/schema_0.2.1_helm_converted/mmlu__openai_gpt2__None_samples.jsonl",
    FIXTURES / "openai-evals/zeno/us-tort-law-turbo.jsonl",
    FIXTURES / "promptfoo/sample-export.json",
]


def _swap_one_value(obj, rng: random.Random, depth: int = 0) -> None:
    keys = list(obj) if isinstance(obj, dict) else list(range(len(obj))) if isinstance(obj, list) else []
    if not keys:
        return
    key = rng.choice(keys)
    if rng.random() < 0.3 or depth > 6 or not isinstance(obj[key], (dict, list)) or not obj[key]:
        obj[key] = rng.choice(WRONG)
    else:
        _swap_one_value(obj[key], rng, depth + 1)


@pytest.mark.parametrize("seed", range(8))
def test_wrong_types_anywhere_are_clear_errors(tmp_path, seed):
    rng = random.Random(seed)
    outcomes = {"read": 0, "refused": 0}
    for trial in range(12):
        src = rng.choice(SOURCES)
        work = tmp_path / f"t{trial}"
        target = work / "logs" / src.name
        if src.is_dir():
            shutil.copytree(src, target)
        else:
            target.parent.mkdir(parents=True)
            shutil.copy(src, target)
        files = sorted(p for p in ([target] if target.is_file() else target.iterdir()) if p.suffix in (".json", ".jsonl"))
        for f in files:
            f.chmod(0o644)
        victim = rng.choice(files)
        if victim.name.startswith("samples_") or victim.suffix == ".jsonl":
            lines = victim.read_text().splitlines()
            i = rng.randrange(len(lines))
            row = json.loads(lines[i])
            _swap_one_value(row, rng)
            lines[i] = json.dumps(row)
            victim.write_text("\n".join(lines) + "\n")
        else:
            data = json.loads(victim.read_text())
            _swap_one_value(data, rng)
            victim.write_text(json.dumps(data))
        db = work / "store.duckdb"
        try:
            ingest_paths([target], db=db)
            outcomes["read"] += 1
        except IngestError as exc:
            outcomes["refused"] += 1
            assert str(work) in exc.message
            assert not db.exists() or q(db, "SELECT count(*) FROM runs") == [(0,)]
    assert sum(outcomes.values()) == 12
