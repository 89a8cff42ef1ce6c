"""Every verdict rule in one place: which scale a metric is on, the threshold, how a run is judged,
and the check of Faultline's number against the harness's own headline.

A scale comes from evidence, never from a metric's name alone and never from one run's data.
The evidence, in order: the user's `--scale` (or `--config`), what the format itself declares
(Inspect's C/I letters, a boolean column, an EEE result's min/max, HELM's "Jury Score" metrics),
the registry METRICS below, and the accuracy-like name rule (`*_acc`, `*exact_match*`,
`*_accuracy`: 0/1). Once every run of an ingest is read, the first candidate that the dataset's
whole column fits (every model, every run) is used; a candidate the data contradict — a value
outside it — is never applied (`settle`). When no candidate is left and no `--pass-threshold`
says where the line is, the dataset is refused with the flag to give (`refusal`): Faultline does
not guess a 0–5 or 0–10 scale.

Pass when the score reaches RELATIVE_THRESHOLD of the way from the scale's bottom to its top; for
lower-is-better metrics, when it stays at or below 1 - RELATIVE_THRESHOLD of the way. Non-finite
scores (NaN, ±inf) are never judged.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable

from .errors import IngestError

FALLBACK_METRICS = (
    "exact_match",
    "quasi_exact_match",
    "final_number_exact_match",
    "math_equiv_chain_of_thought",
    "pass",
)
RELATIVE_THRESHOLD = 0.7

# Bookkeeping statistics every HELM run reports; never a task's score.
GENERIC_STATS = {
    "num_prompt_tokens", "num_output_tokens", "num_completion_tokens", "num_train_instances",
    "num_train_trials", "num_references", "num_bytes", "num_perplexity_tokens", "prompt_truncated",
    "inference_runtime", "inference_denoised_runtime", "inference_idealized_runtime",
    "batch_size", "training_co2_cost", "training_energy_cost", "logprob", "max_prob",
    "finish_reason_endoftext", "finish_reason_length", "finish_reason_stop",
    "finish_reason_unknown", "num_instances", "predicted_index",
}


@dataclass(frozen=True)
class MetricInfo:
    """What is known about a metric: its scale (None: no fixed scale) and direction."""

    low: float | None
    high: float | None
    lower_is_better: bool = False
    binary: bool = False


_BINARY = MetricInfo(0.0, 1.0, binary=True)
_UNIT = MetricInfo(0.0, 1.0)
_PERCENT = MetricInfo(0.0, 100.0)
_JURY = MetricInfo(1.0, 5.0)
_ERROR = MetricInfo(None, None, lower_is_better=True)

# The shipped registry (docs/verdicts.md lists it). Names are matched
# case-insensitively, without an lm-eval `,filter` or a HELM `@sub_split` suffix.
METRICS: dict[str, MetricInfo] = {
    **dict.fromkeys((
        "exact_match", "quasi_exact_match", "prefix_exact_match", "quasi_prefix_exact_match",
        "final_number_exact_match", "math_equiv", "math_equiv_chain_of_thought", "pass", "pass@1",
        "acc", "acc_norm", "acc_mutual_info", "mc1", "em", "accuracy", "correct", "contains",
        "match", "choice", "includes", "bleu_acc", "rouge1_acc", "rouge2_acc", "rougel_acc",
        "bleurt_acc", "ifeval_strict_accuracy", "prompt_level_strict_acc", "inst_level_strict_acc",
        "prompt_level_loose_acc", "inst_level_loose_acc", "chain_of_thought_correctness",
    ), _BINARY),
    **dict.fromkeys((
        "f1", "f1_score", "token_f1", "mc2", "rouge_1", "rouge_2", "rouge_l", "rouge1", "rouge2",
        "rougel", "rougelsum", "rouge1_max", "rouge2_max", "rougel_max", "bertscore",
        "bertscore-f", "bertscore-p", "bertscore-r", "bleu_1", "bleu_4", "meteor", "bleurt_max",
        "model_graded_fact", "model_graded_qa",
        # HELM Safety: each annotator answers 1 (safe), 0.5 (may be unsafe) or 0 (unsafe); the
        # score is their mean (helm/benchmark/annotation/*_annotator.py, metrics/safety_metrics.py)
        "safety_score", "sst_score", "xst_score", "harmbench_score", "anthropic_red_team_score",
    ), _UNIT),
    **dict.fromkeys(("bleu", "bleu_max", "sacrebleu", "chrf", "chrf++"), _PERCENT),
    **dict.fromkeys(("ter",), MetricInfo(0.0, 100.0, lower_is_better=True)),
    **dict.fromkeys(("wer", "cer"), MetricInfo(0.0, 1.0, lower_is_better=True)),
    **dict.fromkeys((
        "helpfulness", "harmlessness", "understandability", "completeness", "conciseness",
        "coherence", "relevance", "fluency", "consistency", "faithfulness",
    ), _JURY),
    **dict.fromkeys((
        "mae", "rmse", "mse", "absolute_value_difference", "perplexity", "word_perplexity",
        "byte_perplexity", "bits_per_byte", "logprob_per_byte", "edit_distance", "distance",
        "longest_common_prefix_length", "brier_score",
    ), _ERROR),
}


def metric_key(name: str) -> str:
    """A metric's registry key: lower-case, without lm-eval's `,filter` or HELM's `@sub_split`."""
    return name.split(",", 1)[0].split("@", 1)[0].strip().lower()


