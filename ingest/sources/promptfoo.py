"""promptfoo export JSON (`promptfoo export` / `promptfoo eval -o out.json`): one prediction per
provider × test case.

A run per (provider, prompt): the model is the provider id; when a provider was given several
prompts, each is its own run (its `settings` name the prompt, so the store labels the runs'
variants `prompt=<label>`). `dataset` is the config's
`description` (else the file name), `instance_id` the test index. The input is the rendered
prompt (chat prompts also as messages); the test's vars and every assertion's pass, score and
reason are kept in `annotations`, the assertion values as references. The verdict is promptfoo's
own `success` (every assertion passed), `score` its weighted assertion score; a result that failed
with an error rather than an assertion (failureReason 2) is an infrastructure error. The harness's
own number is the prompt's `testPassCount` over its tests.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any, Iterator

from core.names import question_hash
from core.records import (
    InstanceRecord,
    JudgeNote,
    ParsedRun,
    PredictionRecord,
    Reference,
    RunRecord,
)
from core.times import log_time
from core.verdicts import HarnessAggregate, agreement

from .. import files
from ..errors import IngestError, read_each
from ..evidence import common, judge_score, positive_int, system_text
from ..jsonio import expect, json_type, load_json, try_parse
from ..options import ReadOptions
from ..source import Source
from ..walk import matching_files

FORMAT = "promptfoo"
HEAD_BYTES = 4096
FAILURE_ERROR = 2  # promptfoo's ResultFailureReason.ERROR (1 is ASSERT)


def is_export(path: Path) -> bool:
    """A JSON object that starts with promptfoo's `evalId` and holds `results`."""
    head = (files.head(path, HEAD_BYTES) or b"").decode("utf-8", errors="replace")
    return head.lstrip().startswith("{") and re.search(r'"evalId"\s*:', head) is not None and '"results"' in head


def _exports(path: Path) -> list[Path]:
    return matching_files(path, is_export)


def looks_like(path: Path) -> bool:
    return bool(_exports(path))


def count_runs(path: Path) -> int:
    return len(_exports(path))


def read(path: Path, options: ReadOptions) -> Iterator[ParsedRun]:
    exports = _exports(path) if path.is_dir() else [path]
    if not exports:
        raise IngestError(f"{path}: no promptfoo export (a JSON object with evalId and results) here")
    yield from read_each(exports, lambda export: read_export(export, options), "promptfoo export")


def _provider(result: dict, where: str) -> str:
    provider = result.get("provider")
    pid = provider.get("id") if isinstance(provider, dict) else provider
    if not isinstance(pid, str) or not pid:
        raise IngestError(f"{where}: provider has no id")
    return pid


def read_export(path: Path, options: ReadOptions) -> Iterator[ParsedRun]:
    hasher = hashlib.sha256()
    data = expect(load_json(path, hasher), dict, str(path))
    body = expect(data.get("results"), dict, f"{path}: results")
    results = expect(body.get("results"), list, f"{path}: results.results")
    if not results:
        raise IngestError(f"{path}: no results in the export")
    config = data.get("config") if isinstance(data.get("config"), dict) else {}
    description = config.get("description") if isinstance(config.get("description"), str) else None
    dataset = options.dataset or description or path.stem
    prompts = [p for p in body.get("prompts") or [] if isinstance(p, dict)]
    groups: dict[tuple[str, Any], list[tuple[str, dict]]] = {}
    for n, result in enumerate(results):
        where = f"{path}: results.results[{n}]"
        result = expect(result, dict, where)
        groups.setdefault((_provider(result, where), result.get("promptId") or result.get("promptIdx")), []).append((where, result))
    prompts_per_provider: dict[str, int] = {}
    for provider, _ in groups:
        prompts_per_provider[provider] = prompts_per_provider.get(provider, 0) + 1
    content_hash = hasher.hexdigest()
    metadata = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    for (provider, prompt_key), rows in groups.items():
        full_label = _prompt_label(rows[0][1])
        label = short_label(full_label)
        several = prompts_per_provider[provider] > 1
        instances, predictions = [], []
        seen: set[str] = set()
        for where, result in rows:
            instance, prediction = _result(result, where)
            if instance.instance_id in seen:
                raise IngestError(f"{where}: test {instance.instance_id} of {provider} appears twice")
            seen.add(instance.instance_id)
            instances.append(instance)
            predictions.append(prediction)
        judged = [p for p in predictions if p.is_correct is not None]
        harness = _harness(prompts, provider, prompt_key, full_label, judged, sum(1 for p in predictions if p.infra_error))
        settings = {
            "prompt": label,
            "eval_id": data.get("evalId"),
            "promptfoo_version": metadata.get("promptfooVersion"),
            "harness": "promptfoo",
        }
        run = RunRecord(
            run_id=hashlib.sha1(f"{FORMAT}|{data.get('evalId') or path.resolve()}|{provider}|{prompt_key}".encode()).hexdigest()[:16],
            source_format=FORMAT,
            source_path=str(path.resolve()),
            content_hash=content_hash,
            run_name=":".join(x for x in (str(data.get("evalId") or path.name), provider, label if several else None) if x),
            model=options.model or provider,
            dataset=dataset,
            dataset_raw=description or path.stem,
            main_metric="success",
            main_metric_source="promptfoo assertions",
            metric_max=1.0,
            lower_is_better=False,
            verdict_rule="promptfoo's own success (every assertion passed)",
            settings={k: v for k, v in settings.items() if v is not None},
            instructions=common(system_text(i.input_messages) for i in instances),
            max_tokens=_max_tokens(config, provider),
            started_at=log_time(body.get("timestamp") or metadata.get("evaluationCreatedAt")),
            **harness,
        )
        yield ParsedRun(run=run, instances=instances, predictions=predictions)


