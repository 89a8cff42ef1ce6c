"""Issue 23, item 6: a model is a model. Dataset arguments (WMT-14's language pair, MMLU's subject)
are parts of the dataset, never of the model's identity; reruns of a model on a task are trials
of one model, the latest counting; a variant exists only where a setting that changes what the
model was asked differs, named by that setting alone."""

from __future__ import annotations

import json
import zipfile
from datetime import datetime
from pathlib import Path

import duckdb

import stats
import store
from conftest import FIXTURES, q, requires_fixtures, run_module
from helm_gen import Case, Run, write_run
from ingest import ingest_paths
from store import queries

PAIRS = ("cs-en", "de-en", "fr-en", "hi-en", "ru-en")
MODELS = ("org/small", "org/large")


def wmt_suite(root: Path, suite: str = "v1", models=MODELS, shots: int = 1, when: int | None = None,
              bleu=lambda model, pair, i: 0.1 * i) -> Path:
    """A HELM suite of WMT-14 runs as `helm-run` writes them: one run per model and language pair,
    named `wmt_14:language_pair=cs-en,model=...`, whose scenario arguments are the two languages;
    instance ids restart in every run (id0, id1, id2), as HELM's do."""
    folder = root / "benchmark_output" / "runs" / suite
    for model in models:
        for pair in PAIRS:
            source, target = pair.split("-")
            cases = [Case(f"id{i}", f"[{pair}] sentence {i}", f"translation {i}", {"bleu_4": bleu(model, pair, i)},
                          refs=(f"reference {i}",)) for i in range(3)]
            write_run(folder, Run("wmt_14", model, ["wmt_14"], cases, args={"source_language": source,
                                                                              "target_language": target},
                                  name_args={"language_pair": pair}, shots=shots, request_datetime=when,
                                  adapter={"instructions": f"Translate the following sentences from {source} to {target}."}),
                      state=when is not None)
    return folder


def models_of(db) -> list[str]:
    with store.read_connection(db) as con:
        return queries.filter_options(con)["models"]


def test_wmt_language_pairs_are_domains_of_one_model(tmp_path, tmp_db):
    summary = ingest_paths([wmt_suite(tmp_path)], db=tmp_db)
    assert summary.runs == 10 and summary.reruns == []
    assert models_of(tmp_db) == ["org/large", "org/small"]
    assert q(tmp_db, "SELECT DISTINCT dataset, domain, variant, superseded_by FROM runs ORDER BY ALL") == [
        ("wmt_14", pair, None, None) for pair in PAIRS]
    # the language pair qualifies the ids HELM restarts per run; the questions pair across models
    assert q(tmp_db, "SELECT instance_id FROM latest_outcomes WHERE model = 'org/small' AND domain = 'cs-en' "
                     "ORDER BY 1") == [("cs/en/id0",), ("cs/en/id1",), ("cs/en/id2",)]
    with store.read_connection(tmp_db) as con:
        result = stats.compare(con, "org/small", "org/large")
    assert result.n_pairs == 15
    # judged on HELM's headline for WMT-14, BLEU-4
    assert q(tmp_db, "SELECT DISTINCT main_metric, main_metric_source FROM runs") == [("bleu_4", "helm schema table")]


