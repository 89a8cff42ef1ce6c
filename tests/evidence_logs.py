"""Small logs written by the tests, shaped like the real ones the shared fixtures lack: a MedHELM
clinical-note suite judged by an LLM jury per criterion (HELM's LLMAsJuryAnnotator writes
`{annotator: {prompt_text, judge: {criterion: {score, explanation}}}}`), and an Inspect log with a
system message, a model-graded scorer's explanation and a completion cut at max_tokens."""

from __future__ import annotations

import json
from pathlib import Path

INSTRUCTIONS = ("Summarize the conversation to generate a clinical note with four sections: HISTORY OF PRESENT "
                "ILLNESS, PHYSICAL EXAM, RESULTS, ASSESSMENT AND PLAN. The conversation is:")
CONVERSATION = [
    "[doctor] good morning , what brings you in today ?\n[patient] my right knee has been hurting for two weeks .\n"
    "[doctor] any swelling ?\n[patient] yes , after i run .\n[doctor] on exam there is mild effusion . x-ray is normal .",
    "[doctor] how is your blood pressure ?\n[patient] it was one forty over ninety at home .\n"
    "[doctor] let's start lisinopril ten milligrams daily .",
    "[doctor] tell me about the cough .\n[patient] it started three days ago with a fever .\n"
    "[doctor] lungs are clear . we will treat it as a viral infection .",
]
REFERENCE = [
    "HISTORY OF PRESENT ILLNESS\nRight knee pain for two weeks, swelling after running.\nPHYSICAL EXAM\nMild effusion.\n"
    "RESULTS\nX-ray normal.\nASSESSMENT AND PLAN\nKnee effusion; rest and ice.",
    "HISTORY OF PRESENT ILLNESS\nHome blood pressure 140/90.\nPHYSICAL EXAM\nNot documented.\nRESULTS\nNone.\n"
    "ASSESSMENT AND PLAN\nHypertension; start lisinopril 10 mg daily.",
    "HISTORY OF PRESENT ILLNESS\nCough for three days with fever.\nPHYSICAL EXAM\nLungs clear.\nRESULTS\nNone.\n"
    "ASSESSMENT AND PLAN\nViral infection; supportive care.",
]
# per model: (note, jury score) per instance; a pass needs a jury score of at least 4
NOTES = {
    "org/note-small": [
        ("The patient has knee pain.", 2.0),
        ("HISTORY OF PRESENT ILLNESS\nBlood pressure 140/90 at home.\nPHYSICAL EXAM\nNot documented.\nRESULTS\nNone.\n"
         "ASSESSMENT AND PLAN\nHypertension, start lisinopril 10 mg daily.", 4.5),
        ("Cough. Fever. Patient should take antibiotics for pneumonia.", 1.5),
    ],
    "org/note-large": [
        ("HISTORY OF PRESENT ILLNESS\nTwo weeks of right knee pain with swelling after running.\nPHYSICAL EXAM\n"
         "Mild effusion of the right knee.\nRESULTS\nX-ray normal.\nASSESSMENT AND PLAN\nKnee effusion.", 4.4),
        ("HISTORY OF PRESENT ILLNESS\nHome readings of 140/90.\nPHYSICAL EXAM\nNone.\nRESULTS\nNone.\n"
         "ASSESSMENT AND PLAN\nStart lisinopril 10 mg daily.", 4.2),
        ("HISTORY OF PRESENT ILLNESS\nThree days of cough and fever.", 3.0),
    ],
}
CRITERIA = ("accuracy", "completeness", "clarity")


def jury_explanation(model: str, n: int, judge: str, criterion: str) -> str:
    return f"{judge} on {criterion} of {model} note {n}: the note leaves out parts of the conversation."


def _annotation(model: str, n: int, score: float) -> dict:
    return {"aci_bench": {
        "prompt_text": "You are a medical expert ... <conversation>…</conversation>",
        **{judge: {c: {"score": round(score), "explanation": jury_explanation(model, n, judge, c)} for c in CRITERIA}
           for judge in ("gpt", "llama")},
    }}


