"""Issue 23, items 4 and 5: scores are stored as the harness gave them, so that their mean is the
harness's headline (Inspect's C/P/I/N as 1/0.5/0/0); a score Faultline cannot read as a number is
refused per scorer, with an example and the flag to give, never stored as 0; and the harness
check agrees with a header printed at fewer digits (59.6154 on 0-100 for 15.5/26) when
Faultline's number rounds to it."""

from __future__ import annotations

import json

import pytest

from conftest import q, run_module
from inspect_gen import inspect_log
from ingest import IngestError, ReadOptions, ingest_paths
from core.verdicts import PassConfig

# 26 samples graded as Inspect's model_graded_qa grades them: 14 correct, 3 partial, 8 incorrect,
# 1 no answer. Inspect's accuracy() is the mean of value_to_float: (14 + 3 * 0.5) / 26 = 15.5 / 26.
GRADES = ["C"] * 14 + ["P"] * 3 + ["I"] * 8 + ["N"]
HEADLINE = 15.5 / 26  # 0.5961538461538461: "59.6%"


def accuracy(value: float, name: str = "grader", scorer: str = "grader", metric: str = "accuracy") -> list[dict]:
    return [{"name": name, "scorer": scorer, "metrics": {metric: {"name": metric, "value": value}}}]


def test_partial_credit_is_kept_so_the_mean_score_is_the_harness_headline(tmp_path, tmp_db):
    log = inspect_log(tmp_path / "qa.eval", "inspect_evals/qa", GRADES, results=accuracy(HEADLINE))
    ingest_paths([log], db=tmp_db)
    assert q(tmp_db, "SELECT score, count(*) FROM outcomes GROUP BY 1 ORDER BY 1") == [(0.0, 9), (0.5, 3), (1.0, 14)]
    # the headline, exactly, from the stored scores and the run's fields
    (mean, n), = q(tmp_db, "SELECT avg(score), count(score) FROM outcomes")
    assert (mean, n) == (HEADLINE, 26)
    assert q(tmp_db, "SELECT main_metric, metric_min, metric_max, scale_source, harness_metric, harness_value, "
                     "harness_n, harness_agrees, harness_note FROM runs") == [
        ("grader", 0.0, 1.0, "inspect value_to_float", "grader/accuracy", HEADLINE, 26, True,
         "agrees: mean 0.596154 over 26 (grader/accuracy)"),
    ]
    # the failure rate under the analysis threshold is a separate number: P (0.5) is below 0.7
    assert q(tmp_db, "SELECT pass_threshold, count(*) FILTER (WHERE is_correct), count(*) FILTER (WHERE NOT is_correct)"
                     " FROM runs JOIN outcomes USING (run_id) GROUP BY 1") == [(0.7, 14, 12)]


@pytest.mark.parametrize("printed,agrees,note", [
    # the case of the issue: 4 decimals on 0-100 (it "differed by 59.02")
    (59.6154, True, "agrees at the printed precision: mean 0.596154 over 26 rounds to 59.6154 on 0–100, "
                    "as the log prints it with 4 decimals (grader/accuracy)"),
    (59.6, True, "agrees at the printed precision: mean 0.596154 over 26 rounds to 59.6 on 0–100, "
                 "as the log prints it with 1 decimal (grader/accuracy)"),
    (0.5962, True, "agrees at the printed precision: mean 0.596154 over 26 rounds to 0.5962 on 0–1, "
                   "as the log prints it with 4 decimals (grader/accuracy)"),
    (59.61538461538461, True, "agrees: mean 0.596154 over 26 (grader/accuracy, which the log reports on 0–100 "
                              "as 59.6154)"),
    # rounded to the next digit up: another number, a difference
    (59.6155, False, "differs by 0.0001154 points on 0–100: mean 0.596154 over 26 here, the log says 59.6155 "
                     "(grader/accuracy)"),
    (0.5963, False, "differs by 0.0001462: mean 0.596154 over 26 here, the log says 0.5963 (grader/accuracy)"),
    # too few digits to tell 0.55 from 0.65: neither agreement nor a difference
    (0.6, None, "not compared: the log prints 0.6 on 0–1 with only 1 decimal, too coarse to check mean 0.596154 "
                "over 26 against (it rounds to it, but so would rates 0.05 away) (grader/accuracy)"),
    (60.0, None, "not compared: the log prints 60 on 0–100 with only 0 decimals, too coarse to check mean 0.596154 "
                 "over 26 against (it rounds to it, but so would rates 0.005 away) (grader/accuracy)"),
    # a whole rate is exact as printed: 1 is not 0.596 rounded
    (1.0, False, "differs by 0.4038: mean 0.596154 over 26 here, the log says 1 (grader/accuracy)"),
])
def test_the_harness_check_reads_a_header_at_its_printed_precision(tmp_path, tmp_db, printed, agrees, note):
    log = inspect_log(tmp_path / "qa.eval", "qa", GRADES, results=accuracy(printed))
    ingest_paths([log], db=tmp_db)
    assert q(tmp_db, "SELECT harness_value, harness_agrees, harness_note FROM runs") == [(printed, agrees, note)]
    # the scale the log prints on, so that harness_value / harness_factor is on the scores' scale
    assert q(tmp_db, "SELECT harness_factor FROM runs") == [(100.0 if printed > 1 else 1.0,)]


