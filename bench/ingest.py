"""Ingest speed: Faultline's HELM reader against a minimal reference reader, in the same run.

    python bench/ingest.py                  # fixture suite + a generated 283-run, ~120 MB suite
    python bench/ingest.py --large          # ... + 1,000,000 generated predictions (minutes)
    python bench/ingest.py --large --predictions 2000000 --large-only   # peak memory and ratio at 2M
    python bench/ingest.py --transcript     # ... + an agent transcript of --transcript-mb MB: peak memory

Both suites are timed in this process (ingest_paths against the reference function), and the
283-run suite also as a user runs it, start-up included (`python -m ingest SUITE` against
`python -c` of the reference), each in a fresh interpreter. Those start-up runs keep the bytecode
of the modules they import (PYTHONPYCACHEPREFIX under bench/out, after one untimed run of each),
as a user's Python does; this sandbox sets PYTHONDONTWRITEBYTECODE, which makes every run
compile Faultline's modules again (about 0.1 s): --no-bytecode-cache measures that way.
The --transcript log is one Inspect sample whose model calls each repeat the conversation so far
(how real .eval members reach hundreds of MB); the goal is peak memory under 1 GB.

The reference does the least any HELM reader must do: json.load the same files of every run
and insert one row per prediction with a single bulk insert. Both are timed in the same run,
alternating, --repeats times each (default 5), and both the best and the median are printed (a
shared machine moves single runs by a tenth or more); the figure that matters is the wall-time
ratio, start-up included (goal: at most 1.5x on the 283-run suite; Faultline parses it on every
core when it can fork its workers, docs/ingest.md). The generated suites are generated data in HELM's file layout (clearly
not a real evaluation), cached under bench/out/; the --large one (about 2 GB of JSON per million
predictions) is deleted after the run unless --keep-suite. For --large it also prints each side's peak memory: the sum of
the VmHWM of every process of its tree (workers included).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
FIXTURE_SUITE = ROOT.parent / "shared" / "fixtures" / "helm" / "mmlu-v1" / "benchmark_output" / "runs" / "v1"
RUN_FILES = ("run_spec.json", "scenario.json", "instances.json", "display_predictions.json", "per_instance_stats.json", "scenario_state.json")


def reference_ingest(suite: Path, db: Path) -> int:
    import duckdb
    import pyarrow as pa

    cols: dict[str, list] = {"run": [], "instance_id": [], "output": [], "score": []}
    for run in sorted(p for p in suite.iterdir() if (p / "run_spec.json").is_file()):
        loaded = {name: json.load(open(run / name)) for name in RUN_FILES if (run / name).is_file()}
        name = loaded["run_spec.json"]["name"]
        for pred in loaded.get("display_predictions.json", []):
            cols["run"].append(name)
            cols["instance_id"].append(pred["instance_id"])
            cols["output"].append(pred.get("predicted_text"))
            cols["score"].append(pred["stats"].get("exact_match"))
    con = duckdb.connect(str(db))
    con.register("staged", pa.table(cols))
    con.execute("CREATE TABLE predictions AS SELECT * FROM staged")
    con.close()
    return len(cols["run"])


def faultline_ingest(suite: Path, db: Path) -> int:
    from ingest import ingest_paths

    return ingest_paths([suite], db=db).predictions


REFERENCE_CODE = (
    "import sys, importlib.util as u; from pathlib import Path;"
    "s = u.spec_from_file_location('bench_ingest', 'bench/ingest.py'); m = u.module_from_spec(s); s.loader.exec_module(m);"
    "print(m.reference_ingest(Path(sys.argv[1]), Path(sys.argv[2])))"
)


def _stats(samples: list[float]) -> tuple[float, float]:
    """(best, median) of the samples."""
    return min(samples), statistics.median(samples)


def startup_env(cache: Path | None) -> dict[str, str]:
    """The environment of the start-up runs. With `cache`, Python keeps the bytecode of every
    module it compiles there (PYTHONPYCACHEPREFIX, outside the checkout) and reads it on the next
    start, as it does for a user (it writes __pycache__ unless told not to, and pip compiles what
    it installs); without it, as this process's environment says (PYTHONDONTWRITEBYTECODE=1
    makes each run compile Faultline's own modules again, about 0.1 s)."""
    env = dict(os.environ)
    if cache is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(cache)
    return env


