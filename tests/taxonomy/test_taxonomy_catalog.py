"""The taxonomy as data: the shipped erroratlas-v1 and custom files."""

from __future__ import annotations

import json

import pytest

from conftest import run_module
from taxonomy import BUILTIN_VERSION, TaxonomyError, load_taxonomy

DESIGN_CATEGORIES = [
    "Calculation Error", "Reasoning Error", "Incomplete Content", "Constraint Violation",
    "Language Issue", "Data Extraction", "Naming Error", "Incorrect Method/Application",
    "Factual Error", "Formatting Error", "Question Misinterpretation", "Code Error",
    "Unwarranted Assumption", "Irrelevant/Off-Topic", "Verbosity", "Policy Violation", "Refusal",
    "Hallucination", "Other", "Hard to Analyze",
]


def test_builtin_has_the_design_categories_in_order():
    tax = load_taxonomy()
    assert tax.version == BUILTIN_VERSION == "erroratlas-v1"
    assert tax.names == DESIGN_CATEGORIES
    assert all(c.description for c in tax.categories)


def test_canonical_forgives_case_and_spacing_only():
    tax = load_taxonomy()
    assert tax.canonical("  calculation   error ") == "Calculation Error"
    assert tax.canonical("Calculation") is None


def test_custom_yaml_and_json(tmp_path):
    y = tmp_path / "mine.yaml"
    y.write_text("version: mine-v1\ncategories:\n  - name: Slow\n    description: too slow\n  - Wrong\n")
    tax = load_taxonomy(y)
    assert (tax.version, tax.names) == ("mine-v1", ["Slow", "Wrong", "Other"])
    j = tmp_path / "mine.json"
    j.write_text(json.dumps({"version": "mine-v2", "categories": [{"name": "A"}, {"name": "Other"}]}))
    assert load_taxonomy(j).names == ["A", "Other"]


@pytest.mark.parametrize(
    "text, message",
    [
        ("version: x\ncategories: [a, b", "not valid YAML"),
        ("categories: [a]", "missing `version`"),
        ("version: x\ncategories: []", "non-empty list"),
        ("version: x\ncategories: [a, A]", "appears twice"),
        ("version: erroratlas-v1\ncategories: [a]", "never changes"),
    ],
)
def test_bad_taxonomy_files_name_the_file_and_problem(tmp_path, text, message):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(TaxonomyError) as err:
        load_taxonomy(path)
    assert str(path) in err.value.message and message in err.value.message


def test_missing_file(tmp_path):
    with pytest.raises(TaxonomyError, match="taxonomy file not found"):
        load_taxonomy(tmp_path / "nope.yaml")


def test_cli_reports_bad_taxonomy_without_traceback(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: [unclosed")
    proc = run_module("taxonomy", "classify", "--taxonomy", bad, input="Some title\n", timeout=120)
    assert proc.returncode == 2
    assert f"error: {bad}: not valid YAML" in proc.stderr
    assert "Traceback" not in proc.stderr
