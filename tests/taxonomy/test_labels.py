"""`python -m taxonomy labels`: Who&When's people's labels (agent, step, reason) loaded as reviews of
the runs ingested from their logs; bad labels named, nothing half-written; exact values on the
shared Who&When set."""

from __future__ import annotations

import json

from conftest import FIXTURES, q, requires_fixtures, run_module
from transcripts_gen import msg, ran, who_when

WHO_WHEN = FIXTURES / "agents" / "who-when-algorithm-generated"


def folder(tmp_path, step="2", **kw):
    logs = tmp_path / "ww"
    who_when(logs / "1.json", [msg("Planner", "Plan: search the web.", "assistant"), msg("Coder", "```python\nsearch()\n```"),
                               ran("Phobos, Deimos and Titan"), msg("Checker", "Three moons. TERMINATE")],
             qid="q-1", agent="Coder", step=step, reason="Trusts a wrong search result.", **kw)
    # the hand-crafted half names the agent in role; this log has no labels
    who_when(logs / "2.json", [{"role": "Orchestrator (-> WebSurfer)", "content": "Find it."},
                               {"role": "WebSurfer", "content": "Found 2."}], qid="q-2")
    return logs


def ingest(logs, db, model="team-a"):
    done = run_module("ingest", logs, "--db", db, "--model", model)
    assert done.returncode == 0, done.stderr


def test_labels_become_reviews_of_every_run_from_the_logs_and_load_once(tmp_path, tmp_db):
    logs = folder(tmp_path)
    ingest(logs, tmp_db, "team-a")
    ingest(logs, tmp_db, "team-b")  # the same logs named as another system: a second run
    done = run_module("taxonomy", "labels", logs, "--db", tmp_db, "--reviewer", "lab")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (f"1 people's labels loaded as reviews of 2 run(s) into {tmp_db} (2 added, 0 already "
                                   "there; 1 name a step, 1 an agent; reviewer 'lab')")
    rows = q(tmp_db, """SELECT r.model, v.instance_id, v.train_trial_index, v.step_index, v.agent, v.note, v.action,
                               v.analyst, v.category, v.reviewer
                        FROM reviews v JOIN runs r USING (run_id) ORDER BY r.model""")
    assert rows == [(m, "q-1", 0, 2, "Coder", "Trusts a wrong search result.", "label", None, None, "lab")
                    for m in ("team-a", "team-b")]
    again = run_module("taxonomy", "labels", logs, "--db", tmp_db, "--reviewer", "lab")
    assert "(0 added, 2 already there;" in again.stdout
    assert q(tmp_db, "SELECT count(*) FROM reviews")[0][0] == 2


def test_bad_labels_are_named_and_nothing_is_written(tmp_path, tmp_db):
    logs = folder(tmp_path)
    not_yet = run_module("taxonomy", "labels", logs, "--db", tmp_db)
    assert not_yet.returncode == 2 and "no database here yet" in not_yet.stderr
    ingest(folder(tmp_path / "other"), tmp_db)  # another folder's logs: these are not in the store
    missing = run_module("taxonomy", "labels", logs, "--db", tmp_db)
    assert missing.returncode == 2 and f"{logs / '1.json'}: its run is not in the store" in missing.stderr
    for n, (step, problem) in enumerate((
            ("two", "mistake_step: expected a step number, found 'two'"),
            ("4", "mistake_step 4 is not a step of its history (steps 0 to 3)"),
            # "²".isdigit() is True but int("²") raised: a traceback; int("٣") is 3
            ("²", "mistake_step: expected a step number, found '²'"),
            ("٣", "mistake_step: expected a step number, found '٣'"),
            ("7" * 5000, "mistake_step: expected a step number, found " + repr("7" * 40) + "… (5,000 characters)"))):
        bad = folder(tmp_path / f"bad-{n}", step=step)
        ingest(bad, tmp_db)
        done = run_module("taxonomy", "labels", bad, "--db", tmp_db)
        assert done.returncode == 2 and f"{bad / '1.json'}: {problem}" in done.stderr
        assert "Traceback" not in done.stderr
    assert q(tmp_db, "SELECT count(*) FROM reviews")[0][0] == 0


def test_a_log_changed_since_it_was_ingested_is_refused(tmp_path, tmp_db):
    logs = folder(tmp_path)
    ingest(logs, tmp_db)
    data = json.loads((logs / "1.json").read_text())
    data["history"].append({"role": "user", "name": "Checker", "content": "One more step."})
    (logs / "1.json").write_text(json.dumps(data))
    done = run_module("taxonomy", "labels", logs, "--db", tmp_db)
    assert done.returncode == 2
    assert "the store holds a transcript of 4 steps for it, the log 5; re-ingest it" in done.stderr


@requires_fixtures
def test_who_and_when_labels_load_with_exact_counts(tmp_db):
    ingest(WHO_WHEN, tmp_db, "captain-agent")
    done = run_module("taxonomy", "labels", WHO_WHEN, "--db", tmp_db)
    assert done.returncode == 0, done.stderr
    assert "126 people's labels loaded as reviews of 1 run(s)" in done.stdout
    assert q(tmp_db, "SELECT count(*), count(step_index), count(agent), count(note) FROM reviews")[0] == (126, 126, 126, 126)
    # the labelled step's agent is the labelled agent in 123 of the 126 (the people's own slips)
    assert q(tmp_db, """SELECT count(*) FROM reviews v JOIN transcript_steps s ON s.run_id = v.run_id
                        AND s.instance_id = v.instance_id AND s.step_index = v.step_index
                        WHERE s.agent = v.agent""")[0][0] == 123
    assert q(tmp_db, "SELECT step_index, agent FROM reviews WHERE instance_id = '4d51c4bf-4b0e-4f3d-897b-3f6687a7d9f2'") == [
        (0, "Excel_Expert")]
