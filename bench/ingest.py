"""Ingest speed: Faultline's HELM reader against a minimal reference reader, in the same run.

    python bench/ingest.py                  # fixture suite + a generated 283-run, ~120 MB suite in helm-run's layout
    python bench/ingest.py --large          # ... + 1,000,000 generated predictions (minutes)
    python bench/ingest.py --large --predictions 2000000 --large-only   # peak memory and ratio at 2M
    python bench/ingest.py --transcript     # ... + an agent transcript of --transcript-mb MB: peak memory
    python bench/ingest.py --transcript-only --transcript-mb 100 300 1000 --repeats 3   # transcripts only

Both suites are timed in this process (ingest_paths against the reference function), and the
283-run suite also as a user runs it, start-up included (`python -m ingest SUITE` against
`python -c` of the reference), each in a fresh interpreter. Those start-up runs keep the bytecode
of the modules they import (PYTHONPYCACHEPREFIX under bench/out, after one untimed run of each),
as a user's Python does; this sandbox sets PYTHONDONTWRITEBYTECODE, which makes every run
compile Faultline's modules again (about 0.1 s): --no-bytecode-cache measures that way.
The --transcript log is one Inspect sample whose model calls each repeat the conversation so far
(how real .eval members reach hundreds of MB). Its reference streams the same .eval with ijson's
C backend, one event at a time, into one bulk insert of (sample, step, role, text); both run in
a fresh process each, alternating, and the bench prints wall time, MB/s of the sample member and
peak memory of each (goals: at most 1.5x the reference, time linear in size, under 1 GB).

The reference does the least any HELM reader must do: json.load every file of every run that
Faultline reads (RUN_FILES) and insert one row per prediction with a single bulk insert. Both are timed in the same run,
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
# every file of a run Faultline reads
RUN_FILES = ("run_spec.json", "scenario.json", "instances.json", "display_predictions.json", "display_requests.json",
             "per_instance_stats.json", "scenario_state.json", "stats.json")


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
            (run / "instances.json").write_text(_helm_json(instances))
            (run / "display_predictions.json").write_text(_helm_json(preds))
            (run / "per_instance_stats.json").write_text(_helm_json(stats))
            made += 1
    shutil.rmtree(dest, ignore_errors=True)
    tmp.rename(dest)


# the metrics a real MMLU run reports per instance (fixtures/helm mmlu-v1), in its order
_MMLU_STATS = ("num_references", "num_train_trials", "num_prompt_tokens", "num_completion_tokens", "num_output_tokens",
               "training_co2_cost", "training_energy_cost", "inference_runtime", "batch_size", "finish_reason_length",
               "finish_reason_stop", "finish_reason_endoftext", "finish_reason_unknown", "num_train_instances",
               "prompt_truncated", "max_prob", "exact_match", "exact_match@5", "quasi_exact_match", "quasi_exact_match@5",
               "prefix_exact_match", "prefix_exact_match@5", "quasi_prefix_exact_match", "quasi_prefix_exact_match@5",
               "logprob", "num_perplexity_tokens", "num_bytes")


def _helm_json(value) -> str:
    return json.dumps(value, indent=2)  # as helm-run writes its run files


def generate_real_layout_suite(dest: Path, n_runs: int = 283, per_run: int = 22, n_models: int = 5, seed: int = 0) -> None:
    """A suite in the layout helm-run writes, each file shaped as in a real MMLU run (the
    fixtures' mmlu-v1): run_spec, scenario, scenario_state (every request state with its 5-shot
    prompt and completion), stats (162 aggregates), per_instance_stats (27 metrics per
    instance), instances, display_predictions and display_requests, indented as helm-run writes
    them — about 420 KB per run at 22 instances. Generated text, clearly not an evaluation."""
    rng = random.Random(seed)
    tmp = dest.with_suffix(".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    schema = {"run_groups": [{"name": "mmlu", "environment": {"main_name": "exact_match", "main_split": "test"}}],
              "metrics": [{"name": "exact_match", "lower_is_better": False}], "models": []}
    (tmp / "schema.json").write_text(json.dumps(schema))
    subjects = [f"subject_{i:02d}" for i in range(-(-n_runs // n_models))]
    letters = "ABCD"

    def words(k: int) -> str:
        return " ".join(rng.choices(LOREM, k=k))

    made = 0
    for subject in subjects:
        for m in range(n_models):
            if made >= n_runs:
                break
            model = f"synthetic/model-{m}"
            name = f"mmlu:subject={subject},method=multiple_choice_joint,model={model.replace('/', '_')}"
            run = tmp / name
            run.mkdir()
            adapter = {"method": "multiple_choice_joint", "global_prefix": "", "global_suffix": "",
                       "instructions": f"The following are multiple choice questions (with answers) about {subject}.\n",
                       "input_prefix": "Question: ", "input_suffix": "\n", "reference_prefix": "A. ", "reference_suffix": "\n",
                       "output_prefix": "Answer: ", "output_suffix": "\n", "instance_prefix": "\n", "substitutions": [],
                       "max_train_instances": 5, "max_eval_instances": per_run, "num_outputs": 5, "num_train_trials": 1,
                       "num_trials": 1, "sample_train": True, "model_deployment": model, "model": model, "temperature": 0.0,
                       "max_tokens": 1, "stop_sequences": ["\n"], "multi_label": False}
            (run / "run_spec.json").write_text(json.dumps({
                "name": name, "scenario_spec": {"class_name": "helm.benchmark.scenarios.mmlu_scenario.MMLUScenario",
                                                "args": {"subject": subject}},
                "adapter_spec": adapter,
                "metric_specs": [{"class_name": "helm.benchmark.metrics.basic_metrics.BasicGenerationMetric",
                                  "args": {"names": ["exact_match", "quasi_exact_match", "prefix_exact_match",
                                                     "quasi_prefix_exact_match"]}},
                                 {"class_name": "helm.benchmark.metrics.basic_metrics.BasicReferenceMetric", "args": {}},
                                 {"class_name": "helm.benchmark.metrics.basic_metrics.InstancesPerSplitMetric", "args": {}}],
                "data_augmenter_spec": {"perturbation_specs": [], "should_augment_train_instances": False,
                                        "should_include_original_train": False, "should_skip_unchanged_train": False,
                                        "should_augment_eval_instances": False, "should_include_original_eval": False,
                                        "should_skip_unchanged_eval": False, "seeds_per_instance": 1},
                "groups": ["mmlu"]}))
            (run / "scenario.json").write_text(json.dumps({
                "name": "mmlu", "description": "Massive Multitask Language Understanding", "tags": ["knowledge", "multiple_choice"],
                "definition_path": "https://github.com/stanford-crfm/helm/blob/main/src/helm/benchmark/scenarios/mmlu_scenario.py"}))
            shots = "".join(f"Question: {words(rng.randint(10, 40))}\n" + "".join(f"{c}. {words(rng.randint(2, 8))}\n" for c in letters)
                            + f"Answer: {rng.choice(letters)}\n\n" for _ in range(5))
            instances, preds, requests, stats, states = [], [], [], [], []
            correct_sum = 0.0
            for i in range(per_run):
                iid = f"id{rng.randint(0, 10_000)}_{i}"
                options = [words(rng.randint(2, 8)) for _ in letters]
                gold = rng.randrange(4)
                instance = {"input": {"text": words(rng.randint(10, 40))},
                            "references": [{"output": {"text": o}, "tags": ["correct"] if k == gold else []}
                                           for k, o in enumerate(options)],
                            "split": "test", "id": iid}
                answer = rng.randrange(4) if rng.random() < 0.4 else gold
                em = float(answer == gold)
                correct_sum += em
                prompt = (adapter["instructions"] + "\n" + shots + f"Question: {instance['input']['text']}\n"
                          + "".join(f"{c}. {o}\n" for c, o in zip(letters, options)) + "Answer:")
                request = {"model_deployment": model, "model": model, "embedding": False, "prompt": prompt,
                           "temperature": 0.0, "num_completions": 1, "top_k_per_token": 5, "max_tokens": 1,
                           "stop_sequences": ["\n"], "echo_prompt": False, "top_p": 1, "presence_penalty": 0,
                           "frequency_penalty": 0}
                n_prompt = float(len(prompt) // 4)
                values = {"num_references": 4.0, "num_train_trials": 1.0, "num_prompt_tokens": n_prompt,
                          "num_completion_tokens": 1.0, "num_output_tokens": 1.0, "training_co2_cost": None,
                          "training_energy_cost": None, "inference_runtime": rng.random(), "batch_size": 1.0,
                          "finish_reason_length": 0.0, "finish_reason_stop": 0.0, "finish_reason_endoftext": 1.0,
                          "finish_reason_unknown": 0.0, "num_train_instances": 5.0, "prompt_truncated": 0.0, "max_prob": 0.0,
                          "logprob": 0.0, "num_perplexity_tokens": 1.0, "num_bytes": 1.0}
                entries = []
                for stat in _MMLU_STATS:
                    value = values.get(stat, em)
                    entries.append(_stat(stat, value, "test") if value is not None else
                                   {"name": {"name": stat, "split": "test"}, "count": 0, "sum": 0, "sum_squared": 0})
                instances.append(instance)
                preds.append({"instance_id": iid, "train_trial_index": 0, "predicted_text": letters[answer], "base64_images": [],
                              "mapped_output": options[answer],
                              "stats": {"num_train_trials": 1.0, "num_prompt_tokens": n_prompt, "num_output_tokens": 1.0,
                                        "num_train_instances": 5.0, "prompt_truncated": 0.0, "exact_match": em}})
                requests.append({"instance_id": iid, "train_trial_index": 0, "request": request})
                stats.append({"instance_id": iid, "train_trial_index": 0, "stats": entries})
                states.append({"instance": instance, "train_trial_index": 0, "output_mapping": dict(zip(letters, options)),
                               "request": request,
                               "result": {"success": True, "embedding": [], "completions": [
                                   {"text": letters[answer], "logprob": 0.0, "tokens": [{"text": letters[answer], "logprob": 0.0}],
                                    "finish_reason": {"reason": "endoftext"}}],
                                   "cached": True, "request_time": rng.random() * 10, "request_datetime": 1716195609},
                               "num_train_instances": 5, "prompt_truncated": False, "num_conditioning_tokens": 0})
            (run / "instances.json").write_text(_helm_json(instances))
            (run / "display_predictions.json").write_text(_helm_json(preds))
            (run / "display_requests.json").write_text(_helm_json(requests))
            (run / "per_instance_stats.json").write_text(_helm_json(stats))
            (run / "scenario_state.json").write_text(_helm_json({"adapter_spec": adapter, "request_states": states}))
            # run aggregates as HELM writes them for an MMLU run: 31 per split, and 50 per split under
            # the robustness and fairness perturbations (162)
            aggregates = []
            for split in ("test", "valid"):
                plain = [*_MMLU_STATS, "num_instances", "exact_match_sum", "quasi_exact_match_sum", "num_bytes_sum"]
                aggregates += [_stat(stat, correct_sum / per_run if "match" in stat else
                                     float(per_run) if stat == "num_instances" and split == "test" else 1.0, split)
                               for stat in plain]
                for kind in ("robustness", "fairness"):
                    perturbation = {"name": kind, "robustness": kind == "robustness", "fairness": kind == "fairness",
                                    "computed_on": "worst"}
                    aggregates += [_stat(stat, 1.0, split) | {"name": {"name": stat, "split": split, "perturbation": perturbation}}
                                   for stat in _MMLU_STATS[:25]]
            (run / "stats.json").write_text(_helm_json(aggregates))
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


def _suite(name: str, n_runs: int, per_run: int, generate=generate_suite) -> tuple[Path, float]:
    suite = ROOT / "bench" / "out" / name
    if not suite.exists():
        t = time.perf_counter()
        generate(suite, n_runs, per_run)
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
    ap.add_argument("--transcript", action="store_true",
                    help="also Inspect transcripts of --transcript-mb MB against an ijson reference: MB/s, peak memory")
    ap.add_argument("--transcript-mb", type=int, nargs="+", default=[300],
                    help="sizes of the generated transcripts in MB (default 300; e.g. 100 300 1000)")
    ap.add_argument("--transcript-only", action="store_true", help="only the --transcript measurement")
    ap.add_argument("--no-reference", action="store_true",
                    help="with --large: time only Faultline (the reference holds every prediction in memory: "
                         "about 2.2 GB per million, past a 24 GB machine at 10,000,000)")
    args = ap.parse_args()
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

    if args.transcript or args.transcript_only:
        _transcript(args.transcript_mb, args.repeats)
        if args.transcript_only:
            return
    if not (args.large and args.large_only):
        if FIXTURE_SUITE.is_dir():
            _print_pair("fixture suite mmlu-v1", args.repeats, timed_pair(FIXTURE_SUITE, args.repeats))
        suite, size_mb = _suite("helm_283_runs_real_layout", 283, 22, generate_real_layout_suite)
        _print_pair(f"generated HELM suite in helm-run's layout: 283 runs, {size_mb:,.0f} MB of JSON", args.repeats,
                    timed_pair(suite, args.repeats))
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


def reference_transcript(log: Path, db: Path) -> int:
    """The least a transcript reader must do: stream each sample member of the .eval with ijson's
    C backend, one event at a time, and insert one row per step (sample, step, role, text) —
    the model's answers and the tools' results — with a single bulk insert."""
    import zipfile

    import duckdb
    import ijson
    import pyarrow as pa

    assert ijson.backend == "yajl2_c", f"ijson's C backend is not installed (found {ijson.backend})"
    cols: dict[str, list] = {"sample": [], "step": [], "role": [], "text": []}
    with zipfile.ZipFile(log) as archive:
        for name in archive.namelist():
            if not name.startswith("samples/"):
                continue
            with archive.open(name) as member:
                for step, event in enumerate(e for e in ijson.items(member, "events.item", use_float=True)
                                             if e.get("event") in ("model", "tool")):
                    if event["event"] == "model":
                        role, text = "assistant", event["output"]["choices"][0]["message"].get("content")
                    else:
                        role, text = "tool", event.get("result")
                    cols["sample"].append(name)
                    cols["step"].append(step)
                    cols["role"].append(role)
                    cols["text"].append(text if isinstance(text, str) else None)
    con = duckdb.connect(str(db))
    con.register("staged", pa.table(cols))
    con.execute("CREATE TABLE steps AS SELECT * FROM staged")
    con.close()
    return len(cols["sample"])


TRANSCRIPT_REFERENCE_CODE = (
    "import sys, importlib.util as u; from pathlib import Path;"
    "s = u.spec_from_file_location('bench_ingest', 'bench/ingest.py'); m = u.module_from_spec(s); s.loader.exec_module(m);"
    "print(m.reference_transcript(Path(sys.argv[1]), Path(sys.argv[2])))"
)
TRANSCRIPT_FAULTLINE_CODE = ("import sys; from ingest import ingest_paths;"
                             "s = ingest_paths([sys.argv[1]], db=sys.argv[2]); print(s.steps)")


def _transcript(sizes_mb: list[int], repeats: int) -> None:
    """Each size: one generated sample, read by the reference and by `ingest_paths` in a fresh
    process each (start-up included), alternating, `repeats` times."""
    out = ROOT / "bench" / "out"
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for target_mb in sizes_mb:
        with tempfile.TemporaryDirectory(dir=out) as tmp:
            log = Path(tmp) / "transcript.eval"
            t = time.perf_counter()
            turns, size = generate_transcript(log, target_mb)
            print(f"generated {target_mb} MB transcript: one sample of {size / 1e6:,.0f} MB ({log.stat().st_size / 1e6:,.0f} MB "
                  f"zipped), {turns:,} turns, in {time.perf_counter() - t:.0f} s; load average {os.getloadavg()[0]:.1f}")
            got: dict[str, dict] = {side: {"wall": [], "peak": 0.0, "rows": ""} for side in ("reference", "faultline")}
            for _ in range(repeats):
                for side, code in (("reference", TRANSCRIPT_REFERENCE_CODE), ("faultline", TRANSCRIPT_FAULTLINE_CODE)):
                    db = Path(tmp) / f"{side}.duckdb"
                    wall, peak, _, n = child_peak(code, str(log), str(db))
                    db.unlink()
                    got[side]["wall"].append(wall)
                    got[side]["peak"] = max(got[side]["peak"], peak)
                    got[side]["rows"] = n
        rows.append((size / 1e6, got))
        ref, ours = got["reference"], got["faultline"]
        (r, r_m), (o, o_m) = _stats(ref["wall"]), _stats(ours["wall"])
        mb = size / 1e6
        print(f"  reference (ijson {ref['rows']} rows, one insert): {r:6.2f} / {r_m:6.2f} s  {mb / r_m:6.1f} MB/s  "
              f"peak {ref['peak']:,.0f} MB")
        print(f"  faultline ({ours['rows']} steps)              : {o:6.2f} / {o_m:6.2f} s  {mb / o_m:6.1f} MB/s  "
              f"peak {ours['peak']:,.0f} MB")
        print(f"  wall-time ratio faultline / reference: {o / r:.2f}x best, {o_m / r_m:.2f}x median   "
              f"(goal: at most 1.5x, peak under 1,024 MB; {repeats} runs each, best / median, start-up included)")
    if len(rows) > 1:
        print("  seconds per MB (median), faultline: " + ", ".join(
            f"{mb:,.0f} MB {statistics.median(got['faultline']['wall']) / mb * 1000:.1f} ms" for mb, got in rows)
              + "   (linear when these agree)")


if __name__ == "__main__":
    main()
