"""Refuse at the door (issue 27): control characters in names, wrong-typed fields, archive
entries too deep or twice over are refused with the file and line (or entry), exit 2, no
traceback; what still reaches a page (a store built elsewhere, a damaged file) is said, not
shown as a traceback or a server path; and the smaller items: a failed upload leaves nothing,
readers refuse a store a newer Faultline wrote."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import duckdb
import pytest

from tests.conftest import run_module
from tests.seed_store import seed

ROOT = Path(__file__).resolve().parents[2]


# ------------------------------------------------------------------ names


def test_a_nul_byte_in_a_model_name_is_refused_with_its_line(tmp_path):
    log = tmp_path / "preds.jsonl"
    log.write_text("\n".join(json.dumps(r) for r in [
        {"model": "m1", "instance_id": "q1", "output": "a", "correct": True},
        {"model": "m1", "instance_id": "q2", "output": "b", "correct": False},
        {"model": "evil\u0000model", "instance_id": "q1", "output": "c", "correct": True},
    ]) + "\n")
    db = tmp_path / "s.duckdb"
    r = run_module("ingest", log, "--db", db)
    assert r.returncode == 2
    assert r.stderr == (f"error: {log}:3: column 'model': 'evil\\x00model' holds a control character (NUL at "
                        "position 5); names must be printable text\n")
    assert not db.exists()


@pytest.mark.parametrize("name, what", [("ds\x1b[31m", "U+001B (a control character)"),
                                        ("ds\u202egnp.exe", "U+202E (RIGHT-TO-LEFT OVERRIDE)")])
def test_control_characters_in_a_dataset_name_are_refused(tmp_path, name, what):
    log = tmp_path / "preds.csv"
    log.write_text(f"model,instance_id,output,correct,dataset\nm1,q1,a,true,{name}\n", encoding="utf-8")
    r = run_module("ingest", log, "--db", tmp_path / "s.duckdb")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.startswith(f"error: {log}:2: column 'dataset': ")
    assert f"holds a control character ({what} at position 3)" in r.stderr


def test_a_nul_byte_in_a_helm_model_name_is_refused_naming_the_run(tmp_path):
    """A reader whose names come from a JSON document (HELM's run_spec.json): the run is named."""
    from tests.helm_gen import Case, Run, write_run

    suite = tmp_path / "runs" / "v1"
    # an escape byte (a NUL cannot be in the run's folder name, which HELM makes from the model)
    run_dir = write_run(suite, Run("mmlu", "acme/m\x1bx", ["mmlu"], [
        Case("id1", "q1", "A", {"exact_match": 1.0}), Case("id2", "q2", "B", {"exact_match": 0.0})]))
    r = run_module("ingest", suite, "--db", tmp_path / "s.duckdb")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr == (f"error: {run_dir.resolve()}: model 'acme/m\\x1bx' holds a control character (U+001B "
                        "(a control character) at position 7); names must be printable text\n")


def test_a_store_with_a_nul_byte_in_a_model_name_still_draws_every_page(tmp_path, monkeypatch):
    """A store built elsewhere (seeded directly, as ingest now refuses it): the taxonomy page's
    table of categories by model once hung for good on such a column name (a panic in the
    renderer); every page now finishes, the name shown escaped."""
    from streamlit.testing.v1 import AppTest

    db = tmp_path / "s.duckdb"
    rows = []
    for i in range(6):
        rows.append({"model": "evil\x00model", "dataset": "ds", "instance_id": f"q{i}", "is_correct": i % 2 == 0,
                     **({"title": "wrong step", "category": "Reasoning Error"} if i % 2 else {})})
        rows.append({"model": "plain", "dataset": "ds", "instance_id": f"q{i}", "is_correct": i % 3 == 0,
                     **({"title": "bad sum", "category": "Calculation Error"} if i % 3 else {})})
    seed(db, rows)
    monkeypatch.setenv("FAULTLINE_DB", str(db))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.run()
    for page in ["taxonomy.py", "signatures.py", "compare.py", "slices.py", "instances.py", "data.py"]:
        at.switch_page(f"pages/{page}")
        at.run(timeout=60)
        assert not at.exception, page
    at.switch_page("pages/taxonomy.py")
    at.run()
    columns = [c for d in at.dataframe for c in d.value.columns]
    assert "evil\\x00model" in columns


# ------------------------------------------------------------------ wrong-typed fields


def _lmeval(tmp_path: Path, row: dict) -> Path:
    folder = tmp_path / "lm"
    folder.mkdir(exist_ok=True)
    path = folder / "samples_arc_easy_2025-01-01T00-00-00.jsonl"
    good = {"doc_id": 0, "doc": {"question": "q"}, "target": "a", "arguments": [["q", "a"]], "resps": [["a"]],
            "filtered_resps": ["a"], "filter": "none", "metrics": ["acc"], "acc": 1.0}
    path.write_text(json.dumps(good) + "\n" + json.dumps({**good, "doc_id": 1, **row}) + "\n")
    return path


@pytest.mark.parametrize("row, message", [
    ({"doc_id": {"x": 1}}, "doc_id is an object (\"{'x': 1}\"); lm-eval writes an integer or a string there"),
    ({"filter": ["none"]}, "filter is an array (\"['none']\"); lm-eval writes a string there"),
    ({"resps": "a"}, "resps is a string ('a'); lm-eval writes an array there"),
    ({"doc": "text"}, "doc is a string ('text'); lm-eval writes an object there"),
    ({"acc": {"v": 1}}, "acc is an object (\"{'v': 1}\"), not a score"),
])
def test_an_lmeval_sample_with_wrong_typed_fields_is_refused_with_its_line(tmp_path, row, message):
    path = _lmeval(tmp_path, row)
    r = run_module("ingest", path, "--db", tmp_path / "s.duckdb")
    assert r.returncode == 2, r.stdout
    assert r.stderr.startswith(f"error: {path}:2: {message}"), r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "s.duckdb").exists()


