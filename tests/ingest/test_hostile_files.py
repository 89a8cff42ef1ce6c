"""Issue 19, item 7 (and issue 15, item 6): inputs that never end or never parse. Every fault is
real — a FIFO made with mkfifo, /dev/zero itself, a JSON line nested 100,000 deep, a 5,000-digit
integer, a lone surrogate, a symbolic link out of a data root — and every answer is exit 2, a
message naming the file and the problem, no traceback, nothing written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, q, run_module
from ingest import IngestError
from ingest.jsonio import LONE_SURROGATE, TOO_DEEP, parse_json

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="FIFOs and /dev/zero as on Linux")

ROWS = [{"model": "m", "instance_id": f"q{i}", "output": f"answer {i}", "correct": i % 2 == 0} for i in range(4)]
DEEP = "[" * 100_000 + "]" * 100_000


def jsonl(path: Path, rows=ROWS) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def ingest(*args, env_extra=None, timeout=60):
    env = {**os.environ, **(env_extra or {})}
    return run_module("ingest", *args, env=env, timeout=timeout)


def refused(result, *needles):
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    for needle in needles:
        assert needle in result.stderr, (needle, result.stderr)


# ---------------------------------------------------------------- the guarded parse


@pytest.mark.parametrize("raw, message", [
    (DEEP, f"x.json: {TOO_DEEP}"),
    ('{"score": ' + "7" * 5000 + "}", "x.json: a number too long to read (Exceeds the limit (4300 digits) for "
                                      "integer string conversion: value has 5000 digits)"),
    ('{"output": "broken \\ud800 text"}', f"x.json:1:20: {LONE_SURROGATE}"),
    # orjson stops at the NaN first; the standard parser then reads the surrogate
    ('{"score": NaN, "output": "\\udfff"}', f"x.json: {LONE_SURROGATE}"),
    ('{"a": [1, 2', "x.json:1:12: truncated JSON: Expecting ',' delimiter"),
    ('{"a": 1,, "b": 2}', "x.json:1:9: invalid JSON: Expecting property name enclosed in double quotes"),
])
def test_the_guarded_parse_names_every_problem(raw, message):
    with pytest.raises(IngestError) as caught:
        parse_json(raw.encode(), "x.json")
    assert caught.value.message == message


def test_the_guarded_parse_reads_what_json_writers_emit():
    value = parse_json(b'{"s": NaN, "big": 18446744073709551617, "pair": "\\ud83d\\ude00"}', "x.json")
    assert value["big"] == 18446744073709551617 and value["pair"] == "\U0001F600" and value["s"] != value["s"]


def test_the_guarded_parse_has_a_size_cap():
    with pytest.raises(IngestError, match=r"x.json: 11 bytes of JSON, over the 10 bytes limit \(raise FAULTLINE_MAX_FILE_BYTES"):
        parse_json(b'{"a": 1234}', "x.json", limit=10)


@pytest.mark.parametrize("name, body, needle", [
    # format detection reads the first line of a .jsonl file; the custom reader then reads it all
    ("deep.jsonl", DEEP + "\n", f"deep.jsonl:1: {TOO_DEEP}"),
    ("long_number.jsonl", json.dumps(ROWS[0])[:-1] + ', "score": ' + "9" * 5000 + "}\n",
     "long_number.jsonl:1: a number too long to read"),
    ("surrogate.jsonl", json.dumps(ROWS[0]) + "\n" + '{"model": "m", "instance_id": "q9", "output": "\\ud800"}\n',
     f"surrogate.jsonl:2:48: {LONE_SURROGATE}"),
    # no reader claims a .json file: its description parses it, deep or not
    ("deep.json", DEEP, f"deep.json: not a log format Faultline recognises: it is a .json file that starts like "
                        f"JSON but does not parse ({TOO_DEEP})"),
    ("samples_task_2024-01-01T00-00-00.jsonl", '{"doc_id": 0, "x": ' + "[" * 5000 + "]" * 5000 + "}\n",
     f"samples_task_2024-01-01T00-00-00.jsonl:1: {TOO_DEEP}"),
])
def test_hostile_json_is_a_named_error_in_detection_and_in_the_readers(tmp_path, name, body, needle):
    path = tmp_path / name
    path.write_text(body)
    refused(ingest(path, "--db", tmp_path / "x.duckdb"), needle)
    assert not (tmp_path / "x.duckdb").exists()


def test_a_valid_json_file_of_the_wrong_shape_is_described_as_such(tmp_path):
    path = tmp_path / "scores.json"
    path.write_text(json.dumps([{"question": "q1", "answer": "a"}, {"question": "q2", "answer": "b"}]))
    refused(ingest(path, "--db", tmp_path / "x.duckdb"),
            "it is a .json JSON array of 2 objects (the first with keys answer, question)")


# ---------------------------------------------------------------- files that are not files


def helm_run(folder: Path, model: str = "m/a") -> Path:
    """A minimal HELM run in HELM's own layout: four instances, two of them answered right."""
    folder.mkdir(parents=True)
    (folder / "run_spec.json").write_text(json.dumps({
        "name": f"mmlu:subject=anatomy,model={model.replace('/', '_')}", "adapter_spec": {"model": model},
        "scenario_spec": {"args": {"subject": "anatomy"}}, "groups": ["mmlu"]}))
    (folder / "scenario.json").write_text(json.dumps({"name": "mmlu"}))
    (folder / "instances.json").write_text(json.dumps([
        {"id": f"id{i}", "split": "test", "input": {"text": f"question {i}"},
         "references": [{"output": {"text": f"gold {i}"}, "tags": ["correct"]}]} for i in range(4)]))
    (folder / "display_predictions.json").write_text(json.dumps([
        {"instance_id": f"id{i}", "train_trial_index": 0, "predicted_text": f"answer {i}",
         "stats": {"exact_match": float(i % 2)}} for i in range(4)]))
    return folder