def lookup(name: str | None) -> MetricInfo | None:
    """The registry's entry, else the accuracy-like name rule's 0/1."""
    if not name:
        return None
    return METRICS.get(metric_key(name)) or (_BINARY if _accuracy_like(metric_key(name)) else None)


def _accuracy_like(key: str) -> bool:
    # accuracy-like names of HELM/lm-eval variants: quasi_exact_match_fr, rougeLsum_acc, ...
    return key.endswith("_acc") or "exact_match" in key or key.endswith("_accuracy")


# scale sources (runs.scale_source) that say a metric is 0/1
_BINARY_SOURCES = {"binary", "name rule"}


def is_binary_rule(metric: str | None, low, high, scale_source: str | None) -> bool:
    """Whether a stored run's metric is 0/1 by its rule (its scale and where that came from, not
    its data): its verdict is "pass = correct", the mean of its scores is the pass rate, and no
    threshold is the analyst's to move. A store from before migration 010 kept no bottom: a 0/1
    scale's bottom can only be 0."""
    if high != 1 or low not in (0, None):
        return False
    if scale_source in _BINARY_SOURCES:
        return True
    info = lookup(metric)
    return bool(scale_source == "registry" and info is not None and info.binary)


def is_finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


@dataclass(frozen=True)
class Scale:
    """A scale some evidence puts a metric on. `source` is the short label stored in
    runs.scale_source; `why` says what the evidence is, for the summary."""

    low: float
    high: float
    source: str
    why: str = ""
    binary: bool = False

    def fits(self, lowest: float, highest: float) -> bool:
        slack = 1e-9 * max(1.0, abs(self.low), abs(self.high))
        return lowest >= self.low - slack and highest <= self.high + slack

    @property
    def span(self) -> str:
        return f"{self.low:g}–{self.high:g}"


def registry_scales(metric: str | None) -> list[Scale]:
    """What the registry, then the name rule, say about a metric's scale."""
    if not metric:
        return []
    key = metric_key(metric)
    info = METRICS.get(key)
    if info is not None and info.high is not None:
        return [Scale(info.low or 0.0, info.high, "registry", f"the registry's entry for {key}", info.binary)]
    if info is None and _accuracy_like(key):
        return [Scale(0.0, 1.0, "name rule", f"the name {metric} (accuracy-like names are 0/1)", True)]
    return []


@dataclass(frozen=True)
class DatasetOverride:
    metric: str | None = None
    threshold: float | None = None
    scale: tuple[float, float] | None = None