def medhelm_suite(root: Path) -> Path:
    """A HELM suite of aci_bench-like runs for two models; returns the suite folder."""
    suite = root / "benchmark_output" / "runs" / "medsuite"
    for model, notes in NOTES.items():
        run = suite / f"aci_bench:model={model.replace('/', '_')}"
        run.mkdir(parents=True)
        adapter = {"method": "generation", "global_prefix": "", "global_suffix": "", "instructions": INSTRUCTIONS,
                   "input_prefix": "", "input_suffix": "\n", "output_prefix": "", "output_suffix": "",
                   "instance_prefix": "\n", "max_train_instances": 0, "model": model, "model_deployment": model,
                   "max_tokens": 512, "num_outputs": 1, "temperature": 0.0}
        (run / "run_spec.json").write_text(json.dumps({
            "name": f"aci_bench:model={model.replace('/', '_')}", "scenario_spec": {"args": {}},
            "adapter_spec": adapter, "groups": ["aci_bench"]}))
        (run / "scenario.json").write_text(json.dumps({"name": "aci_bench"}))
        (run / "instances.json").write_text(json.dumps([
            {"id": f"id{n}", "input": {"text": text}, "split": "test",
             "references": [{"output": {"text": REFERENCE[n]}, "tags": ["correct"]}]}
            for n, text in enumerate(CONVERSATION)]))
        (run / "display_predictions.json").write_text(json.dumps([
            {"instance_id": f"id{n}", "train_trial_index": 0, "predicted_text": note,
             "stats": {"jury_score": score, "num_output_tokens": 512 if n == 0 else 60, "num_prompt_tokens": 80,
                       **({"finish_reason_length": 1.0} if n == 0 else {"finish_reason_stop": 1.0})},
             "annotations": _annotation(model, n, score)}
            for n, (note, score) in enumerate(notes)]))
        (run / "display_requests.json").write_text(json.dumps([
            {"instance_id": f"id{n}", "train_trial_index": 0,
             "request": {"model": model, "prompt": f"{INSTRUCTIONS}\n{text}\n", "max_tokens": 512}}
            for n, text in enumerate(CONVERSATION)]))
    return suite


SYSTEM = "You are a careful pharmacist. Answer in one sentence and always give the dose."
GRADER = "GRADE: I. The answer names the drug but gives no dose, which the question asks for."


def inspect_graded_log(path: Path) -> Path:
    """An Inspect EvalLog (.json) of two samples scored by model_graded_qa; the first fails."""
    samples = []
    for n, (question, answer, grade, explanation) in enumerate([
        ("What is the adult dose of amoxicillin for otitis media?", "Amoxicillin is used for otitis media.", "I", GRADER),
        ("What is the adult dose of ibuprofen for pain?", "Ibuprofen 400 mg every 6 hours.", "C", "GRADE: C. Correct dose."),
    ], start=1):
        messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question, "source": "input"},
                    {"role": "assistant", "content": answer, "source": "generate"}]
        samples.append({
            "id": n, "epoch": 1, "input": question, "target": "500 mg every 8 hours" if n == 1 else "400 mg every 6 hours",
            "messages": messages,
            "output": {"model": "m", "completion": answer,
                       "choices": [{"message": messages[-1], "stop_reason": "max_tokens" if n == 1 else "stop"}],
                       "usage": {"input_tokens": 30, "output_tokens": 64 if n == 1 else 9}},
            "scores": {"model_graded_qa": {"value": grade, "answer": answer, "explanation": explanation,
                                           "metadata": {"grading_model": "openai/grader-1"}}},
            "metadata": {},
        })
    log = {"version": 2, "status": "success",
           "eval": {"task": "dose_qa", "task_id": "t1", "run_id": "r1", "model": "openai/pharm-1",
                    "model_generate_config": {"max_tokens": 64}, "config": {"epochs": 1}},
           "results": {"total_samples": 2, "completed_samples": 2,
                       "scores": [{"name": "model_graded_qa", "metrics": {"accuracy": {"value": 0.5}}}]},
           "samples": samples}
    path.write_text(json.dumps(log))
    return path