def test_the_same_suite_run_again_is_reruns_and_the_latest_counts(tmp_path, tmp_db):
    old = wmt_suite(tmp_path / "june", "v1", when=1_717_000_000, bleu=lambda m, p, i: 0.0)
    new = wmt_suite(tmp_path / "july", "v1", models=("org/small",), when=1_719_000_000, bleu=lambda m, p, i: 0.9)
    # the newer suite read first: the logs' own times decide, not the order they were read in
    summary = ingest_paths([new, old], db=tmp_db)
    assert models_of(tmp_db) == ["org/large", "org/small"]
    assert [(c.model, c.dataset, c.runs, c.superseded, c.by) for c in summary.reruns] == [
        ("org/small", "wmt_14", 10, 5, "the logs' own times")]
    assert summary.details()[-2:] == [
        "reruns: 5 earlier runs of a model on questions a later run of it answered again are collapsed into the "
        "latest, which counts (the earlier ones stay in the store, runs.superseded_by):",
        "  org/small on wmt_14: 10 runs, 5 collapsed; the latest by the logs' own times",
    ]
    assert ", 5 earlier reruns collapsed (the latest counts) in " in summary.line()
    assert q(tmp_db, "SELECT count(*), count(superseded_by) FROM runs WHERE model = 'org/small'") == [(10, 5)]
    assert q(tmp_db, "SELECT DISTINCT p.score FROM latest_outcomes JOIN predictions p "
                     "USING (run_id, instance_id, train_trial_index) WHERE model = 'org/small'") == [(0.9,)]
    assert q(tmp_db, "SELECT count(*) FROM latest_outcomes WHERE model = 'org/small'") == [(15,)]


def test_another_shot_count_is_a_variant_named_by_it(tmp_path, tmp_db):
    ingest_paths([wmt_suite(tmp_path / "a", "v1", models=("org/small",), shots=1),
                  wmt_suite(tmp_path / "b", "v1", models=("org/small",), shots=5)], db=tmp_db)
    assert models_of(tmp_db) == ["org/small · 1-shot", "org/small · 5-shot"]
    assert q(tmp_db, "SELECT count(superseded_by) FROM runs") == [(0,)]


def inspect_rerun(path: Path, model: str, n: int, values: list[str], *, cot: bool = False) -> Path:
    """The n-th run of `model` on one Inspect task: its own task and run ids, created n hours
    after the first, the same plan."""
    header = {
        "version": 2, "status": "success",
        "eval": {"task": "inspect_evals/arith", "task_id": f"task{model[-1]}{n}", "run_id": f"run{model[-1]}{n}",
                 "model": model, "created": f"2025-04-01T{n:02d}:00:00+00:00",
                 "task_args": {"cot": cot, "subjects": []}, "config": {"epochs": 1}},
        "plan": {"steps": [{"solver": "multiple_choice", "params": {"cot": cot}}]},
        "results": {"total_samples": len(values), "completed_samples": len(values),
                    "scores": [{"name": "choice", "scorer": "choice", "metrics": {"accuracy": {
                        "name": "accuracy", "value": values.count("C") / len(values)}}}]},
    }
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("header.json", json.dumps(header))
        for i, value in enumerate(values):
            archive.writestr(f"samples/{i}_epoch_1.json", json.dumps({
                "id": i, "epoch": 1, "input": f"What is {i} + {i}?", "target": "A",
                "output": {"completion": "A"}, "scores": {"choice": {"value": value}}}))
    return path


def test_forty_inspect_reruns_of_two_models_are_two_models(tmp_path, tmp_db):
    logs = tmp_path / "logs"
    logs.mkdir()
    for model in ("org/m1", "org/m2"):
        for n in range(20):
            # only the last run (n = 19) gets every question right
            values = ["C"] * 5 if n == 19 else ["C", "I", "I", "C", "I"]
            inspect_rerun(logs / f"{model[-2:]}-{n:02d}.eval", model, n, values)
    out = run_module("ingest", logs, "--db", tmp_db, "--strict")
    assert out.returncode == 0, out.stderr
    assert models_of(tmp_db) == ["org/m1", "org/m2"]
    assert q(tmp_db, "SELECT count(*), count(variant), count(superseded_by) FROM runs") == [(40, 0, 38)]
    assert "reruns: 38 earlier runs of a model on questions a later run of it answered again are collapsed" in out.stdout
    assert "  org/m1 on arith: 20 runs, 19 collapsed; the latest by the logs' own times" in out.stdout
    assert ", 38 earlier reruns collapsed (the latest counts) in " in out.stdout.splitlines()[-1]
    # the latest run counts: every question right, for both models
    assert q(tmp_db, "SELECT model, count(*), count(*) FILTER (WHERE is_correct) FROM latest_outcomes "
                     "GROUP BY 1 ORDER BY 1") == [("org/m1", 5, 5), ("org/m2", 5, 5)]
    assert q(tmp_db, "SELECT DISTINCT r.settings->>'run' FROM latest_outcomes JOIN runs r USING (run_id) "
                     "ORDER BY 1") == [("run119",), ("run219",)]
    # a run asked with chain of thought is a variant, named by that setting alone
    inspect_rerun(logs / "m1-cot.eval", "org/m1", 20, ["C", "C", "C", "I", "I"], cot=True)
    ingest_paths([logs / "m1-cot.eval"], db=tmp_db)
    assert models_of(tmp_db) == ["org/m1 · chain of thought", "org/m1 · no chain of thought", "org/m2"]
    assert q(tmp_db, "SELECT count(superseded_by) FROM runs") == [(38,)]