@dataclass(frozen=True)
class PassConfig:
    """User settings: per-dataset metric/threshold/scale overrides ('*' for every dataset) and
    dataset-name aliases (raw name → canonical name), from flags and `--config`."""

    overrides: dict[str, DatasetOverride]
    aliases: dict[str, str] = field(default_factory=dict)

    @classmethod
    def empty(cls) -> "PassConfig":
        return cls({})

    def for_dataset(self, *names: str | None) -> DatasetOverride:
        """The override for the first of `names` (canonical name, then the log's own) that has one."""
        specific = next((self.overrides[n] for n in names if n and n in self.overrides), DatasetOverride())
        default = self.overrides.get("*", DatasetOverride())
        return DatasetOverride(
            metric=specific.metric or default.metric,
            threshold=specific.threshold if specific.threshold is not None else default.threshold,
            scale=specific.scale or default.scale,
        )

    @classmethod
    def build(
        cls,
        thresholds: Iterable[str] = (),
        metrics: Iterable[str] = (),
        config_file: str | Path | None = None,
        scales: Iterable[str] = (),
    ) -> "PassConfig":
        """From `--pass-threshold [DATASET=]X`, `--main-metric [DATASET=]NAME`,
        `--scale [DATASET=]LOW:HIGH`, `--config FILE`."""
        raw: dict[str, dict[str, Any]] = {}
        aliases: dict[str, str] = {}
        if config_file:
            raw, aliases = _load_config_file(Path(config_file))
        for item in thresholds:
            dataset, value = _split_assignment(item, "--pass-threshold")
            raw.setdefault(dataset, {})["pass_threshold"] = _number(value, f"--pass-threshold {item}")
        for item in metrics:
            dataset, value = _split_assignment(item, "--main-metric")
            raw.setdefault(dataset, {})["main_metric"] = value
        for item in scales:
            dataset, value = _split_assignment(item, "--scale")
            low, sep, high = value.partition(":")
            if not sep:
                raise IngestError(f"--scale {item}: expected DATASET=LOW:HIGH (e.g. --scale ratings=1:3)")
            raw.setdefault(dataset, {})["scale"] = _scale((_number(low, f"--scale {item}"), _number(high, f"--scale {item}")), f"--scale {item}")
        return cls(
            {
                ds: DatasetOverride(metric=v.get("main_metric"), threshold=v.get("pass_threshold"), scale=v.get("scale"))
                for ds, v in raw.items()
            },
            aliases,
        )


def _number(value: Any, where: str) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise IngestError(f"{where}: {value!r} is not a number") from None
    if not math.isfinite(number):
        raise IngestError(f"{where}: {value!r} is not a finite number")
    return number


def _scale(pair: tuple[float, float], where: str) -> tuple[float, float]:
    if not pair[0] < pair[1]:
        raise IngestError(f"{where}: the lowest score must be below the highest")
    return pair


def _split_assignment(item: str, flag: str) -> tuple[str, str]:
    if "=" in item:
        dataset, value = item.split("=", 1)
        if not dataset or not value:
            raise IngestError(f"{flag} {item}: expected DATASET=VALUE or VALUE")
        return dataset, value
    return "*", item


CONFIG_KEYS = {"main_metric", "pass_threshold", "scale"}


def _load_config_file(path: Path) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    import yaml  # YAML is a superset of JSON, so one loader reads both

    from .files import read_capped

    if not path.exists():
        raise IngestError(f"{path}: config file not found")
    try:
        data = yaml.safe_load(read_capped(path).decode("utf-8"))
    except (UnicodeDecodeError, yaml.YAMLError) as exc:
        raise IngestError(f"{path}: not valid YAML/JSON: {exc}") from None
    except RecursionError:
        raise IngestError(f"{path}: nested too deeply to read") from None
    data = data if isinstance(data, dict) else {}
    datasets = data.get("datasets", {} if "aliases" in data else None)
    if not isinstance(datasets, dict):
        raise IngestError(
            f"{path}: expected a mapping `datasets: {{NAME: {{main_metric: ..., pass_threshold: ..., scale: [LOW, HIGH]}}}}` "
            "and/or `aliases: {NAME: CANONICAL_NAME}`"
        )
    out: dict[str, dict[str, Any]] = {}
    for name, spec in datasets.items():
        if not isinstance(spec, dict) or not set(spec) <= CONFIG_KEYS:
            raise IngestError(
                f"{path}: datasets.{name}: expected keys main_metric, pass_threshold and/or scale"
            )
        threshold = spec.get("pass_threshold")
        if threshold is not None and (not isinstance(threshold, (int, float)) or not math.isfinite(threshold)):
            raise IngestError(f"{path}: datasets.{name}.pass_threshold: {threshold!r} is not a number")
        scale = spec.get("scale")
        if scale is not None:
            if not (isinstance(scale, list) and len(scale) == 2):
                raise IngestError(f"{path}: datasets.{name}.scale: expected [LOW, HIGH]")
            spec = {**spec, "scale": _scale(tuple(_number(v, f"{path}: datasets.{name}.scale") for v in scale), f"{path}: datasets.{name}.scale")}
        out[str(name)] = {k: v for k, v in spec.items() if v is not None}
    aliases = data.get("aliases") or {}
    if not isinstance(aliases, dict) or not all(isinstance(v, str) and v for v in aliases.values()):
        raise IngestError(f"{path}: aliases: expected a mapping NAME: CANONICAL_NAME")
    return out, {str(k): v for k, v in aliases.items()}