def test_strict_accepts_a_header_printed_with_four_decimals_on_0_to_100(tmp_path, tmp_db):
    inspect_log(tmp_path / "qa.eval", "qa", GRADES, results=accuracy(59.6154))
    out = run_module("ingest", tmp_path / "qa.eval", "--db", tmp_db, "--strict")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0] == "harness check: 1 of 1 runs agree with the harness's own headline"
    inspect_log(tmp_path / "off.eval", "off", GRADES, results=accuracy(59.6155))
    out = run_module("ingest", tmp_path / "off.eval", "--db", tmp_db, "--strict")
    assert out.returncode == 2
    assert "--strict: 1 run(s) differ from the harness's own headline" in out.stderr


TEXT = "G:50.0 : T:100.0"


def test_text_scores_are_refused_per_scorer_with_an_example_never_stored_as_0(tmp_path, tmp_db):
    for n in range(3):  # several runs of one scorer: one line for the scorer, every run counted
        inspect_log(tmp_path / f"r{n}.eval", "grid", [TEXT, "G:0.0 : T:50.0"], run_id=f"r{n}")
    out = run_module("ingest", tmp_path, "--db", tmp_db)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr == (
        "error: no verdicts from scores that are not numbers (Faultline never takes them as 0):\n"
        f"  grid: grader (3 logs, e.g. {tmp_path / 'r0.eval'}): 6 of 6 values are text Faultline cannot read as a "
        f'number, e.g. "{TEXT}". Turn its values into numbers in a table of your own (JSONL or CSV, one row per '
        "sample) and load that with --map score=COLUMN and --scale grid=LOW:HIGH\n"
    )
    assert not tmp_db.exists()  # nothing written
    # with a scorer that does give numbers, the message names it and the flag to judge on it
    numbers = {0: {"match": {"value": "C"}}, 1: {"match": {"value": "I"}}}
    inspect_log(tmp_path / "r0.eval", "grid", [TEXT, "G:0.0 : T:50.0"], run_id="r0", extra_scores=numbers)
    with pytest.raises(IngestError) as refused:
        ingest_paths([tmp_path / "r0.eval"], db=tmp_db)
    assert refused.value.message.splitlines()[1].endswith(
        "Judge on another scorer with --main-metric grid=NAME (scorers with numbers here: match), or turn its values "
        "into numbers in a table of your own (JSONL or CSV, one row per sample) and load that with --map "
        "score=COLUMN and --scale grid=LOW:HIGH")
    ingest_paths([tmp_path / "r0.eval"], db=tmp_db,
                 options=ReadOptions(pass_config=PassConfig.build(metrics=["grid=match"])))
    assert q(tmp_db, "SELECT main_metric, score, is_correct FROM outcomes JOIN runs USING (run_id) ORDER BY instance_id") == [
        ("match", 1.0, True), ("match", 0.0, False)]


def test_one_unreadable_value_among_letters_refuses_the_scorer(tmp_path, tmp_db):
    inspect_log(tmp_path / "qa.eval", "qa", ["C", "I", "C", "E"])
    with pytest.raises(IngestError, match=r'qa: grader \(.*qa.eval\): 1 of 4 values are text Faultline cannot read '
                                          r'as a number, e\.g\. "E"\.'):
        ingest_paths([tmp_path / "qa.eval"], db=tmp_db)


