"""Issue 11, data and hostile input: every fault injected for real (a truncated file, a zip bomb,
an unreadable folder, kill -9 during parallel parsing), every answer checked against what the
store holds afterwards."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

import duckdb
import pytest

from conftest import ROOT, q, run_module
from child_runs import run_measured, run_unprivileged
from ingest_inputs import helm_run, preds, write_jsonl
from ingest import IngestError, ingest_paths

MiB = 1024**2


# ---------------------------------------------------------------- what a command stored or said


def runs_in(db: Path) -> list[tuple]:
    return q(db, "SELECT source_path, n_predictions FROM runs ORDER BY source_path")


def refused(args, *needles: str) -> str:
    """`python -m ingest ARGS`: exit 2, no traceback, a message holding every needle."""
    result = run_module("ingest", *args)
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    for needle in needles:
        assert needle in result.stderr, (needle, result.stderr)
    return result.stderr


# ---------------------------------------------------------------- 5: one command, all or nothing


def test_one_bad_input_stores_nothing_of_the_command(tmp_path, tmp_db):
    before = write_jsonl(tmp_path / "before.jsonl", preds("m/before", 3))
    ingest_paths([before], db=tmp_db)
    good = write_jsonl(tmp_path / "good.jsonl", preds("m/good", 5))
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(preds("m/bad", 1)[0]) + "\n{not json\n")

    refused([good, bad, "--db", tmp_db], f"{bad}:2:2: invalid JSON")

    assert runs_in(tmp_db) == [(str(before.resolve()), 3)]


def test_several_inputs_commit_together(tmp_path, tmp_db):
    a = write_jsonl(tmp_path / "a.jsonl", preds("m/a", 5))
    b = write_jsonl(tmp_path / "b.jsonl", preds("m/b", 7))
    result = run_module("ingest", a, b, "--db", tmp_db)
    assert result.returncode == 0, result.stderr
    assert "ingested 2 runs, 12 predictions, 5 failures" in result.stdout
    assert runs_in(tmp_db) == [(str(a.resolve()), 5), (str(b.resolve()), 7)]


def test_the_same_file_twice_is_stored_once_and_said(tmp_path, tmp_db):
    a = write_jsonl(tmp_path / "a.jsonl", preds("m/a", 4))
    result = run_module("ingest", a, a, "--db", tmp_db)
    assert result.returncode == 0, result.stderr
    assert f"1 run(s) given more than once ({a.resolve()}), stored once" in result.stdout
    assert q(tmp_db, "SELECT count(*) FROM predictions") == [(4,)]


def test_a_suite_and_a_run_inside_it_store_each_run_once(tmp_path, tmp_db):
    suite = tmp_path / "suite"
    first = helm_run(suite / "run_a", name="mmlu:subject=anatomy,model=m_a", model="m/a")
    helm_run(suite / "run_b", name="mmlu:subject=anatomy,model=m_b", model="m/b")
    result = run_module("ingest", suite, first, "--db", tmp_db)
    assert result.returncode == 0, result.stderr
    assert "ingested 2 runs, 8 predictions, 4 failures" in result.stdout
    assert f"1 run(s) given more than once ({first.resolve()}), stored once" in result.stdout
    assert q(tmp_db, "SELECT model, n_predictions FROM runs ORDER BY model") == [("m/a", 4), ("m/b", 4)]


# ---------------------------------------------------------------- 6: truncated CSV


@pytest.mark.parametrize("cut, line, needle", [
    ('model,instance_id,output,correct\nm,q1,fine,1\nm,q2,"an answer that goes on\n', 3, "quoted field is never closed"),
    ("model,instance_id,output,correct\nm,q1,fine,1\nm,q2,cut her", 3, "1 field(s) fewer than the header has"),
])
def test_truncated_csv_is_refused_with_file_and_line(tmp_path, tmp_db, cut, line, needle):
    path = tmp_path / "preds.csv"
    path.write_text(cut)
    refused([path, "--db", tmp_db], f"{path}:{line}:", needle)
    assert not tmp_db.exists() or q(tmp_db, "SELECT count(*) FROM runs") == [(0,)]


def test_excel_csv_with_bom_reads_its_first_column(tmp_path, tmp_db):
    path = tmp_path / "excel.csv"
    path.write_bytes("\ufeffmodel,instance_id,output,correct\r\nm/x,q1,yes,1\r\nm/x,q2,no,0\r\n".encode("utf-8"))
    summary = ingest_paths([path], db=tmp_db)
    assert (summary.runs, summary.predictions, summary.failures) == (1, 2, 1)
    assert q(tmp_db, "SELECT model, instance_id, is_correct FROM outcomes ORDER BY instance_id") == [
        ("m/x", "q1", True), ("m/x", "q2", False)]


@pytest.mark.parametrize("fmt, body", [
    ("csv", "model,instance_id,output,correct\nm/x,q1,a,1\n"),
    ("jsonl", json.dumps({"model": "m/x", "instance_id": "q1", "output": "a", "correct": True}) + "\n"),
])
def test_format_flag_reads_a_file_without_that_suffix(tmp_path, tmp_db, fmt, body):
    path = tmp_path / "predictions_export"
    path.write_text(body)
    result = run_module("ingest", path, "--format", fmt, "--db", tmp_db)
    assert result.returncode == 0, result.stderr
    assert q(tmp_db, "SELECT source_format, n_predictions FROM runs") == [(fmt, 1)]


# ---------------------------------------------------------------- 7: HELM


def test_unreadable_helm_run_folder_is_an_error(tmp_path, tmp_db):
    suite = tmp_path / "suite"
    helm_run(suite / "run_a", name="mmlu:subject=anatomy,model=m_a", model="m/a")
    locked = helm_run(suite / "run_b", name="mmlu:subject=anatomy,model=m_b", model="m/b")
    locked.chmod(0)
    try:
        result = run_unprivileged("ingest", suite, "--db", tmp_db)
    finally:
        locked.chmod(0o755)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    assert f"{locked}: cannot read this folder: Permission denied" in result.stderr
    assert not tmp_db.exists()


def test_helm_duplicate_instance_id_with_another_question_names_both(tmp_path, tmp_db):
    instances = [{"id": "id0", "split": "test", "input": {"text": "What is 2+2?"}, "references": []},
                 {"id": "id1", "split": "test", "input": {"text": "Capital of France?"}, "references": []},
                 {"id": "id0", "split": "test", "input": {"text": "Who wrote Hamlet?"}, "references": []}]
    run = helm_run(tmp_path / "run", n=2, instances=instances)
    refused([run, "--db", tmp_db], f"{run / 'instances.json'}: instances 0 and 2 share the id 'id0' but ask different questions")
    assert not tmp_db.exists()


def test_helm_repeated_prediction_is_stored_once_and_reported(tmp_path, tmp_db):
    predictions = [{"instance_id": f"id{i}", "train_trial_index": 0, "predicted_text": f"p{i}",
                    "stats": {"exact_match": 1.0}} for i in range(3)]
    run = helm_run(tmp_path / "run", n=3, predictions=[*predictions, dict(predictions[1])])
    result = run_module("ingest", run, "--db", tmp_db)
    assert result.returncode == 0, result.stderr
    assert f"{run}: 1 repeated prediction(s) stored once" in result.stdout
    assert q(tmp_db, "SELECT instance_id, count(*) FROM predictions GROUP BY ALL ORDER BY 1") == [
        ("anatomy/id0", 1), ("anatomy/id1", 1), ("anatomy/id2", 1)]


def test_helm_repeated_prediction_that_disagrees_is_refused(tmp_path, tmp_db):
    predictions = [{"instance_id": f"id{i}", "train_trial_index": 0, "predicted_text": f"p{i}",
                    "stats": {"exact_match": 1.0}} for i in range(3)]
    other = {**predictions[1], "predicted_text": "something else", "stats": {"exact_match": 0.0}}
    run = helm_run(tmp_path / "run", n=3, predictions=[*predictions, other])
    refused([run, "--db", tmp_db], f"{run / 'display_predictions.json'}: predictions 1 and 3 are both instance 'id1' trial 0")
    assert not tmp_db.exists()


def test_two_copies_of_one_helm_run_name_both(tmp_path, tmp_db):
    suite = tmp_path / "suite"
    first = helm_run(suite / "run", name="mmlu:subject=anatomy,model=m_a")
    copy = helm_run(suite / "run (copy)", name="mmlu:subject=anatomy,model=m_a")
    refused([suite, "--db", tmp_db], f"{first.resolve()} and {copy.resolve()} are the same run")
    assert not tmp_db.exists()


# ---------------------------------------------------------------- 9: empty stores


def _zero_bytes(path: Path) -> Path:
    path.write_bytes(b"")
    return path


def _no_tables(path: Path) -> Path:
    duckdb.connect(str(path)).close()  # what an ingest killed right after creating the file leaves
    return path


@pytest.mark.parametrize("make", [_zero_bytes, _no_tables], ids=["0-bytes", "no-tables"])
def test_empty_store_reads_as_no_data(tmp_path, make):
    import store

    db = tmp_path / "faultline.duckdb"
    make(db)
    with pytest.raises(store.EmptyStoreError, match="no data yet"):
        with store.read_connection(db):
            pass
    result = run_module("stats", "compare", "m/a", "m/b", "--db", db)
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr
    assert f"error: {db}: no data yet" in result.stderr
    # and an ingest makes it a store
    summary = ingest_paths([write_jsonl(tmp_path / "a.jsonl", preds("m/a", 2))], db=db)
    assert summary.predictions == 2
    assert q(db, "SELECT count(*) FROM outcomes") == [(2,)]


@pytest.mark.parametrize("page", [None, "pages/instances.py"])
def test_app_shows_load_panel_on_empty_store(tmp_path, monkeypatch, page):
    from streamlit.testing.v1 import AppTest

    db = tmp_path / "faultline.duckdb"
    db.write_bytes(b"")
    monkeypatch.setenv("FAULTLINE_DB", str(db))
    monkeypatch.delenv("FAULTLINE_READ_ONLY", raising=False)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    if page:
        at.switch_page(page)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    assert any("holds no runs yet" in i.value for i in at.info)
    assert [e.label for e in at.expander] == ["Load logs and analyse failures"]


# ---------------------------------------------------------------- 10: workers die with the ingest


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        tree.setdefault(ppid, []).append(int(stat.parent.name))
    return tree


def _descendants(root: int) -> set[int]:
    tree, found, todo = _children(), set(), [root]
    while todo:
        for child in tree.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


@pytest.mark.skipif(not sys.platform.startswith("linux") or (os.cpu_count() or 1) < 2, reason="needs /proc and 2 cores")
@pytest.mark.parametrize("start, helpers_expected", [("fork", 2), ("spawn", 3)])
def test_kill_9_during_parallel_parsing_leaves_no_process(tmp_path, start, helpers_expected):
    suite = tmp_path / "suite"
    for r in range(24):
        helm_run(suite / f"run{r}", name=f"mmlu:subject=s{r},model=m_a", n=3000, text_words=60)
    env = {**os.environ, "FAULTLINE_PARALLEL_MIN_BYTES": "1", "FAULTLINE_WORKER_START": start}
    proc = subprocess.Popen([sys.executable, "-m", "ingest", str(suite), "--db", str(tmp_path / "x.duckdb")],
                            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        family: set[int] = set()
        while time.monotonic() < deadline and proc.poll() is None:
            # forked: two workers; spawned: two workers and the resource tracker
            family = set(_descendants(proc.pid))
            if len(family) >= helpers_expected:
                break
            time.sleep(0.02)
        assert len(family) >= helpers_expected and proc.poll() is None, "the ingest never parsed in parallel"
        spawned = sum(b"multiprocessing" in _cmdline(p) for p in family)
        assert spawned >= 3 if start == "spawn" else spawned == 0
        time.sleep(0.5)  # let the workers get into the parsing
        family = _descendants(proc.pid)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and any(_alive(p) for p in family):
            time.sleep(0.1)
        survivors = {p: _cmdline(p) for p in family if _alive(p)}
        assert survivors == {}
    finally:
        if proc.poll() is None:
            proc.kill()


@pytest.mark.skipif(not sys.platform.startswith("linux") or (os.cpu_count() or 1) < 2, reason="needs /proc and 2 cores")
def test_a_worker_killed_mid_parse_is_a_clear_error_and_writes_nothing(tmp_path):
    suite = tmp_path / "suite"
    for r in range(24):
        helm_run(suite / f"run{r}", name=f"mmlu:subject=s{r},model=m_a", n=3000, text_words=60)
    db = tmp_path / "x.duckdb"
    env = {**os.environ, "FAULTLINE_PARALLEL_MIN_BYTES": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "ingest", str(suite), "--db", str(db)],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None and len(_descendants(proc.pid)) < 2:
            time.sleep(0.02)
        workers = _descendants(proc.pid)
        assert len(workers) >= 2, "the ingest never parsed in parallel"
        os.kill(min(workers), signal.SIGKILL)  # as the out-of-memory killer would
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 2, err
    assert "Traceback" not in err
    assert err.strip() == (f"error: {suite}: a worker process parsing it ended abruptly (killed, or out of memory); "
                           "nothing from this command was written. To parse in this process alone: "
                           "FAULTLINE_PARALLEL_MIN_BYTES=1000G")
    assert not db.exists() or q(db, "SELECT count(*) FROM runs") == [(0,)]


BUSY_PARENT = (
    "import os, sys, time\nfrom ingest.load import worker_pool\npool = worker_pool(2, sys.argv[1])\n"
    "busy = [pool.submit(time.sleep, 120) for _ in range(2)]\ntime.sleep(3)\nprint('ready', flush=True)\n"
    "time.sleep(120)\n"
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc")
@pytest.mark.parametrize("start", ["fork", "spawn"])
def test_a_busy_worker_dies_at_once_with_its_parent(start):
    # a worker deep in a long parse never looks at its queue: only the kernel can stop it in time
    proc = subprocess.Popen([sys.executable, "-c", BUSY_PARENT, start], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline() == "ready\n"
        family = _descendants(proc.pid)
        if start == "spawn":
            assert sum(b"spawn_main" in _cmdline(p) for p in family) == 2
            assert sum(b"resource_tracker" in _cmdline(p) for p in family) == 1
        else:  # forked workers are copies of the parent, with its command line; no resource tracker
            assert len(family) == 2 and all(b"worker_pool(2, sys.argv[1])" in _cmdline(p) for p in family)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline and any(_alive(p) for p in family):
            time.sleep(0.05)
        assert {p: _cmdline(p) for p in family if _alive(p)} == {}
    finally:
        if proc.poll() is None:
            proc.kill()


def test_parallel_threshold_is_configurable(monkeypatch):
    from ingest import load

    monkeypatch.setenv("FAULTLINE_PARALLEL_MIN_BYTES", "12345")
    assert load.parallel_min_bytes() == 12345
    monkeypatch.delenv("FAULTLINE_PARALLEL_MIN_BYTES")
    assert load.parallel_min_bytes() == 256 * MiB
    assert load.parallel_min_bytes("fork") == 32 * MiB


def test_workers_fork_only_from_a_single_threaded_process(monkeypatch):
    from ingest import load

    monkeypatch.delenv("FAULTLINE_WORKER_START", raising=False)
    expected = "fork" if sys.platform.startswith("linux") and threading.active_count() == 1 else "spawn"
    assert load.start_method() == expected
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert load.start_method() == "spawn"  # a lock another thread holds would stay held in a fork
        monkeypatch.setenv("FAULTLINE_WORKER_START", "fork")
        assert load.start_method() == "spawn"  # asked for, but not safe here
    finally:
        stop.set()
        other.join()
    monkeypatch.setenv("FAULTLINE_WORKER_START", "spawn")
    assert load.start_method() == "spawn"
    monkeypatch.setenv("FAULTLINE_WORKER_START", "vfork")
    with pytest.raises(IngestError, match="FAULTLINE_WORKER_START='vfork': expected fork or spawn"):
        load.start_method()


# ---------------------------------------------------------------- 12: zip bomb and huge texts


HEADER = {"version": 2, "status": "success", "eval": {"task": "bomb", "task_id": "t1", "model": "m/bomb"}}
@pytest.fixture(scope="module")
def bomb(tmp_path_factory) -> Path:
    """A real zip bomb: 1 GiB of zeros in one sample entry of a 1 MB .eval."""
    path = tmp_path_factory.mktemp("bomb") / "bomb.eval"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        archive.writestr("header.json", json.dumps(HEADER))
        with archive.open("samples/1_epoch_1.json", "w") as entry:
            zeros = b"0" * MiB
            for _ in range(1024):
                entry.write(zeros)
    assert path.stat().st_size < 1.1 * MiB
    return path


def test_zip_bomb_is_refused_without_inflating_it(bomb, tmp_db):
    result, peak = run_measured(bomb, "--db", tmp_db)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert f"{bomb}: refused: samples/1_epoch_1.json expands to at least 1.0 GiB, over the 256.0 MiB limit" in result.stderr
    assert peak < 400 * MiB, f"peak memory {peak / MiB:.0f} MiB"
    assert not tmp_db.exists()


def test_zip_bomb_with_forged_sizes_is_refused_without_inflating_it(bomb, tmp_path, tmp_db):
    # the headers now claim 10 bytes: the size check passes, inflating must still stop early
    raw = bytearray(bomb.read_bytes())
    entry = b"samples/1_epoch_1.json"
    for signature, size_at in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):
        at = raw.find(signature, raw.find(signature) + 1)  # the second record is the sample entry
        name_at = at + (30 if signature == b"PK\x03\x04" else 46)
        assert raw[name_at:name_at + len(entry)] == entry
        raw[at + size_at:at + size_at + 4] = (10).to_bytes(4, "little")
    liar = tmp_path / "liar.eval"
    liar.write_bytes(raw)
    result, peak = run_measured(liar, "--db", tmp_db)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert f"{liar}: corrupt or truncated .eval archive (Bad CRC-32 for file 'samples/1_epoch_1.json')" in result.stderr
    assert peak < 400 * MiB, f"peak memory {peak / MiB:.0f} MiB"
    assert not tmp_db.exists()


def _many_entry_archive(path: Path, entries: int, size: int) -> Path:
    sample = {"id": 1, "epoch": 1, "input": "q", "target": "a", "output": {"completion": "a"},
              "scores": {"match": {"value": "C"}}}
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("header.json", json.dumps(HEADER))
        for n in range(1, entries + 1):
            body = json.dumps({**sample, "id": n, "metadata": {"pad": "x" * size}})
            archive.writestr(f"samples/{n}_epoch_1.json", body)
    return path


def test_archive_total_cap_counts_every_entry(tmp_path, tmp_db):
    archive = _many_entry_archive(tmp_path / "wide.eval", entries=6, size=2 * MiB)
    env = {**os.environ, "FAULTLINE_MAX_ARCHIVE_BYTES": "10M"}
    result = run_module("ingest", archive, "--db", tmp_db, env=env)
    assert result.returncode == 2, result.stderr
    assert f"{archive}: refused: expands to 12.0 MiB, over the 10.0 MiB limit" in result.stderr
    assert "FAULTLINE_MAX_ARCHIVE_BYTES" in result.stderr
    assert not tmp_db.exists()
    # under the cap the same archive loads
    env["FAULTLINE_MAX_ARCHIVE_BYTES"] = "13M"
    result = run_module("ingest", archive, "--db", tmp_db, env=env)
    assert result.returncode == 0, result.stderr
    assert q(tmp_db, "SELECT count(*) FROM predictions") == [(6,)]


def test_one_huge_text_is_refused_over_the_cap(tmp_path, tmp_db):
    rows = preds("m/a", 3)
    rows[1]["output"] = "y" * (2 * MiB)
    path = write_jsonl(tmp_path / "long.jsonl", rows)
    env = {**os.environ, "FAULTLINE_MAX_TEXT_BYTES": "1M"}
    result = run_module("ingest", path, "--db", tmp_db, env=env)
    assert result.returncode == 2, result.stderr
    assert f"{path.resolve()}: instance 'q1': output_text is 2.0 MiB, over the 1.0 MiB limit" in result.stderr
    assert not tmp_db.exists()
    result = run_module("ingest", path, "--db", tmp_db)  # the default cap (32 MiB) reads it
    assert result.returncode == 0, result.stderr
    assert q(tmp_db, "SELECT max(length(output_text)) FROM predictions") == [(2 * MiB,)]


# ---------------------------------------------------------------- 14: tracebacks become named errors


def _deep(levels: int = 5000) -> str:
    return "[" * levels + "]" * levels


def _deep_inputs(tmp_path: Path) -> list[tuple[Path, str]]:
    """One input per reader with a value nested 5,000 levels deep, and where the error must point."""
    out = []
    custom = tmp_path / "custom.jsonl"
    custom.write_text(json.dumps(preds("m/a", 1)[0]) + "\n" + '{"model": "m/a", "instance_id": "q9", "output": ' + _deep() + "}\n")
    out.append((custom, f"{custom}:2:"))
    run = helm_run(tmp_path / "helm_run")
    (run / "instances.json").write_text(_deep())
    out.append((run, f"{run / 'instances.json'}:"))
    lm = tmp_path / "lm"
    lm.mkdir()
    samples = lm / "samples_gsm8k_2024-05-01T10-00-00.000000.jsonl"
    samples.write_text(json.dumps({"doc_id": 0, "doc": {}, "exact_match": 1.0}) + "\n"
                       + '{"doc_id": 1, "doc": ' + _deep() + "}\n")
    out.append((samples, f"{samples}:2:"))
    log = tmp_path / "log.json"
    log.write_text(json.dumps({"eval": {"task": "t", "model": "m"}, "status": "success"})[:-1] + ', "samples": ' + _deep() + "}")
    out.append((log, f"{log}:"))
    eval_log = tmp_path / "log.eval"
    with zipfile.ZipFile(eval_log, "w") as archive:
        archive.writestr("header.json", json.dumps(HEADER))
        archive.writestr("samples/1_epoch_1.json", '{"id": 1, "epoch": 1, "input": ' + _deep() + "}")
    out.append((eval_log, f"{eval_log}!samples/1_epoch_1.json:"))
    return out


def test_json_nested_too_deep_is_a_named_error_in_every_reader(tmp_path, tmp_db):
    for path, where in _deep_inputs(tmp_path):
        stderr = refused([path, "--db", tmp_db], where, "nested too deeply")
        assert stderr.count("\n") == 1, stderr
    assert not tmp_db.exists()


def test_deep_value_that_parses_but_cannot_be_stored_is_named(tmp_path, tmp_db):
    # 500 levels: Python's parser reads it, the store's JSON encoder (orjson, 254 levels) cannot
    path = tmp_path / "log.json"
    sample = {"id": 1, "epoch": 1, "input": "q", "target": "a", "output": {"completion": "a"},
              "scores": {"match": {"value": "C"}}, "metadata": json.loads(_deep(500))}
    path.write_text(json.dumps({"eval": {"task": "t", "model": "m"}, "status": "success", "samples": [sample]}))
    refused([path, "--db", tmp_db], f"{path.resolve()}: JSON nested too deeply")
    assert not tmp_db.exists()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="drops file-permission capabilities on Linux")
@pytest.mark.parametrize("name", ["preds.jsonl", "preds.csv"])
def test_unreadable_predictions_file_is_a_named_error(tmp_path, name):
    path = tmp_path / name
    path.write_text("model,instance_id,output,correct\nm,q1,a,1\n" if name.endswith(".csv") else json.dumps(preds("m", 1)[0]))
    path.chmod(0)
    db = tmp_path / "store"
    db.mkdir()
    result = run_unprivileged("ingest", path, "--db", db / "x.duckdb")
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    assert f"error: {path}: cannot read: Permission denied" in result.stderr


def test_directory_named_like_a_predictions_file_is_a_named_error(tmp_path, tmp_db):
    folder = tmp_path / "x.jsonl"
    folder.mkdir()
    refused([folder, "--format", "jsonl", "--db", tmp_db], f"{folder}: cannot read: Is a directory")


def test_two_eval_logs_with_one_task_id_are_two_runs(tmp_path, tmp_db):
    # a run's identity includes its log's path (only re-ingesting the same log replaces a run),
    # so two logs of one task are two runs, not a constraint error behind "transaction aborted"
    logs = tmp_path / "logs"
    logs.mkdir()
    _many_entry_archive(logs / "a.eval", entries=2, size=10)
    _many_entry_archive(logs / "b.eval", entries=3, size=10)
    result = run_module("ingest", logs, "--db", tmp_db)
    assert result.returncode == 0, result.stderr
    assert q(tmp_db, "SELECT count(*), sum(n_predictions) FROM runs") == [(2, 5)]


def test_deep_json_through_the_python_api_is_an_ingest_error(tmp_path, tmp_db):
    path, _ = _deep_inputs(tmp_path)[0]
    with pytest.raises(IngestError, match="nested too deeply"):
        ingest_paths([path], db=tmp_db)


def test_a_file_is_read_whole_and_capped_whatever_its_stated_size(tmp_path, monkeypatch):
    """read_capped asks for the file's size, not the cap (#25 speed), yet still reads a file that
    says less than it holds (as /proc files say 0 bytes) to its end, and refuses one past the cap
    however it is sized."""
    from ingest import files
    from ingest.limits import Limits

    log = tmp_path / "run_spec.json"
    log.write_bytes(b"x" * 1000)
    assert files.read_capped(log, Limits(file_bytes=1000)) == b"x" * 1000
    with pytest.raises(IngestError, match=r"1000 bytes, over the 999 bytes limit"):
        files.read_capped(log, Limits(file_bytes=999))
    real_fstat = os.fstat

    class Shrunk:  # the file as fstat saw it before it grew to 1,000 bytes
        def __init__(self, st):
            self.st_mode, self.st_size = st.st_mode, 10

    monkeypatch.setattr(os, "fstat", lambda fd: Shrunk(real_fstat(fd)))
    assert files.read_capped(log, Limits(file_bytes=5000)) == b"x" * 1000
    with pytest.raises(IngestError, match=r"at least 501 bytes, over the 500 bytes limit"):
        files.read_capped(log, Limits(file_bytes=500))