@dataclass(frozen=True)
class PassRule:
    """Where the line is for one run. `candidates` are the scales the evidence proposes, in
    order; the first is applied while the run is read, and `settle` replaces it once the
    dataset's whole column is known. threshold None: no verdict yet (no candidate, no
    --pass-threshold)."""

    metric: str | None
    source: str
    low: float | None
    high: float | None
    lower_is_better: bool
    threshold: float | None
    scale_source: str | None
    binary: bool = False
    candidates: tuple[Scale, ...] = ()
    scale_why: str = ""
    user_scale: bool = False  # the first candidate is the user's --scale: never passed over
    threshold_from_config: bool = False
    rejected: tuple[str, ...] = ()  # candidates the data contradicted, said in the summary
    refused: str | None = None  # why no verdict can be given (see `refusal`)

    def judge(self, score: float | None) -> bool | None:
        if self.threshold is None or not is_finite(score):
            return None
        return score <= self.threshold if self.lower_is_better else score >= self.threshold

    def run_fields(self) -> dict[str, Any]:
        """The runs columns that say how a run was judged."""
        return {
            "metric_min": self.low,
            "metric_max": self.high,
            "lower_is_better": self.lower_is_better,
            "pass_threshold": self.threshold,
            "scale_source": self.scale_source if self.metric else None,
            "verdict_rule": self.describe() if self.metric else None,
        }

    def describe(self) -> str:
        """The rule in words, as the summary and the data page say it."""
        if self.metric is None:
            return "no metric: no verdicts"
        if self.threshold is None:
            return f"no verdict on {self.metric}: {self.refused or 'its scale is unknown'}"
        op = "≤" if self.lower_is_better else "≥"
        below = "above" if self.lower_is_better else "below"
        if self.binary and not self.threshold_from_config:
            return f"pass when {self.metric} = 1, fail when 0 (0/1 from {self.scale_why or self.scale_source})"
        if self.threshold_from_config:
            scale = f"; its scale {self.low:g}–{self.high:g} from {self.scale_why}" if self.high is not None else ""
            return f"pass when {self.metric} {op} {self.threshold:.4g}, fail {below} (--pass-threshold{scale})"
        share = 1 - RELATIVE_THRESHOLD if self.lower_is_better else RELATIVE_THRESHOLD
        return (
            f"pass when {self.metric} {op} {self.threshold:.4g}, fail {below} ({share:g} of the way up its "
            f"{self.low:g}–{self.high:g} scale, from {self.scale_why or self.scale_source})"
        )


def _threshold(low: float, high: float, lower_is_better: bool) -> float:
    share = 1 - RELATIVE_THRESHOLD if lower_is_better else RELATIVE_THRESHOLD
    return round(low + share * (high - low), 12)  # 0.3, not 0.30000000000000004, in the summary and store


def make_rule(
    metric: str | None,
    source: str,
    override: DatasetOverride,
    lower_is_better: bool | None = None,
    scale: tuple[float, float, str] | None = None,
    evidence: Iterable[Scale] = (),
) -> PassRule:
    """The rule for a run's metric. `lower_is_better` is the log's own word on direction (HELM
    schema, lm-eval higher_is_better); `scale` a scale the format itself defines (e.g. Inspect's
    C/I letters, a boolean column: label "binary"), `evidence` further scales the log declares
    (HELM's "Jury Score" display names). The first candidate applies until `settle`."""
    info = lookup(metric)
    lower = lower_is_better if lower_is_better is not None else bool(info and info.lower_is_better)
    candidates: list[Scale] = []
    if override.scale is not None:
        candidates.append(Scale(*override.scale, "config", f"--scale {override.scale[0]:g}:{override.scale[1]:g}"))
    if scale is not None:
        low, high, label = scale
        candidates.append(Scale(low, high, label, _FORMAT_WHY.get(label, label), binary=label == "binary" and (low, high) == (0.0, 1.0)))
    candidates.extend(evidence)
    candidates.extend(registry_scales(metric))
    rule = PassRule(
        metric, source, None, None, lower, None, None,
        candidates=tuple(candidates), user_scale=override.scale is not None,
        threshold_from_config=override.threshold is not None,
    )
    return _apply(rule, candidates[0] if candidates else None, override.threshold)