def startup_pair(suite: Path, repeats: int, cache: Path | None) -> tuple[list[float], list[float]]:
    """Wall times of `python -m ingest SUITE` and of the reference in a fresh interpreter,
    alternating (start-up and imports included, as a user sees it), after one untimed run of
    each (which leaves the bytecode in `cache`)."""
    env = startup_env(cache)
    times: tuple[list[float], list[float]] = ([], [])
    for n in range(repeats + 1):
        with tempfile.TemporaryDirectory() as tmp:
            for i, cmd in enumerate(([sys.executable, "-m", "ingest", str(suite), "--db", f"{tmp}/ours.duckdb"],
                                     [sys.executable, "-c", REFERENCE_CODE, str(suite), f"{tmp}/ref.duckdb"])):
                t = time.perf_counter()
                subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, env=env)
                if n:
                    times[i].append(time.perf_counter() - t)
    return times


def _cpu() -> float:
    """CPU seconds of this process and of its finished children (worker processes)."""
    own, children = os.times(), os.times()
    return own.user + own.system + children.children_user + children.children_system


def timed_pair(suite: Path, repeats: int) -> dict:
    """Wall and CPU seconds of each of `repeats` runs, and the rows written, of the reference and
    of Faultline, alternating the two so both see the same machine load."""
    out = {fn: {"wall": [], "cpu": [], "rows": 0} for fn in (reference_ingest, faultline_ingest)}
    for _ in range(repeats):
        for fn, got in out.items():
            with tempfile.TemporaryDirectory() as tmp:
                t, c = time.perf_counter(), _cpu()
                got["rows"] = fn(suite, Path(tmp) / "bench.duckdb")
                got["wall"].append(time.perf_counter() - t)
                got["cpu"].append(_cpu() - c)
    return out


LOREM = (
    "The model considers each option in turn, restating the question and weighing the evidence "
    "before it settles on an answer; along the way it recalls definitions, works through an "
    "example, and sometimes contradicts an earlier step. "
).split()


def _stat(name: str, value: float, split: str) -> dict:
    return {"name": {"name": name, "split": split}, "count": 1, "sum": value, "sum_squared": value * value,
            "min": value, "max": value, "mean": value, "variance": 0.0, "stddev": 0.0}