# ---------------------------------------------------------------- evidence beyond the score


def _max_tokens(config: dict, provider: str) -> int | None:
    """The provider's max_tokens in the eval config, when it sets one."""
    for entry in config.get("providers") or []:
        if isinstance(entry, dict) and entry.get("id") == provider and isinstance(entry.get("config"), dict):
            options = entry["config"]
            return positive_int(options.get("max_tokens", options.get("max_completion_tokens")))
    return None


def _judge_notes(grading: dict, components: list[dict]) -> list[JudgeNote] | None:
    """Each assertion's verdict in its own words (its type as the judge, its value as the
    criterion), else the grading's overall reason."""
    notes = []
    for c in components:
        assertion = c.get("assertion") if isinstance(c.get("assertion"), dict) else {}
        value = assertion.get("value", assertion.get("threshold"))
        reason = c.get("reason") if isinstance(c.get("reason"), str) and c.get("reason").strip() else None
        notes.append(JudgeNote(
            judge=str(assertion.get("type") or "assertion"),
            criterion=value if isinstance(value, str) else (json.dumps(value) if value is not None else None),
            score=judge_score(c.get("score")) if c.get("score") is not None else judge_score(c.get("pass")),
            explanation=reason,
        ))
    if not notes and isinstance(grading.get("reason"), str) and grading["reason"].strip():
        notes.append(JudgeNote(judge="promptfoo", score=judge_score(grading.get("score")), explanation=grading["reason"]))
    return notes or None


def _finish(response: Any) -> tuple[str | None, int | None]:
    """The provider's finish reason and completion tokens."""
    if not isinstance(response, dict):
        return None, None
    usage = response.get("tokenUsage") if isinstance(response.get("tokenUsage"), dict) else {}
    reason = response.get("finishReason")
    return (reason if isinstance(reason, str) else None), positive_int(usage.get("completion"))


def _prompt_label(result: dict) -> str | None:
    prompt = result.get("prompt")
    if isinstance(prompt, dict):
        label = prompt.get("label") or prompt.get("raw")
        return label if isinstance(label, str) else None
    return None


LABEL_CHARS = 60


def short_label(label: str | None) -> str | None:
    """A prompt label fit for a run name and variant: its first line, cut, with a hash of the whole
    label when anything was cut (promptfoo labels a prompt with its whole text by default)."""
    if label is None:
        return None
    first = " ".join(label.strip().splitlines()[0].split()) if label.strip() else ""
    if first == label and len(label) <= LABEL_CHARS:
        return label
    digest = hashlib.sha1(label.encode()).hexdigest()[:8]
    return f"{first[:LABEL_CHARS].rstrip()}… #{digest}"


def _harness(prompts: list[dict], provider: str, prompt_key: Any, label: str | None, judged: list, n_errored: int) -> dict:
    for prompt in prompts:
        if prompt.get("provider") != provider or (prompt.get("id") != prompt_key and prompt.get("label") != label):
            continue
        metrics = prompt.get("metrics") if isinstance(prompt.get("metrics"), dict) else {}
        counts = [metrics.get(k) for k in ("testPassCount", "testFailCount", "testErrorCount")]
        if not all(isinstance(c, int) and not isinstance(c, bool) for c in counts) or not sum(counts):
            return {}
        passed, failed, errors = counts
        # errored tests are no verdict, here as in promptfoo: compare the pass rate of the rest
        graded = passed + failed
        aggregate = HarnessAggregate(
            "testPassCount/(testPassCount+testFailCount)", None, passed / graded if graded else None, graded,
            not_compared=None if graded else f"every prediction errored ({errors} tests)",
        )
        return agreement(aggregate, [float(p.is_correct) for p in judged], len(judged), n_errored=n_errored)
    return {}