_FORMAT_WHY = {
    "binary": "the log's true/false verdicts",
    "token F1": "per-document token F1",
    "inspect value_to_float": "Inspect's value_to_float (C 1, P 0.5, I 0, N 0)",
}


def _apply(rule: PassRule, scale: Scale | None, config_threshold: float | None) -> PassRule:
    if scale is None:
        threshold = config_threshold
        return replace(rule, low=None, high=None, threshold=threshold, binary=False,
                       scale_source="config" if threshold is not None else None, scale_why="")
    threshold = config_threshold if config_threshold is not None else _threshold(scale.low, scale.high, rule.lower_is_better)
    return replace(rule, low=scale.low, high=scale.high, threshold=threshold, binary=scale.binary,
                   scale_source=scale.source, scale_why=scale.why)


def settle(rule: PassRule, lowest: float | None, highest: float | None) -> PassRule:
    """The rule once the dataset's whole column is known (`lowest`..`highest` over every run of
    the ingest): the first candidate the data fit; candidates they contradict are passed over
    and named. No candidate left and no --pass-threshold: refused."""
    if rule.metric is None or lowest is None or highest is None:
        return rule
    config_threshold = rule.threshold if rule.threshold_from_config else None
    rejected = []
    for n, scale in enumerate(rule.candidates):
        if scale.fits(lowest, highest):
            return replace(_apply(rule, scale, config_threshold), rejected=tuple(rejected))
        outside = lowest if lowest < scale.low else highest
        rejected.append(f"{scale.span} from {scale.why or scale.source} (a score of {outside:g} lies outside it)")
        if n == 0 and rule.user_scale:
            break
    observed = f"its scores run {lowest:g}–{highest:g}"
    if rule.user_scale:
        refused = f"your {rejected[0]}"
    elif rejected:
        refused = f"{observed}, outside every scale the evidence gives: {'; '.join(rejected)}"
    else:
        refused = f"nothing says what scale it is on ({observed}; neither the log nor the registry declares one)"
    if config_threshold is not None and not rule.user_scale:
        return replace(_apply(rule, None, config_threshold), rejected=tuple(rejected))
    return replace(_apply(rule, None, None), rejected=tuple(rejected), refused=refused)


def flag(name: str, dataset: str, value: str) -> str:
    """A flag as the user would type it in a shell (dataset names may hold spaces)."""
    import shlex

    return f"{name} {shlex.quote(f'{dataset}={value}')}"


def refusal(problems: list[tuple[str, str, str, str]]) -> IngestError:
    """The error for datasets whose scale nothing decides: (dataset, metric, where, why) each,
    with the exact flags that would decide it."""
    lines = ["no verdicts without a scale, and Faultline does not guess one:"]
    for dataset, metric, where, why in problems:
        lines.append(
            f"  {dataset}: {metric} ({where}): {why}. Give its scale with {flag('--scale', dataset, 'LOW:HIGH')} "
            f"(the lowest and highest score possible), or the line itself with {flag('--pass-threshold', dataset, 'X')}"
        )
    return IngestError("\n".join(lines))


@dataclass(frozen=True)
class HarnessAggregate:
    """The harness's own number for the run: what Faultline's recomputed rate is checked against."""

    metric: str
    split: str | None
    value: float | None
    n: int | None
    not_compared: str | None = None  # why it cannot be compared (e.g. a corpus-level aggregate)
    may_be_percent: bool = False  # the writer may report this mean on 0–100 (Inspect logs from other tools)
    remark: str | None = None  # context for the note (e.g. which of several results this is)


def _fraction(value: float, n: int) -> int | None:
    """k when value is k/n (a pass rate over n samples), else None."""
    k = round(value * n)
    return k if abs(k - value * n) <= 1e-6 * max(1, n) else None


