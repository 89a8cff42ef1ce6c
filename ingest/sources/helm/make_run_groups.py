"""Write run_groups.yaml from HELM's own schema files.

    git clone https://github.com/stanford-crfm/helm /tmp/helm
    python ingest/sources/helm/make_run_groups.py /tmp/helm > ingest/sources/helm/run_groups.yaml

It reads every version of `src/helm/benchmark/static/schema*.yaml` in the clone's history (HEAD's
files and every earlier commit that changed one), so runs written by an older HELM find the main
metric their HELM named (HELM Safety's `sst_score` before it became `safety_score`). Per run group
it lists the main metric and split candidates, most authoritative first: those HEAD's schema files
name (the most files first; on a tie, the one introduced most recently), then earlier ones, newest
first. Per metric named as a main metric (or shown as a "Jury Score") it keeps HEAD's display
names and direction.
"""

from __future__ import annotations

import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import yaml

STATIC = "src/helm/benchmark/static"


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def schema_versions(repo: Path) -> list[tuple[str, str, str, str]]:
    """(commit, date, file, blob text) for every version of every schema file, oldest first."""
    log = git(repo, "log", "--reverse", "--format=C %H %cs", "--name-only", "--", f"{STATIC}/schema*.yaml")
    out, commit, date = [], "", ""
    for line in log.splitlines():
        if line.startswith("C "):
            _, commit, date = line.split()
        elif line.endswith(".yaml"):
            try:
                text = git(repo, "show", f"{commit}:{line}")
            except subprocess.CalledProcessError:
                continue  # the commit deleted the file
            out.append((commit, date, Path(line).name, text))
    return out


def _load(text: str) -> dict:
    try:
        data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError:
        return {}
    return data if isinstance(data, dict) else {}


def _mains(data: dict) -> dict[str, tuple[str, str | None]]:
    out = {}
    for group in data.get("run_groups") or []:
        env = group.get("environment") if isinstance(group, dict) else None
        main = env.get("main_name") if isinstance(env, dict) else None
        if isinstance(main, str) and main and main != "none" and "${" not in main:
            split = env.get("main_split")
            out[group["name"]] = (main, split if isinstance(split, str) and "${" not in split else None)
    return out


def build(repo: Path) -> dict:
    head = git(repo, "rev-parse", "HEAD").strip()
    described = git(repo, "describe", "--tags", "--always", "HEAD").strip()
    head_date = git(repo, "log", "-1", "--format=%cs", "HEAD").strip()
    introduced: dict[tuple, str] = {}  # (group, main, split) -> date first named
    last_seen: dict[tuple, tuple[str, str]] = {}  # -> (commit, date) last named
    for commit, date, _, text in schema_versions(repo):
        for group, (main, split) in _mains(_load(text)).items():
            key = (group, main, split)
            introduced.setdefault(key, date)
            last_seen[key] = (commit[:9], date)
    head_files = [n for n in git(repo, "ls-tree", "--name-only", "HEAD", f"{STATIC}/").split() if Path(n).name.startswith("schema") and n.endswith(".yaml")]
    at_head: dict[tuple, list[str]] = defaultdict(list)
    metrics_at_head: dict[str, list[dict]] = defaultdict(list)
    for name in head_files:
        data = _load(git(repo, "show", f"HEAD:{name}"))
        short = Path(name).stem.removeprefix("schema_")
        for group, (main, split) in _mains(data).items():
            at_head[(group, main, split)].append(short)
        for metric in data.get("metrics") or []:
            if isinstance(metric, dict) and isinstance(metric.get("name"), str):
                metrics_at_head[metric["name"]].append(metric)
    groups: dict[str, list[dict]] = defaultdict(list)
    by_group: dict[str, list[tuple]] = defaultdict(list)
    for key in introduced:
        by_group[key[0]].append(key)
    for group in sorted(by_group):
        current = sorted((k for k in by_group[group] if k in at_head), key=lambda k: (-len(at_head[k]), _neg(introduced[k])))
        earlier = sorted((k for k in by_group[group] if k not in at_head), key=lambda k: _neg(last_seen[k][1]))
        for key in current:
            groups[group].append({"main_name": key[1], "main_split": key[2], "schemas": sorted(at_head[key])})
        for key in earlier:
            commit, date = last_seen[key]
            groups[group].append({"main_name": key[1], "main_split": key[2], "until": f"{commit} ({date})"})
    mains = {c["main_name"] for cands in groups.values() for c in cands}
    metrics = {}
    for name in sorted(metrics_at_head):
        entries = metrics_at_head[name]
        display = next((m.get("display_name") for m in entries if m.get("display_name")), None)
        if name not in mains and "jury score" not in str(display).lower():
            continue
        directions = {m["lower_is_better"] for m in entries if isinstance(m.get("lower_is_better"), bool)}
        entry = {"display_name": display}
        short = next((m.get("short_display_name") for m in entries if m.get("short_display_name")), None)
        if short:
            entry["short_display_name"] = short
        if len(directions) == 1:
            entry["lower_is_better"] = directions.pop()
        metrics[name] = entry
    return {
        "source": "https://github.com/stanford-crfm/helm " + f"{STATIC}/schema*.yaml",
        "helm_commit": head,
        "helm_version": f"{described} ({head_date})",
        "generated_by": "ingest/sources/helm/make_run_groups.py",
        "run_groups": dict(groups),
        "metrics": metrics,
    }


def _neg(date: str) -> str:
    """Sort key putting later ISO dates first."""
    return "".join(chr(0x10FFFF - ord(c)) for c in date)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    table = build(Path(argv[0]))
    header = (
        "# HELM's main metric and split per run group, and its metrics' display names and direction,\n"
        "# taken from HELM's own schema files. Generated: do not edit by hand (see generated_by).\n"
    )
    sys.stdout.write(header + yaml.safe_dump(table, sort_keys=False, allow_unicode=True, width=160, default_flow_style=None))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