def test_an_lmeval_metric_of_text_is_refused_once_for_its_metric_with_an_example(tmp_path):
    """Text is a value of the right JSON type that is no number: the verdict rule refuses the
    judged metric once, naming the file, the metric and an example (never a score of 0)."""
    path = _lmeval(tmp_path, {"acc": "yes"})
    r = run_module("ingest", path, "--db", tmp_path / "s.duckdb")
    assert r.returncode == 2, r.stdout
    assert r.stderr.startswith("error: no verdicts from scores that are not numbers (Faultline never takes them as 0):\n"
                               f"  arc_easy: acc ({path}): 1 of 2 values are text Faultline cannot read as a number, "
                               'e.g. "yes".'), r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "s.duckdb").exists()


@pytest.mark.parametrize("field, value, expected", [
    ("evaluation_results", "none", "evaluation_results is a string, where the Every Eval Ever schema has an array"),
    ("model_info", ["m"], "model_info is an array, where the Every Eval Ever schema has an object"),
    ("evaluation_results", ["x"], "evaluation_results[0] is a string, where the schema has an object"),
])
def test_an_eee_aggregate_with_wrong_typed_fields_is_refused_with_its_line(tmp_path, field, value, expected):
    path = tmp_path / "agg.json"
    data = {"schema_version": "0.2.1", "evaluation_id": "x/y", "model_info": {"name": "m"},
            "evaluation_results": [], field: value}
    path.write_text(json.dumps(data, indent=2))
    line = next(n for n, text in enumerate(path.read_text().splitlines(), 1) if f'"{field}"' in text)
    r = run_module("ingest", path, "--db", tmp_path / "s.duckdb")
    assert r.returncode == 2
    assert r.stderr.startswith(f"error: {path}:{line}: {expected}"), r.stderr


# ------------------------------------------------------------------ archives and uploads