def agreement(
    aggregate: HarnessAggregate | None,
    scores: list[float],
    n_logged: int,
    *,
    judged: str | None = None,
    headline: str | None = None,
    n_errored: int = 0,
) -> dict[str, Any]:
    """The RunRecord's harness_* fields: the harness's headline, and whether Faultline's number equals it.

    `scores` are the finite scores of the run's samples in the headline's split, on the
    headline's metric (for a 0/1 metric their mean is the pass rate); `n_logged` how many samples
    of that split the log holds, `n_errored` how many of them errored. `judged` is the metric
    Faultline's verdicts use and `headline` the one the harness reports as its headline: judging
    on another metric than the headline is a difference, whatever the numbers."""
    out: dict[str, Any] = {"headline_metric": headline} if headline else {}
    if aggregate is not None:
        out.update(
            harness_metric=aggregate.metric, harness_split=aggregate.split,
            harness_value=aggregate.value, harness_n=aggregate.n,
        )
    remark = f"; {aggregate.remark}" if aggregate is not None and aggregate.remark else ""
    if judged and headline and judged != headline:
        value = f" ({aggregate.value:.6g})" if aggregate is not None and is_finite(aggregate.value) else ""
        out["harness_agrees"] = False
        out["harness_note"] = f"differs: judged on {judged}, but the harness's headline is {headline}{value}{remark}"
        return out
    if aggregate is None:
        return out
    if aggregate.not_compared or not is_finite(aggregate.value):
        out["harness_note"] = f"not compared: {aggregate.not_compared or 'the aggregate is not a number'}{remark}"
        return out
    value = float(aggregate.value)
    if not scores:
        if n_errored and n_errored >= n_logged:
            out["harness_note"] = f"not compared: every prediction errored ({n_errored}){remark}"
        else:
            out["harness_agrees"] = False
            out["harness_note"] = f"differs: no scored sample here, the log's aggregate is {value:.6g}{remark}"
        return out
    binary = all(s in (0.0, 1.0) for s in scores)  # e.g. truthfulqa_mc2's `acc` is a probability per doc
    ours = sum(scores) / len(scores)
    passed = int(sum(scores))
    where = f"{aggregate.metric}" + (f", split {aggregate.split}" if aggregate.split else "")
    mine = f"{ours:.6g} = {passed}/{len(scores)}" if binary else f"mean {ours:.6g} over {len(scores)}"
    unscored = f"; {n_logged - len(scores)} of {n_logged} samples have no score" if len(scores) != n_logged else ""
    if aggregate.n is not None and aggregate.n > n_logged:
        out.update(_partial(aggregate, value, passed if binary else None, len(scores), n_logged, where, remark))
        return out
    if aggregate.n is None and binary and _fraction(value, len(scores)) is None:
        out["harness_note"] = (
            f"not compared: the log's {value:.6g} ({where}) is no pass rate over the {len(scores)} scored "
            f"sample(s) it holds, so it counts samples the log does not have{remark}"
        )
        return out
    why = f"; the log holds {n_logged} samples, its aggregate counts {aggregate.n}" if aggregate.n is not None and aggregate.n != n_logged else unscored
    tolerance = 1e-9 * max(1, len(scores), aggregate.n or 0)
    if abs(ours - value) <= tolerance:
        out["harness_agrees"] = True
        out["harness_note"] = f"agrees: {mine} ({where}){why}{remark}"
    elif aggregate.may_be_percent and abs(100 * ours - value) <= 100 * tolerance:
        out["harness_agrees"] = True
        out["harness_note"] = f"agrees: {mine} ({where}, which the log reports on 0–100 as {value:.6g}){why}{remark}"
    else:
        out["harness_agrees"] = False
        out["harness_note"] = f"differs by {abs(ours - value):.4g}: {mine} here, the log says {value:.6g} ({where}){why}{remark}"
    return out


def _partial(aggregate: HarnessAggregate, value: float, passed: int | None, scored: int, n_logged: int, where: str, remark: str) -> dict:
    """A log holding part of the samples its aggregate counts: the numbers cannot be equal, but a
    pass rate can still be impossible (more failures here than the aggregate allows)."""
    total = aggregate.n
    held = f"the log holds {n_logged} of the {total} samples its aggregate counts"
    if passed is not None and (k := _fraction(value, total)) is not None:
        failed = scored - passed
        if passed > k or failed > total - k:
            return {"harness_agrees": False, "harness_note": (
                f"differs: {passed}/{scored} pass here, more {'passes' if passed > k else 'failures'} than the log's "
                f"{value:.6g} = {k}/{total} allows ({where}); {held}{remark}")}
        return {"harness_note": f"not compared: {held} ({passed}/{scored} pass here, consistent with {value:.6g} = {k}/{total}, {where}){remark}"}
    return {"harness_note": f"not compared: {held} ({where}, {value:.6g}){remark}"}
