"""A large Inspect sample read in one pass (the structure scan placing each event and top-level
value, orjson and ijson's C parser reading them) stores what the token-by-token reading stores,
and a member the one pass cannot read is read token by token with the same steps or the same
error; transcripts are checked column by column against StepRecord; the HELM load forks its
workers on the bytes its records come from; the bench's references read what they claim."""

from __future__ import annotations

import importlib.util
import json
import random
import zipfile
from pathlib import Path

import pytest
from conftest import q
from pydantic import TypeAdapter
from inspect_gen import EXPECTED, STEPS, agent_sample, write_eval

from core.records import StepRecord
from ingest import IngestError, Transcript, ingest_paths
from ingest import load as ingest_load
from ingest.sources import inspect_log
from ingest.sources.helm import SOURCE as HELM
from ingest.sources.helm.parallel import record_bytes
from ingest.sources.inspect_log import stream
from ingest.sources.inspect_log.structure import StructureScan

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT.parent / "shared" / "fixtures"


def _bench():
    spec = importlib.util.spec_from_file_location("bench_ingest", ROOT / "bench" / "ingest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ---------------------------------------------------------------- the structure scan


def _brackets(text: bytes) -> list[tuple[int, int, bool]]:
    """(offset, depth after, opens) of each bracket outside strings, one byte at a time."""
    found, depth, inside, escaped = [], 0, False, False
    for offset, byte in enumerate(text):
        if inside:
            if escaped:
                escaped = False
            elif byte == 0x5C:
                escaped = True
            elif byte == 0x22:
                inside = False
        elif byte == 0x22:
            inside = True
        elif byte in b"[{":
            depth += 1
            found.append((offset, depth, True))
        elif byte in b"]}":
            depth -= 1
            found.append((offset, depth, False))
    return found


def _value(rng: random.Random, depth: int = 0):
    if depth > 4 or rng.random() < 0.4:
        return rng.choice(['a"b', "\\", '\\\\"', "x]{", "", '\\"[', "ünï", "\\\\\\", 1, 2.5, None, True])
    if rng.random() < 0.5:
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {rng.choice(["k", '"q', "\\", "["]): _value(rng, depth + 1) for _ in range(rng.randint(0, 4))}


def test_the_structure_scan_finds_every_bracket_outside_strings_across_any_chunking():
    rng = random.Random(37)
    for _ in range(2000):
        text = json.dumps(_value(rng), ensure_ascii=rng.random() < 0.5).encode()
        cuts = sorted(rng.sample(range(len(text) + 1), min(len(text) + 1, rng.randint(0, 6))))
        scan, found, base = StructureScan(), [], 0
        for start, end in zip([0, *cuts], [*cuts, len(text)]):
            at, depth, opens = scan.brackets(text[start:end])
            found += [(base + int(a), int(d), bool(o)) for a, d, o in zip(at, depth, opens)]
            base += end - start
        assert found == _brackets(text), text


# ---------------------------------------------------------------- one pass against token by token


def _stored(db) -> dict:
    return {"steps": q(db, STEPS), "hash": q(db, "SELECT content_hash FROM runs"),
            "predictions": q(db, "SELECT instance_id, is_correct, score, output_text, annotations FROM predictions"),
            "instances": q(db, "SELECT instance_id, input_text, prompt_text FROM instances")}


def _ingest(log: Path, db: Path, monkeypatch, how: str) -> dict:
    """Store `log` with its members parsed whole, streamed in one pass, or token by token."""
    with monkeypatch.context() as m:
        if how != "whole":
            m.setattr(inspect_log, "STREAM_MEMBER_BYTES", 0)
        if how == "tokens":
            m.setattr(stream._OnePass, "read", lambda self: (_ for _ in ()).throw(stream._Unread()))
        elif how == "one pass":
            m.setattr(stream, "_token_by_token", lambda *a: pytest.fail("the one pass gave up"))
        ingest_paths([log], db=db)
    return _stored(db)


def test_a_streamed_sample_is_read_in_one_pass_as_token_by_token(tmp_path, monkeypatch):
    log = write_eval(tmp_path / "agent.eval", [agent_sample()])
    got = {how: _ingest(log, tmp_path / f"{how}.duckdb", monkeypatch, how) for how in ("whole", "one pass", "tokens")}
    assert got["one pass"] == got["tokens"] == got["whole"]
    assert got["one pass"]["steps"] == EXPECTED


def test_the_bench_transcript_in_one_pass_equals_token_by_token(tmp_path, monkeypatch):
    log = tmp_path / "transcript.eval"
    turns, _ = _bench().generate_transcript(log, 2)
    one = _ingest(log, tmp_path / "one.duckdb", monkeypatch, "one pass")
    assert one == _ingest(log, tmp_path / "tokens.duckdb", monkeypatch, "tokens")
    # per turn an answer, its tool call and the tool's result; the task's system and user messages once
    assert len(one["steps"]) == 3 * turns + 2


def _rewritten(tmp_path: Path, name: str, text: str) -> Path:
    header = {"version": 2, "status": "success", "eval": {"task": "agentic", "model": "openai/gpt-4o", "task_id": "t",
                                                          "run_id": "r"},
              "results": {"scores": [{"name": "match", "metrics": {"accuracy": {"value": 0.0}}}]}}
    path = tmp_path / f"{name}.eval"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("header.json", json.dumps(header))
        archive.writestr("samples/7_epoch_1.json", text)
    return path


def _attachments_first(sample: dict) -> str:
    return json.dumps({"attachments": sample["attachments"], **{k: v for k, v in sample.items() if k != "attachments"}})


def _scalar_event(sample: dict) -> str:
    return json.dumps({**sample, "events": [7, *sample["events"]]})


def _two_attachments(sample: dict) -> str:
    return json.dumps(sample)[:-1] + ', "attachments": {"c": "more"}}'


@pytest.mark.parametrize("layout", [_attachments_first, _scalar_event, _two_attachments])
def test_a_member_the_one_pass_cannot_read_is_read_token_by_token_alike(tmp_path, monkeypatch, layout):
    log = _rewritten(tmp_path, layout.__name__, layout(agent_sample()))
    gave_up = []
    real = stream._token_by_token

    def token_by_token(*args):
        gave_up.append(True)
        return real(*args)

    monkeypatch.setattr(stream, "_token_by_token", token_by_token)
    streamed = _ingest(log, tmp_path / "streamed.duckdb", monkeypatch, "streamed")
    assert gave_up == [True]
    assert streamed == _ingest(log, tmp_path / "tokens.duckdb", monkeypatch, "tokens")
    assert streamed["steps"] == EXPECTED


def test_an_integer_past_64_bits_streamed_reads_as_a_member_parsed_whole(tmp_path, monkeypatch):
    # orjson reads it as a float, as for a member parsed whole; ijson's parser refused it
    log = _rewritten(tmp_path, "long", json.dumps({**agent_sample(), "target": "42", "metadata": {"x": 2**70}}))
    assert _ingest(log, tmp_path / "one.duckdb", monkeypatch, "one pass") == \
        _ingest(log, tmp_path / "whole.duckdb", monkeypatch, "whole")


@pytest.mark.parametrize("cut", [0.3, 0.97])
def test_a_truncated_member_is_refused_with_the_token_parsers_message(tmp_path, monkeypatch, cut):
    text = json.dumps(agent_sample())
    log = _rewritten(tmp_path, "cut", text[: int(len(text) * cut)])
    messages = []
    for how in ("one pass", "tokens"):
        with monkeypatch.context() as m:
            m.setattr(inspect_log, "STREAM_MEMBER_BYTES", 0)
            if how == "tokens":
                m.setattr(stream._OnePass, "read", lambda self: (_ for _ in ()).throw(stream._Unread()))
            with pytest.raises(IngestError) as err:
                ingest_paths([log], db=tmp_path / f"{how}.duckdb")
        messages.append(err.value.message)
    assert messages[0] == messages[1]
    assert "samples/7_epoch_1.json: not valid JSON (" in messages[0]


# ---------------------------------------------------------------- transcripts by column


def test_transcript_columns_hold_what_step_record_declares(tmp_path):
    log = write_eval(tmp_path / "agent.eval", [agent_sample()])
    logs = [log] + [p for p in [FIXTURES / "agents" / "inspect-docent-ctf" / "log.eval"] if p.exists()]
    for path in logs:
        parsed = next(inspect_log.read(path, inspect_log.ReadOptions()))
        rows = parsed.steps.table().to_pylist()
        TypeAdapter(list[StepRecord]).validate_python(rows)
        assert [r["step_index"] for r in rows if (r["instance_id"], r["train_trial_index"]) == (rows[0]["instance_id"], 0)
                ][:3] == [0, 1, 2]


@pytest.mark.parametrize("instance_id, trial, depth", [(7, 0, 0), ("7", "0", 0), ("7", 0, -1), ("7", 0, 1.0)])
def test_a_readers_step_of_the_wrong_type_is_a_reader_bug(instance_id, trial, depth):
    with pytest.raises(ValueError, match="transcript step of"):
        Transcript().add(instance_id, trial, "message", where="x", text="hi", depth=depth)


# ---------------------------------------------------------------- HELM: workers on the record bytes


def test_helm_forks_workers_on_the_bytes_records_come_from(tmp_path, monkeypatch):
    bench = _bench()
    suite = tmp_path / "suite"
    bench.generate_real_layout_suite(suite, n_runs=4, per_run=22, n_models=2)
    runs = sorted(p for p in suite.iterdir() if p.is_dir())
    expected = sum((run / n).stat().st_size for run in runs for n in ("instances.json", "display_predictions.json"))
    assert record_bytes(suite) == expected
    total = sum(f.stat().st_size for f in suite.rglob("*") if f.is_file())
    assert expected * 5 < total  # the request states, prompts and stats are most of a real layout's bytes
    monkeypatch.setattr(ingest_load, "start_method", lambda: "fork")
    pools = []
    monkeypatch.setattr(ingest_load, "worker_pool", lambda *a: pools.append(a) or pytest.fail("forked"))
    monkeypatch.setenv("FAULTLINE_PARALLEL_MIN_BYTES", str(expected + 1))
    summary = ingest_paths([suite], db=tmp_path / "one.duckdb")
    assert (summary.runs, summary.predictions, pools) == (4, 88, [])
    assert HELM.work_bytes is record_bytes


def test_helm_record_bytes_of_runs_without_display_files_are_their_request_states():
    state_only = FIXTURES / "helm" / "scenario-state-only"
    if not state_only.exists():
        pytest.skip(f"{state_only} absent (the shared real logs)")
    runs = sorted(p for p in state_only.iterdir() if (p / "run_spec.json").is_file())
    assert record_bytes(state_only) == sum((run / "scenario_state.json").stat().st_size for run in runs)


# ---------------------------------------------------------------- the bench's references


def test_the_transcript_reference_reads_every_answer_and_tool_result(tmp_path):
    bench = _bench()
    log = tmp_path / "t.eval"
    turns, _ = bench.generate_transcript(log, 1)
    assert bench.reference_transcript(log, tmp_path / "ref.duckdb") == 2 * turns


def test_the_helm_reference_and_faultline_read_the_real_layout_suite_alike(tmp_path):
    bench = _bench()
    suite = tmp_path / "suite"
    bench.generate_real_layout_suite(suite, n_runs=3, per_run=22, n_models=3)
    assert bench.reference_ingest(suite, tmp_path / "ref.duckdb") == 66
    summary = ingest_paths([suite], db=tmp_path / "f.duckdb")
    assert (summary.runs, summary.predictions) == (3, 66)
    # HELM's own mean of exact_match in each generated stats.json agrees with the predictions
    assert q(tmp_path / "f.duckdb", "SELECT DISTINCT harness_agrees FROM runs") == [(True,)]
