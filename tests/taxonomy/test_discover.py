"""`taxonomy discover`: clusters of the titles under Other, adoption into a new taxonomy version
with stage 3 only, and `--stdin` against groupings people made (adjusted Rand index)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from sklearn.metrics import adjusted_rand_score

import store
from conftest import q, run_module
from llm_server import FakeLLMServer
from seed_store import seed
from store.analysis import record_taxonomy
from taxonomy import LLMSettings, load_taxonomy
from taxonomy.discover import DiscoveryError, adopt, cluster_titles, discover, medoid, name_cluster

SETS = yaml.safe_load((Path(__file__).resolve().parents[1] / "data" / "discover_sets.yaml").read_text(encoding="utf-8"))
# measured ARI per set (see docs/analysis.md); the floors leave room for harmless changes, not for regressions
ARI_FLOOR = {"llm_error_titles": 0.6, "software_bugs": 0.9, "customer_support": 0.5, "clinical_notes": 0.5}

TRANSLATED = ["Translates the proper names into English", "Translated names of people into English",
              "Renders place names in English translation", "Translates the brand names"]
OUTDATED = ["Quotes prices from an outdated catalogue", "Uses outdated prices for the products",
            "Cites an outdated price list", "Outdated catalogue prices in the quote"]
OTHER_KINDS = {t: "translated" for t in TRANSLATED} | {t: "outdated" for t in OUTDATED}


def _planted(db, analyst="offline", version="erroratlas-v1"):
    rows, i = [], 0
    for title in TRANSLATED + OUTDATED:
        for model in ("m1", "m2"):
            rows.append({"model": model, "dataset": "shop", "instance_id": f"q{i}", "is_correct": False,
                         "title": title, "category": "Other"})
            i += 1
    # one of the offline analyst's fixed titles: a group already, never clustered
    rows += [{"model": "m1", "dataset": "shop", "instance_id": f"c{j}", "is_correct": False,
              "title": "Miscalculates an intermediate step", "category": "Calculation Error"} for j in range(3)]
    seed(db, rows, analyst=analyst, taxonomy_version=version)
    with store.write_session(db) as con:
        tax = load_taxonomy()
        record_taxonomy(con, tax.version, tax.name, tax.source, tax.categories_json())


def test_two_planted_kinds_under_other_come_back_as_two_clusters(tmp_db):
    _planted(tmp_db)
    found = discover(tmp_db, "offline")
    assert found.scope == "failures filed under Other or titled in a judge's words"
    assert found.base_version == "erroratlas-v1"
    assert len(found.candidates) == 2
    assert sorted(sorted(c.titles) for c in found.candidates) == sorted([sorted(TRANSLATED), sorted(OUTDATED)])
    assert [c.size for c in found.candidates] == [8, 8]
    assert found.candidates[0].per_model() == {"m1": 4, "m2": 4}
    assert found.candidates[0].name in TRANSLATED + OUTDATED  # the medoid title names it
    assert found.unclustered == 0 and found.requests == 0
    everything = discover(tmp_db, "offline", all_failures=True)
    assert sum(c.size for c in everything.candidates) == 19


def test_adopting_creates_a_new_version_and_reclassifies_without_stage_1(tmp_db, tmp_path):
    _planted(tmp_db)
    name = next(c.name for c in discover(tmp_db, "offline").candidates if c.titles[0] in TRANSLATED)
    before = q(tmp_db, "SELECT count(*) FROM analyses")[0][0]
    done = adopt(tmp_db, "offline", [name], version="shop-v2", out=str(tmp_path / "shop-v2.yaml"))
    assert (done.version, done.base_version, done.added, done.titles_reclassified) == ("shop-v2", "erroratlas-v1", [name], 9)
    assert q(tmp_db, "SELECT count(*) FROM analyses")[0][0] == before
    assert q(tmp_db, "SELECT count(*) FROM llm_calls")[0][0] == 0
    cats = dict(q(tmp_db, "SELECT error_title, category FROM failures WHERE taxonomy_version = 'shop-v2' GROUP BY ALL"))
    assert {cats[t] for t in TRANSLATED} == {name}
    assert {cats[t] for t in OUTDATED} == {"Other"} and cats["Miscalculates an intermediate step"] == "Calculation Error"
    recorded = json.loads(q(tmp_db, "SELECT categories FROM taxonomies WHERE taxonomy_version = 'shop-v2'")[0][0])
    assert [c["name"] for c in recorded][-2:] == [name, "Other"] and len(recorded) == 21
    # the shipped version is untouched and a second adoption under the same version is refused
    assert json.loads(q(tmp_db, "SELECT categories FROM taxonomies WHERE taxonomy_version = 'erroratlas-v1'")[0][0]) \
        == json.loads(load_taxonomy().categories_json())
    with pytest.raises(DiscoveryError, match="not a candidate of this discovery: No such kind"):
        adopt(tmp_db, "offline", ["No such kind"])


def test_llm_analyst_names_clusters_and_adoption_sends_only_stage_3(tmp_db, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    model = "openai/test-model"
    _planted(tmp_db, analyst=model)
    with FakeLLMServer() as srv:
        found = discover(tmp_db, model, settings=LLMSettings(api_base=srv.api_base, timeout=5))
        assert [c.name for c in found.candidates] == [f"Kind of {c.titles[0].lower()}" for c in found.candidates]
        assert len(found.candidates) == 2 and srv.count("discovery") == 1 and found.requests == 1
        again = discover(tmp_db, model, settings=LLMSettings(api_base=srv.api_base, timeout=5))
        assert srv.count("discovery") == 1 and again.requests == 0  # served from the cache
        done = adopt(tmp_db, model, [found.candidates[0].name], settings=LLMSettings(api_base=srv.api_base, timeout=5))
        assert srv.count("analysis") == 0 and srv.count("classification") >= 1
    assert done.version.startswith("erroratlas-v1+discovered-")
    assert q(tmp_db, "SELECT count(*) FROM llm_calls WHERE purpose = 'analysis'")[0][0] == 0
    assert q(tmp_db, "SELECT count(DISTINCT error_title) FROM classifications WHERE taxonomy_version = ?",
             [done.version])[0][0] == 9


@pytest.mark.parametrize("domain", SETS)
def test_stdin_groups_titles_the_way_people_did(domain):
    groups = SETS[domain]
    assert 5 <= len(groups) <= 12
    titles = [t for members in groups.values() for t in members]
    truth = [g for g, members in groups.items() for _ in members]
    proc = run_module("taxonomy", "discover", "--stdin", input="\n".join(titles) + "\n", timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = [line.split("\t") for line in proc.stdout.splitlines()]
    assert [t for t, _ in lines] == titles
    ari = adjusted_rand_score(truth, [name for _, name in lines])
    print(f"{domain}: {len(groups)} groups, {len({n for _, n in lines})} clusters, ARI {ari:.3f}")
    assert ari >= ARI_FLOOR[domain]


def test_stdin_edge_cases():
    assert cluster_titles([]) == []
    assert cluster_titles(["Only one"]) == [("Only one", "Only one")]
    assert cluster_titles(["Same", "Same", "Other thing"]) == [("Same", "Same"), ("Same", "Same"), ("Other thing", "Other thing")]


def test_cli_discover_and_adopt(tmp_db):
    _planted(tmp_db)
    proc = run_module("taxonomy", "discover", "--db", tmp_db, "--json", timeout=120)
    assert proc.returncode == 0, proc.stderr
    candidates = json.loads(proc.stdout)
    assert [c["size"] for c in candidates] == [8, 8]
    assert set(candidates[0]) == {"name", "description", "size", "per_model", "titles", "examples"}
    assert proc.stderr.strip() == ("2 candidate categories from failures filed under Other or titled in a judge's words "
                                   "of offline (0 failures in no cluster of 2+); 0 requests sent")
    proc = run_module("taxonomy", "discover", "--db", tmp_db, "--adopt", candidates[1]["name"], "--version", "shop-v3", timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("taxonomy shop-v3 = erroratlas-v1 + ")
    assert (Path(tmp_db).parent / "shop-v3.yaml").exists()
    bad = run_module("taxonomy", "discover", "--db", tmp_db, "--adopt", "Nope", timeout=120)
    assert bad.returncode == 2 and "not a candidate of this discovery: Nope" in bad.stderr and "Traceback" not in bad.stderr


def test_naming_batches_hold_at_most_500_titles():
    from taxonomy.discover import TITLES_PER_CALL, _batches

    groups = [(i, [f"title {i}-{j}" for j in range(60)]) for i in range(12)]
    batches = _batches(groups)
    sizes = [sum(len(ts) for _, ts in b) for b in batches]
    assert sizes == [500, 100] and max(sizes) <= TITLES_PER_CALL
    assert [i for b in batches for i, _ in b] == list(range(12))  # every group named once


FOLLOW_UP = ["Omits the follow-up visit", "Leaves out when to follow up with the clinic in weeks",
             "The follow-up plan is missing from the assessment section", "Does not give the follow-up interval"]
DOSAGE = ["States the wrong lisinopril dose", "Gives an incorrect dose of lisinopril",
          "The lisinopril dose differs from the transcript", "Reports a lisinopril dose the doctor never gave"]


def test_a_cluster_is_named_after_what_most_of_its_members_say():
    name, description = name_cluster(FOLLOW_UP)
    # every title says "follow-up" (by stem); the shortest that says it names the cluster
    assert name == "Omits the follow-up visit"
    assert description.startswith('4 of 4 titles say "follow-up"; titles about ')
    name, description = name_cluster(DOSAGE)
    # "lisinopril dose" is said by 3, "lisinopril" by all 4
    assert (name, description.split(";")[0]) == ("States the wrong lisinopril dose", '4 of 4 titles say "lisinopril"')
    # nothing shared by at least half: the medoid
    assert name_cluster(["Login fails", "Upload times out", "Colours are off"])[0] == medoid(
        ["Login fails", "Upload times out", "Colours are off"])


def test_the_offline_analysts_titles_in_a_judges_words_are_clustered(tmp_db):
    rows, i = [], 0
    for titles, category in ((FOLLOW_UP, "Incomplete Content"), (DOSAGE, "Factual Error")):
        for title in titles:
            rows.append({"model": "m1", "dataset": "notes", "instance_id": f"n{i}", "is_correct": False,
                         "title": title, "category": category})
            i += 1
    # the detectors' fixed titles are one group each already: never clustered
    rows += [{"model": "m1", "dataset": "notes", "instance_id": f"f{j}", "is_correct": False,
              "title": "Omits required parts of the reference", "category": "Incomplete Content"} for j in range(3)]
    seed(tmp_db, rows, taxonomy_version="erroratlas-v1")
    found = discover(tmp_db, "offline")
    assert found.scope == "failures filed under Other or titled in a judge's words"
    assert sorted((c.name, c.size) for c in found.candidates) == [
        ("Omits the follow-up visit", 4), ("States the wrong lisinopril dose", 4)]
    # --all: the fixed titles too
    assert sum(c.size for c in discover(tmp_db, "offline", all_failures=True).candidates) == 11