def _zip(entries: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for name, data in entries.items():
            z.writestr(name, data)
    return out.getvalue()


def test_an_archive_entry_2000_folders_deep_is_refused_naming_it(tmp_path):
    from ui.uploads import MAX_DEPTH, UploadRefused, save_uploads

    deep = "/".join(["a"] * 2000) + "/preds.jsonl"
    with pytest.raises(UploadRefused) as err:
        save_uploads([("logs.zip", _zip({deep: b"{}\n"}))], tmp_path / "uploads")
    assert err.value.message == f"logs.zip: entry {deep[:80]!r}… is 2,001 folders deep, more than {MAX_DEPTH}; refused"
    assert not (tmp_path / "uploads").exists() or not any((tmp_path / "uploads").iterdir())


@pytest.mark.parametrize("entries, message", [
    ({"logs/a.jsonl": b"1", "logs/A.jsonl": b"2"}, "logs.zip: entry 'logs/A.jsonl' is in the archive twice (as 'logs/a.jsonl' too); refused"),
    ({"logs/a": b"1", "logs/a/b.jsonl": b"2"}, "logs.zip: entry 'logs/a' is both a file and a folder of other entries; refused"),
])
def test_an_archive_whose_entries_clash_names_the_entry(tmp_path, entries, message):
    from ui.uploads import UploadRefused, save_uploads

    with pytest.raises(UploadRefused) as err:
        save_uploads([("logs.zip", _zip(entries))], tmp_path / "uploads")
    assert err.value.message == message


def test_a_failed_uploads_files_are_removed(tmp_path):
    """The load of an upload fails (a log Faultline cannot read): nothing of it stays in uploads/."""
    import time

    from ui import jobs
    from ui.uploads import save_uploads

    root = tmp_path / "uploads"
    db = tmp_path / "s.duckdb"
    started = []
    try:
        # a verdict no rule reads (a missing column would be asked for, and the files kept for "Load again")
        written = save_uploads([("bad.jsonl", b'{"model": "m", "instance_id": 1, "output": "x", "correct": "maybe"}\n')],
                               root)
        folder = root / written[0].relative_to(root).parts[0]
        assert folder.exists()
        started.append(jobs.start("load bad.jsonl", ["ingest", str(written[0])], db, discard_on_failure=(folder,)))
        assert started[-1].proc.wait(timeout=120) == 2
        deadline = time.monotonic() + 10
        while folder.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not folder.exists()
        # a load that succeeds keeps its files
        good = save_uploads([("good.jsonl", b'{"model": "m", "instance_id": "q1", "output": "x", "correct": true}\n')],
                            root)
        kept = root / good[0].relative_to(root).parts[0]
        started.append(jobs.start("load good.jsonl", ["ingest", str(good[0])], db, discard_on_failure=(kept,)))
        assert started[-1].proc.wait(timeout=120) == 0
        time.sleep(0.5)
        assert kept.exists()
        # a load that stops only for a setting the page asks for keeps its files for "Load again"…
        rows = "".join(json.dumps({"model": "m", "dataset": "rated", "instance_id": str(i), "output": "x",
                                   "score": s}) + "\n" for i, s in enumerate([1, 2, 3]))
        asks = save_uploads([("rated.jsonl", rows.encode())], root)
        waiting = root / asks[0].relative_to(root).parts[0]
        started.append(jobs.start("load rated.jsonl", ["ingest", str(asks[0])], db, discard_on_failure=(waiting,)))
        assert started[-1].proc.wait(timeout=120) == 2
        assert "--scale rated=LOW:HIGH" in started[-1].problem()
        time.sleep(0.5)
        assert waiting.exists()
        # …and a retry that then fails for another reason (read as the wrong format) removes them
        again = started[-1]
        started.append(jobs.start("again", [*again.args, "--format", "helm"], db, discard_on_failure=again.discard))
        assert started[-1].proc.wait(timeout=120) == 2
        deadline = time.monotonic() + 10
        while waiting.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not waiting.exists(), started[-1].problem()
    finally:
        for job in started:  # the registry is the process's: leave it as other tests expect it
            jobs._registry().remove(job)


# ------------------------------------------------------------------ what reaches a page anyway


def test_a_damaged_store_is_a_message_on_every_page_without_a_server_path(tmp_path, monkeypatch):
    from remote_kit import damaged_copy
    from streamlit.testing.v1 import AppTest

    db = tmp_path / "secret-folder" / "s.duckdb"
    db.parent.mkdir()
    seed(db, [{"model": m, "dataset": "ds", "instance_id": f"q{i}", "is_correct": i % 3 == 0, "output": "x" * 200}
              for m in ("a", "b") for i in range(3000)])
    db.write_bytes(damaged_copy(db.read_bytes()))
    monkeypatch.setenv("FAULTLINE_DB", str(db))
    monkeypatch.setenv("FAULTLINE_READ_ONLY", "1")
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.run()
    shown = []
    for page in [None, "instances.py", "compare.py", "data.py"]:
        if page:
            at.switch_page(f"pages/{page}")
            at.run()
        assert not at.exception, page
        text = " ".join(e.value for e in at.error)
        shown.append(text)
        assert "secret-folder" not in text and str(tmp_path) not in text, page
    assert any("the store could not be read" in t and "Corrupt database file" in t for t in shown), shown


def test_readers_refuse_a_store_a_newer_faultline_wrote(tmp_path):
    db = tmp_path / "s.duckdb"
    seed(db, [{"model": "m", "dataset": "ds", "instance_id": "q1", "is_correct": True}])
    con = duckdb.connect(str(db))
    con.execute("INSERT INTO schema_migrations VALUES (999, '999_from_the_future', now())")
    con.close()
    for args in (["stats", "accuracy", "--db", db], ["stats", "report", "--db", db, "--out", tmp_path / "r.html"],
                 ["stats", "compare", "m", "m", "--db", db]):
        r = run_module(*args)
        assert r.returncode == 2, (args, r.stdout)
        assert r.stderr == (f"error: {db} has migrations this Faultline does not know (999_from_the_future): "
                            "a newer Faultline wrote it; upgrade Faultline\n"), args
    assert not (tmp_path / "r.html").exists()