def test_a_fifo_in_a_folder_is_skipped_and_named_not_waited_on(tmp_path):
    logs = tmp_path / "logs"
    helm_run(logs / "runs" / "run_a")
    # names that the lm-eval and Inspect readers claim: the unfixed folder search opened the
    # first and blocked for ever (the timeout fails the test), and read the second as a log
    fifos = [logs / "samples_mmlu_2024-01-01T00-00-00.jsonl", logs / "x.eval"]
    for fifo in fifos:
        os.mkfifo(fifo)
    db = tmp_path / "x.duckdb"
    result = ingest(logs, "--db", db, timeout=60)
    assert result.returncode == 0, result.stderr
    assert f"  not a regular file (2): {fifos[0]}, {fifos[1]}" in result.stdout, result.stdout
    assert q(db, "SELECT count(*) FROM predictions") == [(4,)]


@pytest.mark.parametrize("fmt", ["auto", "jsonl", "csv", "helm", "inspect", "lm-eval"])
def test_a_fifo_named_directly_is_refused_whatever_the_format(tmp_path, fmt):
    pipe = tmp_path / "pipe.jsonl"
    os.mkfifo(pipe)
    refused(ingest(pipe, "--format", fmt, "--db", tmp_path / "x.duckdb", timeout=60),
            f"error: {pipe}: a FIFO (named pipe), not a regular file; refused")
    assert not (tmp_path / "x.duckdb").exists()


@pytest.mark.parametrize("fmt", ["auto", "jsonl", "csv", "openai-evals", "eee"])
def test_dev_zero_is_refused_before_a_byte_is_read(tmp_path, fmt):
    # the unfixed readers read /dev/zero until memory ran out: cap this child's memory so that
    # a regression fails here instead of taking the machine down
    result = subprocess.run(
        ["prlimit", "--as=3000000000", sys.executable, "-m", "ingest", "/dev/zero", "--format", fmt,
         "--db", str(tmp_path / "x.duckdb")], cwd=ROOT, capture_output=True, text=True, timeout=60)
    refused(result, "error: /dev/zero: a character device, not a regular file; refused")


