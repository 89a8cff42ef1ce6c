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

import json
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterable

from .errors import Ask, IngestError, SettingsNeeded
from .flags import assignment
from .numbers import NumberError, decimal_number

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


# The pass rule itself, once in Python and once in SQL (for runs judged again in the store once
# their scale is known, store/runs.py): tests/core/test_verdicts.py holds the two equal over every
# kind of score, threshold and direction.

def judged(score: Any, threshold: float | None, lower_is_better: bool) -> bool | None:
    """Pass (True) or fail (False) of one score; None when there is no line or no finite score."""
    if threshold is None or not is_finite(score):
        return None
    return score <= threshold if lower_is_better else score >= threshold


def judged_sql(score: str, threshold: str, lower_is_better: str, infra_error: str) -> str:
    """`judged` as a SQL expression over columns (names from query text, never input); a failed
    request (`infra_error`) gets no verdict either, as readers give it none."""
    return (f"CASE WHEN {infra_error} OR {threshold} IS NULL OR NOT isfinite({score}) THEN NULL "
            f"WHEN {lower_is_better} THEN {score} <= {threshold} ELSE {score} >= {threshold} END")


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
        config_file: "tuple[Path, bytes] | None" = None,
        scales: Iterable[str] = (),
    ) -> "PassConfig":
        """From `--pass-threshold [DATASET=]X`, `--main-metric [DATASET=]NAME`,
        `--scale [DATASET=]LOW:HIGH`, `--config FILE` (its path and bytes, read by the caller
        within the size cap: ingest.options.read_config)."""
        raw: dict[str, dict[str, Any]] = {}
        aliases: dict[str, str] = {}
        if config_file:
            raw, aliases = _parse_config_file(*config_file)
        for item in thresholds:
            dataset, value = assignment(item, "--pass-threshold", "DATASET=VALUE", every="*")
            raw.setdefault(dataset, {})["pass_threshold"] = _number(value, f"--pass-threshold {item}")
        for item in metrics:
            dataset, value = assignment(item, "--main-metric", "DATASET=VALUE", every="*")
            raw.setdefault(dataset, {})["main_metric"] = value
        for item in scales:
            dataset, value = assignment(item, "--scale", "DATASET=VALUE", every="*")
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
    """A flag's or config's number: ASCII digits only (core.numbers; float() takes "١" and "1_0")."""
    try:
        return decimal_number(value, "")
    except NumberError as exc:
        raise IngestError(f"{where}: {exc.message}") from None


def _scale(pair: tuple[float, float], where: str) -> tuple[float, float]:
    if not pair[0] < pair[1]:
        raise IngestError(f"{where}: the lowest score must be below the highest")
    return pair


CONFIG_KEYS = {"main_metric", "pass_threshold", "scale"}


def _parse_config_file(path: Path, content: bytes) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    import yaml  # YAML is a superset of JSON, so one loader reads both

    try:
        data = yaml.safe_load(content.decode("utf-8"))
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
    unreadable: "Unreadable | None" = None  # values that are no numbers: no verdicts, the ingest refused

    def judge(self, score: float | None) -> bool | None:
        return None if self.unreadable is not None else judged(score, self.threshold, self.lower_is_better)

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
        if self.unreadable is not None:
            return f"no verdict on {self.metric}: {self.unreadable.describe()}"
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
    unreadable: "Unreadable | None" = None,
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
        threshold_from_config=override.threshold is not None, unreadable=unreadable,
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
    """A flag as the user would type it in a shell, in text that does not ask it of this load
    (a summary's note, advice for another load); an error that asks for it raises its `Ask`."""
    return Ask(name, dataset, value).typed


def refusal(problems: list[tuple[str, str, str, str]]) -> SettingsNeeded:
    """The error for datasets whose scale nothing decides: (dataset, metric, where, why) each,
    with the exact flags that would decide it."""
    lines = ["no verdicts without a scale, and Faultline does not guess one:"]
    asks: list[Ask] = []
    for dataset, metric, where, why in problems:
        scale, line = Ask("--scale", dataset, "LOW:HIGH"), Ask("--pass-threshold", dataset, "X")
        lines.append(
            f"  {dataset}: {metric} ({where}): {why}. Give its scale with {scale.typed} "
            f"(the lowest and highest score possible), or the line itself with {line.typed}"
        )
        asks += (scale, line)
    return SettingsNeeded("\n".join(lines), asks)


EXAMPLE_CHARS = 60