def generate_suite(dest: Path, n_runs: int, per_run: int, n_models: int = 10, seed: int = 0,
                   long_share: float = 0.2) -> None:
    """HELM-layout runs: n_models × subjects, per_run instances each; `long_share` of the outputs
    are long free text (300-700 words), the rest 3-30 words."""
    rng = random.Random(seed)
    subjects = [f"subject_{i:03d}" for i in range(-(-n_runs // n_models))]
    tmp = dest.with_suffix(".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    schema = {"run_groups": [{"name": "synthetic_mcq", "environment": {"main_name": "exact_match", "main_split": "test"}}],
              "metrics": [{"name": "exact_match", "lower_is_better": False}], "models": []}
    (tmp / "schema.json").write_text(json.dumps(schema))
    made = 0
    for m in range(n_models):
        model = f"synthetic/model-{m}"
        for subject in subjects:
            if made >= n_runs:
                break
            run = tmp / f"synthetic_mcq:subject={subject},model={model.replace('/', '_')}"
            run.mkdir()
            name = run.name
            (run / "run_spec.json").write_text(json.dumps({
                "name": name, "scenario_spec": {"class_name": "synthetic", "args": {"subject": subject}},
                "adapter_spec": {"method": "generation", "model": model, "model_deployment": model},
                "groups": ["synthetic_mcq"]}))
            (run / "scenario.json").write_text(json.dumps({"name": "synthetic_mcq"}))
            instances, preds, stats = [], [], []
            for i in range(per_run):
                iid = f"id{i}"
                split = "test" if i % 10 else "valid"
                instances.append({"input": {"text": f"Question {i} about {subject}: " + " ".join(rng.choices(LOREM, k=40))},
                                  "references": [{"output": {"text": f"answer {i}"}, "tags": ["correct"]},
                                                 {"output": {"text": f"distractor {i}"}, "tags": []}],
                                  "split": split, "id": iid})
                long = rng.random() < long_share
                text = " ".join(rng.choices(LOREM, k=rng.randint(300, 700) if long else rng.randint(3, 30)))
                em = float(rng.random() < 0.6)
                preds.append({"instance_id": iid, "train_trial_index": 0, "predicted_text": text,
                              "stats": {"exact_match": em, "num_output_tokens": float(len(text) // 4)}})
                stats.append({"instance_id": iid, "train_trial_index": 0, "stats": [
                    _stat("exact_match", em, split), _stat("quasi_exact_match", em, split),
                    _stat("num_output_tokens", float(len(text) // 4), split), _stat("inference_runtime", rng.random(), split)]})
            (run / "instances.json").write_text(json.dumps(instances))
            (run / "display_predictions.json").write_text(json.dumps(preds))
            (run / "per_instance_stats.json").write_text(json.dumps(stats))
            made += 1
    shutil.rmtree(dest, ignore_errors=True)
    tmp.rename(dest)


def _tree(root: int) -> list[int]:
    """A process and all its descendants (worker processes included)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def _memory_kb(pid: int) -> tuple[int, int]:
    """(VmRSS, VmHWM) of a process in kB; (0, 0) once it is gone."""
    values = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                values[key] = int(value.split()[0])
    except (OSError, ValueError):
        pass
    return values.get("VmRSS", 0), values.get("VmHWM", 0)


def child_peak(code: str, *args: str) -> tuple[float, float, float, str]:
    """Wall time, peak memory of the whole process tree, the sampled peak of its total resident
    memory, and the last stdout line. The peak is the sum of each process's own high-water mark
    (VmHWM, read every 0.1 s while it lives): an upper bound of the tree's peak that no sampling
    interval can miss within one process."""
    t = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", code, *args], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    hwm: dict[int, int] = {}
    sampled = 0
    while proc.poll() is None:
        total = 0
        for pid in _tree(proc.pid):
            rss, high = _memory_kb(pid)
            total += rss
            hwm[pid] = max(hwm.get(pid, 0), high)
        sampled = max(sampled, total)
        time.sleep(0.1)
    elapsed = time.perf_counter() - t
    out, err = proc.communicate()
    if proc.returncode:
        raise SystemExit(err)
    return elapsed, sum(hwm.values()) / 1024, sampled / 1024, out.strip().splitlines()[-1]


def generate_transcript(dest: Path, target_mb: int, seed: int = 0) -> tuple[int, int]:
    """An Inspect .eval whose one sample grows to about `target_mb` MB: turns of a model call
    (its input the whole conversation so far, its raw request too) and a tool call with a few KB
    of output kept as an attachment. Written as a stream; returns (turns, member bytes)."""
    import zipfile

    rng = random.Random(seed)
    header = {"version": 2, "status": "success", "eval": {"task": "synthetic_agent", "model": "synthetic/agent-model",
                                                          "task_id": "bench", "run_id": "bench"},
              "results": {"total_samples": 1, "completed_samples": 1,
                          "scores": [{"name": "match", "metrics": {"accuracy": {"value": 0.0}}}]}}
    conversation = [{"role": "system", "content": "attachment://" + "0" * 32},
                    {"role": "user", "content": "attachment://" + "1" * 32}]
    attachments = {"0" * 32: "You are a synthetic agent in a benchmark.", "1" * 32: "Solve the synthetic task."}
    written = turns = 0
    with zipfile.ZipFile(dest, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        archive.writestr("header.json", json.dumps(header))
        with archive.open("samples/1_epoch_1.json", "w", force_zip64=True) as out:
            def put(text: str) -> None:
                nonlocal written
                raw = text.encode()
                out.write(raw)
                written += len(raw)

            put('{"id": 1, "epoch": 1, "input": "Solve the synthetic task.", "target": "done", '
                '"output": {"completion": "gave up", "choices": []}, "scores": {"match": {"value": "I"}}, "events": [')
            while written < target_mb * 1_000_000:
                call_id = f"call_{turns}"
                assistant = {"role": "assistant", "content": f"Turn {turns}: trying something.",
                             "tool_calls": [{"id": call_id, "function": "bash", "arguments": {"cmd": f"run step {turns}"}}]}
                model = {"event": "model", "model": "synthetic/agent-model", "input": conversation,
                         "output": {"choices": [{"message": assistant, "stop_reason": "tool_calls"}],
                                    "usage": {"input_tokens": 50 * len(conversation), "output_tokens": 20}},
                         "call": {"request": {"messages": conversation}}}
                key = f"{turns:032x}"
                attachments[key] = " ".join(rng.choices(LOREM, k=rng.randint(200, 600)))
                tool = {"event": "tool", "id": call_id, "function": "bash", "arguments": {"cmd": f"run step {turns}"},
                        "result": f"attachment://{key}"}
                put(("," if turns else "") + json.dumps(model) + "," + json.dumps(tool))
                conversation = [*conversation, {"role": "assistant", "content": assistant["content"],
                                                "tool_calls": assistant["tool_calls"]},
                                {"role": "tool", "tool_call_id": call_id, "content": f"attachment://{key}"}]
                turns += 1
            put('], "attachments": ' + json.dumps(attachments) + "}")
    return turns, written


def _suite(name: str, n_runs: int, per_run: int) -> tuple[Path, float]:
    suite = ROOT / "bench" / "out" / name
    if not suite.exists():
        t = time.perf_counter()
        generate_suite(suite, n_runs, per_run)
        print(f"generated {suite} in {time.perf_counter() - t:.0f} s")
    return suite, sum(f.stat().st_size for f in suite.rglob("*") if f.is_file()) / 1e6


def _print_pair(title: str, repeats: int, pair: dict) -> None:
    ref, ours = pair[reference_ingest], pair[faultline_ingest]
    print(f"{title} ({ours['rows']:,} predictions, {repeats} runs each: best / median)")
    for label, got in (("reference (json.load + one bulk insert)", ref), ("faultline ingest                       ", ours)):
        (wall, wall_m), (cpu, cpu_m) = _stats(got["wall"]), _stats(got["cpu"])
        print(f"  {label}: {wall:6.3f} / {wall_m:6.3f} s wall  {cpu:6.3f} / {cpu_m:6.3f} s CPU  ({got['rows']:,} rows)")
    (o, o_m), (r, r_m) = _stats(ours["wall"]), _stats(ref["wall"])
    (oc, oc_m), (rc, rc_m) = _stats(ours["cpu"]), _stats(ref["cpu"])
    print(f"  wall-time ratio faultline / reference  : {o / r:6.2f}x best, {o_m / r_m:.2f}x median   "
          f"(CPU {oc / rc:.2f}x best, {oc_m / rc_m:.2f}x median)")


def _print_startup(suite: Path, repeats: int, bytecode_cache: bool) -> None:
    out = ROOT / "bench" / "out"
    with tempfile.TemporaryDirectory(dir=out) as tmp:
        ours, ref = startup_pair(suite, repeats, Path(tmp) / "pycache" if bytecode_cache else None)
    (o, o_m), (r, r_m) = _stats(ours), _stats(ref)
    how = "bytecode cached as for a user" if bytecode_cache else "bytecode as this environment says"
    print(f"  start-up included (python -m ingest vs python -c reference, {repeats} runs each, {how}):\n"
          f"    best   {o:.3f} s vs {r:.3f} s = {o / r:.2f}x\n"
          f"    median {o_m:.3f} s vs {r_m:.3f} s = {o_m / r_m:.2f}x   (goal: at most 1.5x)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--large", action="store_true", help="also the generated suite of --predictions predictions (minutes)")
    ap.add_argument("--predictions", type=int, default=1_000_000, help="size of the --large suite")
    ap.add_argument("--repeats", type=int, default=5, help="runs of each side, alternating (default 5)")
    ap.add_argument("--no-bytecode-cache", action="store_true",
                    help="start-up runs compile Faultline's modules each time if the environment says so "
                         "(PYTHONDONTWRITEBYTECODE), instead of keeping their bytecode as a user's Python does")
    ap.add_argument("--large-only", action="store_true", help="with --large: skip the small suites")
    ap.add_argument("--keep-suite", action="store_true", help="keep the generated --large suite in bench/out (default: delete it)")
    ap.add_argument("--transcript", action="store_true", help="also an agent transcript of --transcript-mb MB: peak memory")
    ap.add_argument("--transcript-mb", type=int, default=300)
    ap.add_argument("--transcript-only", action="store_true", help="only the --transcript measurement")
    ap.add_argument("--no-reference", action="store_true",
                    help="with --large: time only Faultline (the reference holds every prediction in memory: "
                         "about 2.2 GB per million, past a 24 GB machine at 10,000,000)")
    args = ap.parse_args()
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

    if args.transcript or args.transcript_only:
        _transcript(args.transcript_mb)
        if args.transcript_only:
            return
    if not (args.large and args.large_only):
        if FIXTURE_SUITE.is_dir():
            _print_pair("fixture suite mmlu-v1", args.repeats, timed_pair(FIXTURE_SUITE, args.repeats))
        suite, size_mb = _suite("synthetic_helm_283_runs", 283, 200)
        _print_pair(f"generated HELM suite: 283 runs, {size_mb:,.0f} MB of JSON", args.repeats, timed_pair(suite, args.repeats))
        _print_startup(suite, args.repeats, not args.no_bytecode_cache)
    if not args.large:
        return

    per_run = 10_000 if args.predictions >= 100_000 else max(10, args.predictions // 100)
    suite, size_mb = _suite(f"synthetic_helm_{args.predictions}", max(1, args.predictions // per_run), per_run)
    out = ROOT / "bench" / "out"
    with tempfile.TemporaryDirectory(dir=out) as tmp:
        # each in its own process tree, so that its peak memory is that ingest's alone
        ref_code = (
            "import sys, importlib.util as u; from pathlib import Path;"
            "s = u.spec_from_file_location('bench_ingest', 'bench/ingest.py'); m = u.module_from_spec(s); s.loader.exec_module(m);"
            "print(m.reference_ingest(Path(sys.argv[1]), Path(sys.argv[2])))"
        )
        our_code = (
            "import sys; from ingest import ingest_paths;"
            "print(ingest_paths([sys.argv[1]], db=sys.argv[2]).predictions)"
        )
        o_t, o_peak, o_rss, o_n = child_peak(our_code, str(suite), str(Path(tmp) / "ours.duckdb"))
        if not args.no_reference:
            r_t, r_peak, r_rss, r_n = child_peak(ref_code, str(suite), str(Path(tmp) / "ref.duckdb"))
    print(f"generated HELM suite: {int(o_n):,} predictions, {size_mb:,.0f} MB of JSON")
    print("  peak memory: the sum of every process's VmHWM (sampled total RSS of the tree)")
    if not args.no_reference:
        print(f"  reference : {r_t:6.1f} s  {int(r_n) / r_t:9,.0f} predictions/s   peak memory {r_peak:,.0f} MB ({r_rss:,.0f} MB)")
    print(f"  faultline : {o_t:6.1f} s  {int(o_n) / o_t:9,.0f} predictions/s   peak memory {o_peak:,.0f} MB ({o_rss:,.0f} MB)")
    if not args.no_reference:
        print(f"  wall-time ratio faultline / reference: {o_t / r_t:.2f}x")
    if not args.keep_suite:
        shutil.rmtree(suite)  # several GB at millions of predictions


def _transcript(target_mb: int) -> None:
    out = ROOT / "bench" / "out"
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out) as tmp:
        log = Path(tmp) / "transcript.eval"
        t = time.perf_counter()
        turns, size = generate_transcript(log, target_mb)
        print(f"generated {log.name}: one sample of {size / 1e6:,.0f} MB ({log.stat().st_size / 1e6:,.0f} MB zipped), "
              f"{turns:,} turns, in {time.perf_counter() - t:.0f} s")
        code = ("import sys; from ingest import ingest_paths;"
                "s = ingest_paths([sys.argv[1]], db=sys.argv[2]); print(s.steps)")
        wall, peak, rss, steps = child_peak(code, str(log), str(Path(tmp) / "t.duckdb"))
    print(f"  faultline: {wall:6.1f} s, {int(steps):,} steps, peak memory {peak:,.0f} MB ({rss:,.0f} MB sampled)"
          f"   (goal: under 1,024 MB)")


if __name__ == "__main__":
    main()
