"""Issue 34, item 6: a table of one's own loads from the app as it does from the CLI. A common id
column (`id`, `sample_id`, `question_id`) is taken as the instance id and the summary says which;
a table whose columns are named otherwise stops with the fields it lacks, and the load panel
offers its columns to pick (the CLI's --map FIELD=COLUMN), the model's name and the score's
scale, then loads it. AppTest here; the real browser in tests/ui/test_browser_first_hour.py."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from conftest import q
from load_panel import finished_jobs, load

from core.errors import SettingsNeeded
from ingest import ingest_paths
from ingest.options import ReadOptions


def write_csv(path: Path, rows: list[dict]) -> Path:
    with path.open("w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


@pytest.mark.parametrize("column", ["id", "sample_id", "question_id"])
def test_a_common_id_column_is_the_instance_id_and_the_summary_says_so(tmp_path, column):
    path = write_csv(tmp_path / "preds.csv", [{column: f"q{i}", "model": "m", "output": "a", "correct": i % 2 == 0}
                                              for i in range(5)])
    summary = ingest_paths([path], db=tmp_path / "s.duckdb")
    assert summary.predictions == 5 and summary.failures == 2
    assert summary.remarks == [f"{path}: instance id from column `{column}`"]
    assert summary.line().endswith(f"; {path}: instance id from column `{column}`")
    assert q(tmp_path / "s.duckdb", "SELECT instance_id FROM outcomes ORDER BY 1") == [(f"q{i}",) for i in range(5)]


def test_an_instance_id_column_or_a_mapped_one_wins_over_id(tmp_path):
    rows = [{"id": f"row{i}", "instance_id": f"q{i}", "qid": f"x{i}", "model": "m", "output": "a", "correct": True}
            for i in range(3)]
    path = write_csv(tmp_path / "preds.csv", rows)
    summary = ingest_paths([path], db=tmp_path / "a.duckdb")
    assert summary.remarks == []
    assert q(tmp_path / "a.duckdb", "SELECT instance_id FROM outcomes ORDER BY 1") == [("q0",), ("q1",), ("q2",)]
    mapped = ingest_paths([path], db=tmp_path / "b.duckdb", options=ReadOptions(column_map={"instance_id": "qid"}))
    assert mapped.remarks == []
    assert q(tmp_path / "b.duckdb", "SELECT instance_id FROM outcomes ORDER BY 1") == [("x0",), ("x1",), ("x2",)]


def test_several_runs_from_one_file_say_the_id_column_once(tmp_path):
    path = write_csv(tmp_path / "preds.csv", [{"sample_id": f"q{i}", "model": m, "output": "a", "correct": True}
                                              for m in ("m1", "m2") for i in range(2)])
    summary = ingest_paths([path], db=tmp_path / "s.duckdb")
    assert summary.runs == 2 and summary.remarks == [f"{path}: instance id from column `sample_id`"]


def test_a_table_without_the_columns_asks_for_each_field_it_lacks(tmp_path):
    path = write_csv(tmp_path / "rated.csv", [{"item": "1", "response": "a", "rating": "4"}])
    with pytest.raises(SettingsNeeded) as err:
        ingest_paths([path], db=tmp_path / "s.duckdb")
    assert err.value.message == (
        f"{path}: no column for instance_id, output, model, score or correct (columns: item, rating, response); "
        "map one with --map FIELD=COLUMN or pass --model NAME")
    assert [(a.flag, a.key, a.typed) for a in err.value.asks] == [
        ("--map", f, f"--map {f}=COLUMN") for f in ("instance_id", "output", "model", "score", "correct")]
    assert not (tmp_path / "s.duckdb").exists()


RATED = [{"item": f"n{i}", "response": f"answer {i}", "gold": "ok", "rating": r}
         for i, r in enumerate([1, 2, 3, 4, 5, 5, 4])]


def test_the_load_panel_offers_the_columns_then_loads_with_them(data_root):
    write_csv(data_root / "rated.csv", RATED)
    at = load("rated.csv")
    finished_jobs(expect_failure=True)
    at.run()
    assert not at.exception
    boxes = {s.label: s for s in at.selectbox if s.key and "-map-" in s.key}
    assert list(boxes) == ["Question id (instance_id)", "Model output (output)", "Model (model)",
                           "Score (a number) (score)", "Verdict (true/false) (correct)",
                           "Reference answer — optional (reference)", "Input (the question) — optional (input)"]
    assert boxes["Question id (instance_id)"].options == ["item", "response", "gold", "rating"]
    again = next(b for b in at.button if b.label == "Load again with these columns")
    # a field left empty is said on the page, and nothing starts
    boxes["Question id (instance_id)"].set_value("item")
    again.click()
    at.run()
    assert any("Pick a column for: Model output, Model (a column, or a name), Score or Verdict"
               in w.value.replace("\\", "") for w in at.warning)
    boxes = {s.label: s for s in at.selectbox if s.key and "-map-" in s.key}
    boxes["Model output (output)"].set_value("response")
    boxes["Score (a number) (score)"].set_value("rating")
    boxes["Reference answer — optional (reference)"].set_value("gold")
    next(t for t in at.text_input if t.label.startswith("…or one model name")).input("my/model")
    next(n for n in at.number_input if n.label == "Lowest score possible (--scale)").set_value(1.0)
    next(n for n in at.number_input if n.label == "Highest score possible").set_value(5.0)
    next(b for b in at.button if b.label == "Load again with these columns").click()
    at.run()
    finished_jobs(expect_failure=False)
    db = data_root.parent / "store.duckdb"
    # 0.7 of the way up 1–5: 3.8; ratings 1, 2, 3 fail
    assert q(db, "SELECT DISTINCT model, dataset, metric_min, metric_max, pass_threshold FROM runs") == [
        ("my/model", "rated", 1.0, 5.0, 3.8)]
    assert q(db, "SELECT count(*), count(*) FILTER (WHERE NOT is_correct) FROM outcomes") == [(7, 3)]
    assert q(db, "SELECT refs FROM instances WHERE instance_id = 'n0'")[0][0] is not None
    at.run()
    assert not at.exception and not at.error
    assert any("rated.csv with instance_id=item output=response score=rating reference=gold my/model 1:5 — done"
               in s.value.replace("\\", "") for s in at.success)
