"""The DEMO logs: written by the project's own generator, small, and analysed offline into a
signature with something to find. Needs nothing outside the repository."""

from __future__ import annotations

import importlib.util
import json

import pytest
from scipy.stats import fisher_exact

from conftest import ROOT, q, run_module
from demo import DEMO_DIR

GENERATOR = DEMO_DIR / "generate.py"


def _generator():
    spec = importlib.util.spec_from_file_location("demo_generate", GENERATOR)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_files_are_exactly_what_the_generator_writes(tmp_path):
    counts = _generator().generate(tmp_path)
    assert counts == {"demo_math": 144, "demo_qa": 144, "demo_summaries": 80, "demo_instructions": 120}
    written = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    committed = sorted(p.relative_to(DEMO_DIR) for p in DEMO_DIR.rglob("*")
                       if p.is_file() and p.suffix in (".json", ".jsonl"))
    assert written == committed and len(written) == 24 * 6 + 2
    assert all((tmp_path / p).read_bytes() == (DEMO_DIR / p).read_bytes() for p in written)
    size = sum((DEMO_DIR / p).stat().st_size for p in committed)
    assert size < 2 * 1024 * 1024


def test_every_demo_file_says_it_is_demo():
    assert "DEMO" in (DEMO_DIR / "README.md").read_text()
    for spec in (DEMO_DIR / "helm").rglob("scenario.json"):
        assert json.loads(spec.read_text())["description"].startswith("DEMO: ")
    models = {json.loads(line)["model"] for f in (DEMO_DIR / "jsonl").glob("*.jsonl")
              for line in f.read_text().splitlines()}
    assert models == {"demo/atlas-70b", "demo/atlas-7b", "demo/borealis-13b", "demo/cirrus-8b"}


def test_demo_store_counts(demo_db):
    assert q(demo_db, "SELECT source_format, count(DISTINCT run_id) FROM outcomes GROUP BY 1 ORDER BY 1") == [
        ("helm", 24), ("jsonl", 20)]
    assert q(demo_db, "SELECT dataset, count(*), count(*) FILTER (WHERE NOT is_correct) FROM outcomes "
                      "GROUP BY 1 ORDER BY 1") == [
        ("demo_instructions", 120, 33), ("demo_math", 144, 50), ("demo_qa", 144, 34),
        ("demo_summaries", 80, 27)]
    assert q(demo_db, "SELECT count(DISTINCT domain), count(DISTINCT model) FROM outcomes") == [(10, 4)]
    # every failure analysed offline and classified
    assert q(demo_db, "SELECT count(*), count(category) FROM failures WHERE analyst = 'offline'") == [(144, 144)]


def test_planted_failures_are_found_in_the_text(demo_db):
    """Each false step and each refusal the generator planted is what the offline analyst finds."""
    profiles = _generator().PROFILES
    planted = {kind: sum(p.get(kind, 0) for ds in profiles.values() for p in ds.values())
               for kind in ("calc", "refusal")}
    found = dict(q(demo_db, "SELECT category, count(*) FROM failures GROUP BY 1"))
    assert found["Calculation Error"] == planted["calc"] == 21
    assert found["Refusal"] == planted["refusal"] == 15
    assert len(found) >= 5


def test_two_models_differ_in_one_category_and_not_another(demo_db):
    proc = run_module("stats", "compare", "demo/atlas-7b", "demo/atlas-70b", "--db", demo_db, "--json",
                      timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    rows = {r["category"]: r for r in out["categories"]}
    calc, other = rows["Calculation Error"], rows["Constraint Violation"]
    # shares are of the failures with an error type (Hard to Analyze is counted apart, untested)
    assert (out["a_total"], out["b_total"]) == (32, 15)
    # atlas-70b's one "No Model Error": a wrong method whose final number happens to be the gold one
    assert {r["category"]: (r["a_count"], r["b_count"]) for r in out["not_error_types"]} == {
        "Hard to Analyze": (13, 6), "No Model Error": (0, 1)}
    assert (calc["a_count"], calc["b_count"]) == (14, 0)
    expected = fisher_exact([[14, out["a_total"] - 14], [0, out["b_total"]]]).pvalue
    assert calc["p_fisher"] == pytest.approx(expected)
    # significant after Benjamini-Hochberg over the six error types; Constraint Violation is not
    assert calc["q_bh"] <= 0.05
    assert (other["a_count"], other["b_count"]) == (12, 11) and other["q_bh"] > 0.05
    assert out["mcnemar"]["a_only_fail"] == 38 and out["mcnemar"]["b_only_fail"] == 15


def test_cli_demo_builds_and_reports(tmp_path):
    db = tmp_path / "cli-demo.duckdb"
    proc = run_module("ingest", "--demo", "--db", db, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("ingested 44 runs, 488 predictions, 144 failures")
    assert "DEMO data" in proc.stdout and f"FAULTLINE_DB={db}" in proc.stdout
    assert q(db, "SELECT count(*) FROM failures") == [(144,)]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".demo-")]  # no temp left
    bad = run_module("ingest", "--demo", str(ROOT / "data" / "demo" / "helm"), "--db", db, timeout=120)
    assert bad.returncode == 2 and "--demo builds the demo store on its own" in bad.stderr
