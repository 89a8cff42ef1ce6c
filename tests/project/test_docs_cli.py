"""Every flag of every command is documented on its reference page in docs/, and the README's links
to the reference pages lead somewhere."""

from __future__ import annotations

import re

import pytest

from conftest import ROOT, run_module

# each command and the reference pages that document it
COMMANDS = {
    ("ingest",): ("ingest.md", "verdicts.md"),
    ("ingest", "export"): ("ingest.md",),
    ("ingest", "merge"): ("ingest.md",),
    ("taxonomy", "analyze"): ("analysis.md",),
    ("taxonomy", "verify"): ("analysis.md",),
    ("taxonomy", "classify"): ("analysis.md",),
    ("taxonomy", "agreement"): ("analysis.md",),
    ("taxonomy", "discover"): ("analysis.md",),
    ("taxonomy", "labels"): ("analysis.md",),
    ("taxonomy", "review-sample"): ("analysis.md",),
    ("taxonomy", "calibrate"): ("analysis.md",),
    ("stats", "accuracy"): ("stats.md",),
    ("stats", "signatures"): ("stats.md",),
    ("stats", "power"): ("stats.md",),
    ("stats", "leaderboard"): ("stats.md",),
    ("stats", "compare"): ("stats.md",),
    ("stats", "report"): ("stats.md",),
    ("stats", "mcp"): ("mcp.md",),
}
DOCS = ROOT / "docs"
LINK = re.compile(r"\]\(([^)#\s]+\.md)(?:#[^)]*)?\)")


def flags(*command: str) -> set[str]:
    out = run_module(*command, "--help", timeout=120)
    assert out.returncode == 0, out.stderr
    return set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]+)", out.stdout)) - {"--help"}


@pytest.mark.parametrize("command", list(COMMANDS), ids=" ".join)
def test_every_flag_is_on_its_reference_page(command):
    pages = "\n".join((DOCS / name).read_text() for name in COMMANDS[command])
    missing = sorted(f for f in flags(*command) if f not in pages)
    assert missing == [], f"python -m {' '.join(command)}: flags not documented in {COMMANDS[command]}: {missing}"


def test_links_between_readme_and_docs_lead_to_files():
    sources = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
    broken = [
        f"{src.relative_to(ROOT)} → {target}"
        for src in sources
        for target in LINK.findall(src.read_text())
        if not (src.parent / target).is_file()
    ]
    assert broken == []
    linked = set(LINK.findall((ROOT / "README.md").read_text()))
    assert {f"docs/{p.name}" for p in DOCS.glob("*.md")} <= linked, "every reference page is linked from the README"


def test_readme_shows_a_screenshot_kept_in_the_repository():
    images = re.findall(r"!\[[^\]]+\]\(([^)\s]+\.png)\)", (ROOT / "README.md").read_text())
    assert images, "the README's first screen shows what the tool looks like"
    for image in images:
        path = ROOT / image
        assert path.is_file() and path.stat().st_size < 300_000, image


def test_the_glossary_of_counts_on_the_stats_page_is_the_one_every_surface_uses():
    """docs/stats.md prints core/counts.py's glossary as it is; no two counts share a name."""
    from core.counts import GLOSSARY, glossary_markdown

    text = (DOCS / "stats.md").read_text(encoding="utf-8")
    shown = text.split("<!-- glossary -->\n", 1)[1].split("\n<!-- /glossary -->", 1)[0]
    assert shown == glossary_markdown()
    assert len({c.name for c in GLOSSARY}) == len(GLOSSARY) == 6