@dataclass(frozen=True)
class Unreadable:
    """Values of the metric a run is judged on that Faultline cannot read as numbers (text such
    as "G:50.0 : T:100.0", a dict the log documents no field of): the run gets no verdicts and
    the ingest is refused with what to do (`unreadable_refusal`), never judged as if they were 0."""

    kind: str  # "text", "dicts", "lists"
    example: str  # one such value, as the log writes it (cut)
    count: int  # how many values are unreadable
    total: int  # of how many values of the metric
    advice: str  # what to do, with the flags: "Judge on another scorer with --main-metric …"
    asks: tuple[Ask, ...] = ()  # the flags `advice` asks the user to give this load

    def describe(self) -> str:
        return f"{self.count:,} of {self.total:,} values are {self.kind} Faultline cannot read as a number, e.g. {self.example}"


def unreadable(values: list, advice: str, readable: "Callable[[Any], bool]", asks: Iterable[Ask] = ()) -> Unreadable | None:
    """What is wrong with `values` (the judged metric's raw values, absent ones left out) when
    some are not numbers by `readable`; None when all are. `asks`: the flags `advice` names that
    this load may be given again with."""
    bad = [v for v in values if not readable(v)]
    if not bad:
        return None
    kinds = {"str": "text", "dict": "dicts", "list": "lists"}
    kind = kinds.get(type(bad[0]).__name__, type(bad[0]).__name__ + " values")
    example = json.dumps(bad[0], ensure_ascii=False, default=str)
    if len(example) > EXAMPLE_CHARS:
        example = example[:EXAMPLE_CHARS] + "…"
    return Unreadable(kind, example, len(bad), len(values), advice, tuple(asks))


def unreadable_refusal(problems: list[tuple[str, str, str, Unreadable]]) -> SettingsNeeded:
    """The error for datasets whose judged values are no numbers: (dataset, metric, where, what) each."""
    lines = ["no verdicts from scores that are not numbers (Faultline never takes them as 0):"]
    lines += [f"  {dataset}: {metric} ({where}): {what.describe()}. {what.advice}" for dataset, metric, where, what in problems]
    return SettingsNeeded("\n".join(lines), [ask for *_, what in problems for ask in what.asks])


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


def printed_decimals(value: float) -> int | None:
    """How many decimals the log's writer printed: those of the shortest text that reads back as
    `value` (59.6154 → 4; 0.5961538461538461 → 16). None for a whole number: 1.0 or 60.0 is
    taken as exact, not as a rounding, so 0.96 never "agrees" with a header of 1."""
    from decimal import Decimal

    exponent = Decimal(repr(float(value))).normalize().as_tuple().exponent
    return -exponent if isinstance(exponent, int) and exponent < 0 else None


# A printed number is precise enough to agree by rounding when it keeps at least this many
# decimals of a 0–1 rate (0.596, or 59.6 on 0–100): coarser (0.6, 60) cannot tell 0.55 from 0.65.
MIN_RATE_DECIMALS = 3


@dataclass(frozen=True)
class Printed:
    """A harness number as the log prints it, read on one scale: `factor` 1 (0–1) or 100 (0–100)."""

    value: float
    factor: float
    decimals: int | None  # None: a whole number, exact as printed

    @property
    def half_unit(self) -> float:
        """Half a unit in the last printed place, on the 0–1 scale: how far off a rounded number can be."""
        return 0.0 if self.decimals is None else 0.5 * 10.0 ** -self.decimals / self.factor

    @property
    def coarse(self) -> bool:
        return self.decimals is not None and self.decimals + round(math.log10(self.factor)) < MIN_RATE_DECIMALS

    @property
    def scale(self) -> str:
        return "0–100" if self.factor == 100 else "0–1"

    def rounds_from(self, ours: float) -> bool:
        """Whether `ours` (on 0–1) rounds to the printed value at its printed decimals."""
        if self.decimals is None:
            return False
        return abs(ours * self.factor - self.value) <= 0.5 * 10.0 ** -self.decimals * (1 + 1e-9)

    def passes(self, n: int) -> range:
        """The pass counts k of n whose rate k/n the printed value stands for: the one it equals
        (0.8 of 100: 80), else every one that rounds to it (empty: none)."""
        rate = self.value / self.factor
        k = round(rate * n)
        if 0 <= k <= n and abs(k - rate * n) <= 1e-6 * max(1, n):
            return range(k, k + 1)
        low, high = (rate - self.half_unit) * n, (rate + self.half_unit) * n
        return range(max(0, math.ceil(low - 1e-9)), min(n, math.floor(high + 1e-9)) + 1)


def _readings(aggregate: "HarnessAggregate", value: float) -> list[Printed]:
    """The scales the harness's number may be printed on: 0–1, and 0–100 when the writer may
    report a rate as a percentage (Inspect logs written by other tools)."""
    decimals = printed_decimals(value)
    readings = [Printed(value, 1.0, decimals)]
    if aggregate.may_be_percent:
        # a whole percentage (60) may be a rounding; a whole rate (0 or 1) is exact
        readings.append(Printed(value, 100.0, 0 if decimals is None else decimals))
    return readings