DICTS = [{"G": 50.0, "T": 100.0}, {"G": 0.0, "T": 50.0}, {"G": 100.0, "T": 25.0}]


def test_a_dict_score_with_no_documented_field_is_refused_naming_its_fields(tmp_path, tmp_db):
    # the header reports the scorer but no metric for any field of its dicts
    inspect_log(tmp_path / "d.eval", "grid", DICTS, results=[{"name": "grader", "scorer": "grader", "metrics": {}}])
    with pytest.raises(IngestError) as refused:
        ingest_paths([tmp_path / "d.eval"], db=tmp_db)
    assert refused.value.message == (
        "no verdicts from scores that are not numbers (Faultline never takes them as 0):\n"
        f"  grid: grader ({tmp_path / 'd.eval'}): 3 of 3 values are dicts Faultline cannot read as a number, "
        'e.g. {"G": 50.0, "T": 100.0}. The log reports no metric for a field of grader\'s dicts: name the field '
        "that holds the score with --main-metric grid=grader/FIELD (fields with numbers: G, T)")
    # naming a field judges on it (its scale given: nothing says these are 0-100)
    options = ReadOptions(pass_config=PassConfig.build(metrics=["grid=grader/T"], scales=["grid=0:100"]))
    ingest_paths([tmp_path / "d.eval"], db=tmp_db, options=options)
    assert q(tmp_db, "SELECT main_metric, score, is_correct FROM outcomes JOIN runs USING (run_id) ORDER BY instance_id") == [
        ("grader/T", 100.0, True), ("grader/T", 50.0, False), ("grader/T", 25.0, False)]
    assert json.loads(q(tmp_db, "SELECT metrics FROM predictions WHERE instance_id = '0'")[0][0]) == {
        "grader/G": 50.0, "grader/T": 100.0}


def test_a_dict_field_the_header_reports_is_the_headline(tmp_path, tmp_db):
    # Inspect reports a dict-valued scorer's metrics per field: an EvalScore named by the field
    results = [{"name": "T", "scorer": "grader", "metrics": {"mean": {"name": "mean", "value": 175 / 3}}},
               {"name": "G", "scorer": "grader", "metrics": {"mean": {"name": "mean", "value": 50.0}}}]
    inspect_log(tmp_path / "d.eval", "grid", DICTS, results=results)
    ingest_paths([tmp_path / "d.eval"], db=tmp_db,
                 options=ReadOptions(pass_config=PassConfig.build(scales=["grid=0:100"])))
    assert q(tmp_db, "SELECT main_metric, harness_metric, harness_agrees, harness_note FROM runs") == [
        ("grader/T", "T/mean", True, "agrees: mean 58.3333 over 3 (T/mean)")]
    (mean,), = q(tmp_db, "SELECT avg(score) FROM outcomes")
    assert mean == pytest.approx(175 / 3, abs=1e-12)


def test_lmeval_text_metric_values_are_refused(tmp_path, tmp_db):
    folder = tmp_path / "org__m"
    folder.mkdir()
    rows = [{"doc_id": i, "doc": {"question": f"q{i}"}, "target": "a", "arguments": [], "resps": [["a"]],
             "filtered_resps": ["a"], "filter": "none", "metrics": ["grade"], "grade": g, "acc": float(i % 2)}
            for i, g in enumerate(["good", "bad", "good"])]
    (folder / "samples_judged_2025-01-02T03-04-05.678901.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(IngestError) as refused:
        ingest_paths([folder], db=tmp_db)
    assert refused.value.message.splitlines()[1].endswith(
        ': 3 of 3 values are text Faultline cannot read as a number, e.g. "good". Judge on another metric with '
        "--main-metric judged=NAME (metrics with numbers in these rows: acc)")


def test_a_field_that_is_not_there_is_refused(tmp_path, tmp_db):
    inspect_log(tmp_path / "d.eval", "grid", DICTS)
    options = ReadOptions(pass_config=PassConfig.build(metrics=["grid=grader/X"]))
    with pytest.raises(IngestError, match=r"d\.eval: no field 'X' in the values of scorer 'grader' \(fields: G, T\)"):
        ingest_paths([tmp_path / "d.eval"], db=tmp_db, options=options)