def test_an_older_store_gets_its_models_decided_again(tmp_path, tmp_db):
    logs = tmp_path / "logs"
    logs.mkdir()
    for n in range(3):
        inspect_rerun(logs / f"r{n}.eval", "org/m1", n, ["C", "I"] if n < 2 else ["C", "C"])
    ingest_paths([logs], db=tmp_db)
    # as a Faultline before migration 017 left it: each rerun a "model" named by its ids
    con = duckdb.connect(str(tmp_db))
    con.execute("UPDATE runs SET variant = 'run=' || (settings->>'run')")
    con.execute("ALTER TABLE runs DROP COLUMN superseded_by")
    con.execute("ALTER TABLE runs DROP COLUMN started_at")
    con.execute("ALTER TABLE runs DROP COLUMN harness_factor")
    # (and so before 018, which added the score beside each latest outcome and label)
    con.execute("ALTER TABLE latest_outcomes DROP COLUMN score")
    con.execute("ALTER TABLE latest_labels DROP COLUMN score")
    con.execute("DELETE FROM schema_migrations WHERE name IN ('017_reruns_and_model_identity', '018_scores_in_latest')")
    con.execute("DELETE FROM latest_outcomes")
    con.execute("INSERT INTO latest_outcomes SELECT r.model || ' · ' || r.variant, r.model, r.variant, r.dataset,"
                " r.domain, i.split, true, p.instance_id, i.question_hash, p.run_id, 0, p.is_correct"
                " FROM runs r JOIN predictions p USING (run_id) JOIN instances i USING (run_id, instance_id)")
    con.close()
    assert models_of(tmp_db) == ["org/m1"]  # reading upgrades the store: 017 decides them again
    assert q(tmp_db, "SELECT count(*), count(variant), count(superseded_by), count(started_at) FROM runs") == [
        (3, 0, 2, 0)]
    # the scale each header printed its accuracy on, from the notes the older check wrote
    assert q(tmp_db, "SELECT DISTINCT harness_factor FROM runs") == [(1.0,)]
    # the old rows keep no log time and were ingested together: the last by path counts (r2.eval)
    assert q(tmp_db, "SELECT model, count(*), count(*) FILTER (WHERE is_correct), any_value(run_id = "
                     "(SELECT run_id FROM runs WHERE source_path LIKE '%r2.eval')) FROM latest_outcomes GROUP BY 1") == [
        ("org/m1", 2, 2, True)]
    with store.read_connection(tmp_db) as con:
        assert [(c.runs, c.superseded, c.by) for c in store.runs.collapsed_reruns(con)] == [(3, 2, "path order")]