def _digits(printed: Printed) -> str:
    return f"{printed.decimals} decimal{'s' * (printed.decimals != 1)}"


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
        elif aggregate.n is not None and aggregate.n > n_logged:
            # a log holding part of what its aggregate counts, none of it scored: nothing to compare
            out["harness_note"] = (f"not compared: the log holds {n_logged} of the {aggregate.n} samples its aggregate "
                                   f"counts, none of them scored ({aggregate.metric}, {value:.6g}){remark}")
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
    readings = _readings(aggregate, value)
    if aggregate.n is not None and aggregate.n > n_logged:
        out.update(_partial(aggregate, readings, passed if binary else None, len(scores), n_logged, where, remark))
        return out
    if aggregate.n is None and binary and not any(r.passes(len(scores)) for r in readings):
        out["harness_note"] = (
            f"not compared: the log's {value:.6g} ({where}) is no pass rate over the {len(scores)} scored "
            f"sample(s) it holds, so it counts samples the log does not have{remark}"
        )
        return out
    why = f"; the log holds {n_logged} samples, its aggregate counts {aggregate.n}" if aggregate.n is not None and aggregate.n != n_logged else unscored
    out.update(_compare(ours, readings, mine, where, why + remark, 1e-9 * max(1, len(scores), aggregate.n or 0)))
    return out


def _compare(ours: float, readings: list[Printed], mine: str, where: str, tail: str, tolerance: float) -> dict[str, Any]:
    """Faultline's number against the harness's as the log prints it: equal (within float
    noise) on 0–1, else on 0–100; else equal once rounded to the decimals the writer printed,
    when it printed enough of them to tell; else a difference."""
    value = readings[0].value
    for printed in readings:
        if abs(ours * printed.factor - value) <= tolerance * printed.factor:
            on = "" if printed.factor == 1 else f", which the log reports on {printed.scale} as {value:.6g}"
            return {"harness_agrees": True, "harness_factor": printed.factor,
                    "harness_note": f"agrees: {mine} ({where}{on}){tail}"}
    for printed in readings:
        if printed.rounds_from(ours) and not printed.coarse:
            return {"harness_agrees": True, "harness_factor": printed.factor, "harness_note": (
                f"agrees at the printed precision: {mine} rounds to {value:.{printed.decimals}f} on {printed.scale}, "
                f"as the log prints it with {_digits(printed)} ({where}){tail}")}
    for printed in readings:
        if printed.rounds_from(ours):
            return {"harness_factor": printed.factor, "harness_note": (
                f"not compared: the log prints {value:g} on {printed.scale} with only {_digits(printed)}, too coarse "
                f"to check {mine} against (it rounds to it, but so would rates {printed.half_unit:.2g} away) ({where}){tail}")}
    # a number above 1 from a writer that may print rates as percentages is one: differ on 0–100
    percent = readings[-1].factor == 100 and abs(value) > 1
    by = f"{abs(ours * 100 - value):.4g} points on 0–100" if percent else f"{abs(ours - value):.4g}"
    return {"harness_agrees": False, "harness_factor": 100.0 if percent else 1.0,
            "harness_note": f"differs by {by}: {mine} here, the log says {value:.6g} ({where}){tail}"}


def _partial(aggregate: HarnessAggregate, readings: list[Printed], passed: int | None, scored: int, n_logged: int,
             where: str, remark: str) -> dict:
    """A log holding part of the samples its aggregate counts: the numbers cannot be equal, but a
    pass rate can still be impossible (more failures here than the aggregate allows)."""
    total = aggregate.n
    value = readings[0].value
    held = f"the log holds {n_logged} of the {total} samples its aggregate counts"
    fits = [(printed, ks) for printed in readings if (ks := printed.passes(total))]
    if passed is not None and fits:
        failed = scored - passed
        printed, ks = fits[0]
        k = f"{ks[0]}/{total}" if len(ks) == 1 else f"{ks[0]}–{ks[-1]} of {total}"
        shown = f"{value:.6g}" + (f" on {printed.scale}" if printed.factor != 1 else "")
        if all(passed > k_ or failed > total - k_ for _, ks_ in fits for k_ in ks_):
            more = "passes" if passed > ks[-1] else "failures"
            return {"harness_agrees": False, "harness_note": (
                f"differs: {passed}/{scored} pass here, more {more} than the log's {shown} = {k} allows ({where}); {held}{remark}")}
        return {"harness_note": f"not compared: {held} ({passed}/{scored} pass here, consistent with {shown} = {k}, {where}){remark}"}
    return {"harness_note": f"not compared: {held} ({where}, {value:.6g}){remark}"}
