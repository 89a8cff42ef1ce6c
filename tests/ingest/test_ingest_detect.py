"""Recognising a log by its content, and the message when nothing recognises it."""

from __future__ import annotations

import json

import pytest

from conftest import run_module
from ingest import FORMATS, IngestError, ingest_paths
from ingest.registry import SOURCES, choose


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_every_reader_is_a_format_choice():
    assert FORMATS == ("auto", "helm", "lm-eval", "inspect", "eee", "openai-evals", "promptfoo", "swe-agent", "openhands",
                       "tau-bench", "terminal-bench", "atif", "who-when", "messages", "jsonl", "csv", "parquet", "xlsx")


def test_unrecognised_file_names_it_and_every_format_tried(tmp_path):
    odd = tmp_path / "results.json"
    odd.write_text(json.dumps({"accuracy": 0.5, "model": "m"}))
    with pytest.raises(IngestError) as err:
        choose(odd)
    message = err.value.message
    assert message.startswith(f"{odd}: not a log format Faultline recognises: it is a .json file whose first line is a JSON object with keys accuracy, model. Tried helm: ")
    for reader in SOURCES:
        assert f"{reader.name}: {reader.expects}" in message
    assert message.endswith("Pass --format to force one.")


@pytest.mark.parametrize(
    "rows, name",
    [
        ([{"doc_id": 0, "doc": {"q": "1+1"}, "target": "2", "resps": [["2"]], "filtered_resps": ["2"]}],
         "looks like lm-evaluation-harness samples whose file name is not samples_<task>_<datetime>.jsonl"),
        ([{"run_id": "r", "event_id": 0, "sample_id": "s.1", "type": "sampling", "data": {"prompt": "q", "sampled": "a"}}],
         "looks like OpenAI evals events without the spec line"),
        ([{"provider": {"id": "openai:gpt-5"}, "testIdx": 0, "gradingResult": {"pass": True}, "success": True}],
         "looks like promptfoo results, one per line"),
        ([{"messages": [{"role": "user", "content": "hi"}]}], "looks like a chat dataset (messages), not model predictions"),
    ],
    ids=["lm-eval-renamed", "oaieval-no-spec", "promptfoo-jsonl", "chat-dataset"],
)
def test_known_foreign_jsonl_is_named_not_sent_to_map(tmp_path, rows, name):
    path = _write(tmp_path / "mine.jsonl", rows)
    db = tmp_path / "store.duckdb"
    with pytest.raises(IngestError) as err:
        ingest_paths([path], db=db)
    assert err.value.message.startswith(f"{path}: {name}")
    assert "--map" not in err.value.message
    assert not db.exists()


def test_own_predictions_still_go_to_the_jsonl_reader(tmp_path):
    path = _write(tmp_path / "preds.jsonl", [{"model": "m", "instance_id": "1", "output": "a", "correct": True}])
    assert [r.name for r in choose(path)] == ["jsonl"]
    # and a file of the user's own columns, unmapped, is still pointed at --map
    other = _write(tmp_path / "other.jsonl", [{"id": "1", "completion": "a"}])
    with pytest.raises(IngestError, match="map one with --map FIELD=COLUMN"):
        ingest_paths([other], db=tmp_path / "s.duckdb")


def test_detection_ignores_the_file_name(tmp_path):
    spec = {"spec": {"completion_fns": ["m"], "eval_name": "e.dev.v0", "base_eval": "e", "split": "dev", "run_id": "r1"}}
    events = [
        {"run_id": "r1", "event_id": 0, "sample_id": "e.dev.1", "type": "sampling", "created_by": "", "created_at": "",
         "data": {"prompt": [{"role": "user", "content": "2+2?"}], "sampled": "4"}},
        {"run_id": "r1", "event_id": 1, "sample_id": "e.dev.1", "type": "match", "created_by": "", "created_at": "",
         "data": {"correct": True, "expected": "4", "picked": "4"}},
        {"final_report": {"accuracy": 1.0}},
    ]
    log = _write(tmp_path / "log.txt", [spec, *events])
    assert [r.name for r in choose(log)] == ["openai-evals"]
    summary = ingest_paths([log], db=tmp_path / "s.duckdb")
    assert (summary.runs, summary.predictions, summary.failures) == (1, 1, 0)


def test_forced_format_that_does_not_fit_is_a_clear_error(tmp_path):
    path = _write(tmp_path / "preds.jsonl", [{"model": "m", "instance_id": "1", "output": "a", "correct": True}])
    for fmt, message in [
        ("openai-evals", r"preds.jsonl:1: neither a spec, an event nor a final_report line \(keys: correct, instance_id, model, output\)"),
        ("eee", "preds.jsonl:1: schema_version: Field required"),
        ("promptfoo", "results: expected dict, found NoneType"),
    ]:
        with pytest.raises(IngestError, match=message) as err:
            ingest_paths([path], db=tmp_path / f"{fmt}.duckdb", fmt=fmt)
        assert str(path) in err.value.message


def test_pretty_printed_json_is_described_by_its_keys(tmp_path):
    odd = tmp_path / "config.json"
    odd.write_text(json.dumps({"name": "x", "models": []}, indent=2))
    with pytest.raises(IngestError, match=r"it is a \.json JSON object with keys models, name\. Tried helm"):
        choose(odd)


def test_cli_unrecognised_file_exits_2(tmp_path):
    odd = tmp_path / "notes.md"
    odd.write_text("# notes\n")
    db = tmp_path / "s.duckdb"
    r = run_module("ingest", odd, "--db", db)
    assert r.returncode == 2
    assert r.stderr.startswith(f"error: {odd}: not a log format Faultline recognises: it is a .md file that is not JSON (starts '# notes\\n')")
    assert "Traceback" not in r.stderr and not db.exists()