def test_a_file_over_the_size_cap_is_refused_before_it_is_read(tmp_path):
    path = jsonl(tmp_path / "preds.jsonl", ROWS * 50)
    size = path.stat().st_size
    for fmt in ("auto", "jsonl"):
        refused(ingest(path, "--format", fmt, "--db", tmp_path / "x.duckdb", env_extra={"FAULTLINE_MAX_FILE_BYTES": "1K"}),
                f"{path}: {size / 1024:.1f} KiB, over the 1.0 KiB limit on one file (raise FAULTLINE_MAX_FILE_BYTES to read it)")
    helm = tmp_path / "suite" / "run"
    helm.mkdir(parents=True)
    (helm / "run_spec.json").write_text(json.dumps({"name": "x", "adapter_spec": {"model": "m"}, "pad": "x" * 2048}))
    refused(ingest(tmp_path / "suite", "--db", tmp_path / "x.duckdb", env_extra={"FAULTLINE_MAX_FILE_BYTES": "1K"}),
            f"{helm / 'run_spec.json'}: 2.1 KiB, over the 1.0 KiB limit on one file")


def test_a_csv_field_is_read_up_to_the_documented_text_limit(tmp_path):
    path = tmp_path / "long.csv"
    long_output = "x" * 200_000  # over csv's own 131,072-character default
    path.write_text(f"model,instance_id,output,correct\nm,q1,{long_output},0\nm,q2,short,1\n")
    db = tmp_path / "x.duckdb"
    result = ingest(path, "--db", db)
    assert result.returncode == 0, result.stderr
    assert q(db, "SELECT instance_id, length(output_text) FROM predictions ORDER BY 1") == [("q1", 200_000), ("q2", 5)]
    refused(ingest(path, "--db", tmp_path / "y.duckdb", env_extra={"FAULTLINE_MAX_TEXT_BYTES": "100K"}),
            f"{path}:2: a field longer than 100.0 KiB, the limit on one text (raise FAULTLINE_MAX_TEXT_BYTES to read it)")


# ---------------------------------------------------------------- data roots hold through links


@pytest.fixture
def rooted(tmp_path):
    """A data root holding a HELM run, a link to an outside folder of runs and a link to an
    outside predictions file."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    helm_run(root / "runs" / "inside", model="m/inside")
    helm_run(outside / "runs" / "secret", model="m/secret")
    jsonl(outside / "secret.jsonl")
    (root / "linked_folder").symlink_to(outside, target_is_directory=True)
    (root / "linked_file.jsonl").symlink_to(outside / "secret.jsonl")
    return root, outside


def test_only_under_reads_nothing_a_link_leads_to_outside_the_roots(rooted, tmp_path):
    root, outside = rooted
    db = tmp_path / "x.duckdb"
    result = ingest(root, "--only-under", root, "--db", db)
    assert result.returncode == 0, result.stderr
    assert q(db, "SELECT DISTINCT model FROM runs") == [("m/inside",)]
    assert (f"  outside the data roots (2): {root / 'linked_file.jsonl'}, {root / 'linked_folder'}"
            in result.stdout), result.stdout
    refused(ingest(root / "linked_file.jsonl", "--only-under", root, "--db", db),
            f"{root / 'linked_file.jsonl'}: resolves to {outside / 'secret.jsonl'}, outside the folders this load "
            f"may read ({root}); refused")
    # without the flag (the command line) links are followed as before
    result = ingest(root, "--db", tmp_path / "all.duckdb")
    assert result.returncode == 0, result.stderr
    assert q(tmp_path / "all.duckdb", "SELECT DISTINCT model FROM runs ORDER BY 1") == [("m/inside",), ("m/secret",)]


def test_a_link_inside_a_helm_run_to_an_outside_file_is_refused(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    run = helm_run(root / "suite" / "run")
    outside.mkdir()
    (run / "instances.json").rename(outside / "instances.json")
    (run / "instances.json").symlink_to(outside / "instances.json")
    refused(ingest(root, "--only-under", root, "--db", tmp_path / "x.duckdb"),
            f"{run / 'instances.json'}: resolves to {outside / 'instances.json'}, outside the folders")


def test_config_and_taxonomy_files_go_through_the_same_guards(tmp_path):
    preds = jsonl(tmp_path / "preds.jsonl")
    pipe = tmp_path / "config.yaml"
    os.mkfifo(pipe)
    refused(ingest(preds, "--config", pipe, "--db", tmp_path / "x.duckdb", timeout=60),
            f"{pipe}: a FIFO (named pipe), not a regular file; refused")
    deep = tmp_path / "taxonomy.json"
    deep.write_text(DEEP)
    result = run_module("taxonomy", "classify", "--taxonomy", deep, input="a title\n", timeout=120)
    refused(result, f"error: {deep}: {TOO_DEEP}")
