"""Custom JSONL/CSV predictions: default columns, --map, thresholds, bad rows."""

from __future__ import annotations

import json

import pytest

from conftest import q
from ingest import IngestError, PassConfig, ReadOptions, ingest_paths


ROWS = [
    {"model": "m1", "instance_id": "q1", "input": "2+2?", "output": "4", "reference": "4", "correct": True, "dataset": "arith", "domain": "add"},
    {"model": "m1", "instance_id": "q2", "input": "3*3?", "output": "6", "reference": "9", "correct": False, "dataset": "arith", "domain": "mul"},
    {"model": "m2", "instance_id": "q1", "input": "2+2?", "output": "5", "reference": "4", "correct": "no", "dataset": "arith", "domain": "add"},
    {"model": "m2", "instance_id": "q2", "input": "3*3?", "output": "9", "reference": "9", "correct": 1, "dataset": "arith", "domain": "mul"},
]


def test_jsonl_default_columns(tmp_path, tmp_db):
    f = tmp_path / "preds.jsonl"
    f.write_text("\n".join(json.dumps(r) for r in ROWS) + "\n")
    s = ingest_paths([f], db=tmp_db)
    assert (s.runs, s.predictions, s.failures) == (4, 4, 2)
    rows = q(tmp_db, "SELECT model, dataset, domain, instance_id, is_correct, output_text, source_format FROM outcomes ORDER BY model, instance_id")
    assert rows == [
        ("m1", "arith", "add", "q1", True, "4", "jsonl"),
        ("m1", "arith", "mul", "q2", False, "6", "jsonl"),
        ("m2", "arith", "add", "q1", False, "5", "jsonl"),
        ("m2", "arith", "mul", "q2", True, "9", "jsonl"),
    ]
    refs = json.loads(q(tmp_db, "SELECT refs FROM instances WHERE instance_id = 'q2' LIMIT 1")[0][0])
    assert refs == [{"text": "9", "correct": True}]
    # idempotent
    ingest_paths([f], db=tmp_db)
    assert q(tmp_db, "SELECT count(*) FROM outcomes") == [(4,)]


def test_csv_with_mapped_columns_and_threshold(tmp_path, tmp_db):
    f = tmp_path / "runs.csv"
    f.write_text(
        "system,qid,prompt,completion,gold,f1\n"
        "a,1,Who?,Alice,Alice,1.0\n"
        "a,2,Where?,Paris France,Paris,0.66\n"
        "a,3,When?,never,1999,0.0\n"
    )
    options = ReadOptions(
        dataset="qa",
        column_map={"model": "system", "instance_id": "qid", "input": "prompt", "output": "completion", "reference": "gold", "score": "f1"},
        pass_config=PassConfig.build(["0.5"]),
    )
    s = ingest_paths([f], db=tmp_db, options=options)
    assert (s.runs, s.predictions, s.failures) == (1, 3, 1)
    assert q(tmp_db, "SELECT instance_id, score, is_correct FROM outcomes ORDER BY 1") == [
        ("1", 1.0, True),
        ("2", 0.66, True),
        ("3", 0.0, False),
    ]
    assert q(tmp_db, "SELECT dataset, main_metric, pass_threshold FROM runs") == [("qa", "score", 0.5)]


def test_default_threshold_is_07_of_scale(tmp_path, tmp_db):
    f = tmp_path / "judge.jsonl"
    f.write_text("\n".join(json.dumps({"model": "m", "instance_id": i, "output": "x", "score": s}) for i, s in enumerate([5, 4, 3.8, 3.5, 3, 1])))
    # no guessed 0–5: a score column's scale is the user's to give
    with pytest.raises(IngestError, match=r"judge: score .*its scores run 1–5.*--scale judge=LOW:HIGH"):
        ingest_paths([f], db=tmp_db)
    ingest_paths([f], db=tmp_db, options=ReadOptions(pass_config=PassConfig.build(scales=["judge=1:5"])))
    # 1–5 jury scale: pass at 0.7 of the way up, 3.8
    assert [r[0] for r in q(tmp_db, "SELECT is_correct FROM outcomes ORDER BY instance_id")] == [True, True, True, False, False, False]
    assert q(tmp_db, "SELECT dataset FROM runs") == [("judge",)]


@pytest.mark.parametrize(
    "content, message",
    [
        ('{"model": "m", "instance_id": 1, "output": "x", "correct": true}\n{"model": "m", "instance_id": 2, "output": "y", "correct": tru\n', r"bad\.jsonl:2:\d+: invalid JSON"),
        ('{"model": "m", "instance_id": 1, "output": "x", "score": "high"}\n', r"bad\.jsonl:1: column 'score': 'high' is not a number"),
        ('{"model": "m", "instance_id": 1, "output": "x", "correct": "maybe"}\n', r"bad\.jsonl:1: column 'correct': 'maybe' is not true/false"),
        ('{"model": "m", "instance_id": 1, "output": ["x"], "correct": true}\n', r"bad\.jsonl:1: column 'output': expected text"),
        ('{"model": "m", "output": "x", "correct": true}\n', r"bad\.jsonl: no column for instance_id"),
        ('{"model": "m", "instance_id": 1, "output": "x"}\n', r"no column for score or correct"),
        ('[1, 2]\n', r"bad\.jsonl:1: expected a JSON object"),
        ('{"model": "m", "instance_id": 1, "output": "x", "correct": true}\n{"model": "m", "instance_id": 1, "output": "y", "correct": true}\n', r"bad\.jsonl:2: instance '1' of model 'm' already on line 1"),
        ("", r"bad\.jsonl: no predictions"),
    ],
)
def test_bad_jsonl_names_file_and_line_and_writes_nothing(tmp_path, tmp_db, content, message):
    good = tmp_path / "good.jsonl"
    good.write_text(json.dumps({"model": "m", "instance_id": 1, "output": "x", "correct": True}) + "\n")
    ingest_paths([good], db=tmp_db)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(content)
    with pytest.raises(IngestError, match=message):
        ingest_paths([bad], db=tmp_db)
    assert q(tmp_db, "SELECT count(*) FROM outcomes") == [(1,)]


def test_bad_csv_row(tmp_path, tmp_db):
    f = tmp_path / "bad.csv"
    f.write_text("model,instance_id,output,correct\nm,1,x,true\nm,2,y,true,extra\n")
    with pytest.raises(IngestError, match=r"bad\.csv:3: more fields than the header"):
        ingest_paths([f], db=tmp_db)
    assert not tmp_db.exists() or q(tmp_db, "SELECT count(*) FROM runs") == [(0,)]


def test_unknown_map_field(tmp_path, tmp_db):
    f = tmp_path / "p.jsonl"
    f.write_text(json.dumps({"model": "m", "instance_id": 1, "output": "x", "correct": True}) + "\n")
    with pytest.raises(IngestError, match="unknown field"):
        ingest_paths([f], db=tmp_db, options=ReadOptions(column_map={"answer": "output"}))