@requires_fixtures
def test_the_shared_real_logs_keep_their_identities(tmp_db):
    paths = [FIXTURES / d for d in ("helm", "lm-eval", "inspect", "every-eval-ever", "openai-evals", "promptfoo")]
    ingest_paths(paths, db=tmp_db)
    rows = q(tmp_db, "SELECT model, dataset, count(DISTINCT domain), count(*), count(superseded_by) "
                     "FROM runs GROUP BY ALL ORDER BY ALL")
    keys = {(m, d): (domains, n, superseded) for m, d, domains, n, superseded in rows}
    # the MMLU suite: 5 models x 10 subjects, subjects are domains, nothing collapsed
    mmlu = {m: v for (m, d), v in keys.items() if d == "mmlu" and v[1] == 10}
    assert sorted(mmlu) == ["groq/llama3-70b-8192", "groq/llama3-8b-8192", "huggingface/Meta-Llama-3-8B",
                            "together/Llama-3-70b-chat-hf", "together/Llama-3-8b-chat-hf"]
    assert set(mmlu.values()) == {(10, 10, 0)}
    # three Inspect runs of one popularity task by gpt-4o-mini, two by gemma3: reruns, the latest counts
    assert keys[("openai/gpt-4o-mini", "popularity")] == (0, 3, 2)
    assert keys[("ollama/gemma3", "popularity")] == (0, 2, 1)
    # HELM runs and their Every Eval Ever conversions are one model each
    assert keys[("eleutherai/pythia-1b-v0", "hellaswag")] == (0, 2, 1)
    assert keys[("openai/gpt2", "narrative_qa")] == (0, 2, 1)
    # the one real setting that differs: masakhaner at 0 and 5 shots
    assert q(tmp_db, "SELECT model, variant FROM runs WHERE variant IS NOT NULL ORDER BY 2") == [
        ("google/gemma-2b", "0-shot"), ("google/gemma-2b", "5-shot")]
    with store.read_connection(tmp_db) as con:
        models = queries.filter_options(con)["models"]
    assert "google/gemma-2b · 0-shot" in models and not any("run=" in m or "task_id=" in m for m in models)
    # the popularity run that counts is the latest by Inspect's own created time (2025-05-12, 3
    # samples); the earlier scored run still answers the 7 questions the latest did not ask
    assert q(tmp_db, "SELECT r.started_at, r.superseded_by IS NULL, count(*) FROM latest_outcomes o "
                     "JOIN runs r USING (run_id) WHERE o.model = 'openai/gpt-4o-mini' GROUP BY ALL ORDER BY 1") == [
        (datetime(2025, 2, 11, 20, 18, 4), False, 7), (datetime(2025, 5, 13, 0, 28, 13), True, 3)]


def test_analysis_pays_only_for_failures_that_count(tmp_path, tmp_db):
    from store.analysis import failures

    logs = tmp_path / "logs"
    logs.mkdir()
    inspect_rerun(logs / "early.eval", "org/m1", 1, ["I", "I", "I"])
    inspect_rerun(logs / "late.eval", "org/m1", 2, ["C", "I"])  # asks questions 0 and 1 again
    ingest_paths([logs], db=tmp_db)
    with store.read_connection(tmp_db) as con:
        kept = [(f["run_id"] == q(tmp_db, "SELECT run_id FROM runs WHERE superseded_by IS NULL")[0][0], f["instance_id"])
                for f in failures(con)]
    # the late run's failure, and the early run's on the question the late one did not ask
    assert sorted(kept) == [(False, "2"), (True, "1")]


def test_the_data_page_shows_the_collapsed_reruns(tmp_path, tmp_db, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from conftest import ROOT

    logs = tmp_path / "logs"
    logs.mkdir()
    for n in range(3):
        inspect_rerun(logs / f"r{n}.eval", "org/m1", n, ["C", "I"])
    inspect_rerun(logs / "other.eval", "org/m2", 0, ["C", "C"])
    ingest_paths([logs], db=tmp_db)
    monkeypatch.setenv("FAULTLINE_DB", str(tmp_db))
    monkeypatch.delenv("FAULTLINE_READ_ONLY", raising=False)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.switch_page("pages/data.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(i.value.startswith("2 earlier reruns collapsed: runs of a model on questions a later run of it "
                                  "answered again") for i in at.info)
    runs = at.dataframe[0].value
    # the run that counts first, then the earlier ones, latest first
    assert list(runs["rerun"]) == ["latest of 3 reruns: counts", "earlier; counts: r2.eval",
                                   "earlier; counts: r2.eval", "—"]
    assert list(runs["file"]) == ["r2.eval", "r1.eval", "r0.eval", "other.eval"]
    assert list(runs["model"].unique()) == ["org/m1", "org/m2"]