def _rendered(result: dict) -> tuple[str | None, list[dict] | None]:
    prompt = result.get("prompt")
    raw = prompt.get("raw") if isinstance(prompt, dict) else prompt
    if not isinstance(raw, str):
        return None, None
    # chat prompts are rendered as a JSON list of messages
    if raw.lstrip().startswith("["):
        messages = try_parse(raw)
        if isinstance(messages, list) and all(isinstance(m, dict) for m in messages):
            return raw, messages
    return raw, None


def _output(response: Any) -> str | None:
    output = response.get("output") if isinstance(response, dict) else None
    if output is None or isinstance(output, str):
        return output
    return json.dumps(output, ensure_ascii=False)


def _result(result: dict, where: str) -> tuple[InstanceRecord, PredictionRecord]:
    test_idx = result.get("testIdx")
    if not isinstance(test_idx, int) or isinstance(test_idx, bool):
        raise IngestError(f"{where}: testIdx {test_idx!r} is not a number")
    success = result.get("success")
    if not isinstance(success, bool):
        raise IngestError(f"{where}: success {success!r} is not true/false")
    score = result.get("score")
    if score is not None and (not isinstance(score, (int, float)) or isinstance(score, bool)):
        raise IngestError(f"{where}: score {score!r} is not a number")
    # objects in promptfoo's export: of another type, the result is not one Faultline can read
    # (a string response would be stored as a prediction with no output)
    for key in ("response", "testCase", "gradingResult", "vars"):
        if result.get(key) is not None and not isinstance(result[key], dict):
            raise IngestError(f"{where}: {key} is {json_type(result[key])} ({str(result[key])[:60]!r}), "
                              "where promptfoo writes an object")
    if result.get("error") is not None and not isinstance(result["error"], str):
        raise IngestError(f"{where}: error {result['error']!r} is not text")
    test_case = result.get("testCase") if isinstance(result.get("testCase"), dict) else {}
    vars_ = result.get("vars") if isinstance(result.get("vars"), dict) else test_case.get("vars")
    grading = result.get("gradingResult") if isinstance(result.get("gradingResult"), dict) else {}
    components = [c for c in grading.get("componentResults") or [] if isinstance(c, dict)]
    asserts = [a for a in test_case.get("assert") or [] if isinstance(a, dict)]
    refs = [Reference(text=f"{a.get('type')}: {a['value']}", correct=True) for a in asserts if isinstance(a.get("value"), str)]
    text, messages = _rendered(result)
    infra = result.get("failureReason") == FAILURE_ERROR
    error = result.get("error") if isinstance(result.get("error"), str) else None
    finish_reason, output_tokens = _finish(result.get("response"))
    instance_id = str(test_idx)
    instance = InstanceRecord(
        instance_id=instance_id,
        raw_instance_id=instance_id,
        input_text=text,
        input_messages=messages,
        refs=refs,
        question_hash=question_hash(text),
        prompt_text=text,
    )
    assertions = [
        {k: c.get(k) for k in ("pass", "score", "reason")} | {"assertion": c.get("assertion")}
        for c in components
    ]
    prediction = PredictionRecord(
        instance_id=instance_id,
        output_text=_output(result.get("response")),
        metrics={"score": float(score)} if score is not None else {},
        annotations={k: v for k, v in (("vars", vars_), ("assertions", assertions), ("reason", grading.get("reason"))) if v} or None,
        score=None if infra or score is None else float(score),
        is_correct=None if infra else success,
        infra_error=infra,
        error_message=error if infra else None,
        judge_notes=_judge_notes(grading, components),
        finish_reason=finish_reason,
        output_tokens=output_tokens,
    )
    return instance, prediction


SOURCE = Source(
    FORMAT, looks_like, read, count_runs, "a JSON object starting with evalId and holding results",
    jsonl_lookalikes=((frozenset({"provider", "testIdx", "gradingResult"}), "promptfoo results, one per line; write "
                       "the export JSON instead (promptfoo export, or promptfoo eval -o results.json)"),),
)
