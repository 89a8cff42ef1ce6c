"""The counts every surface shows, each named once with its rule.

A store of one benchmark holds several right numbers of "failures": every split as loaded, what
`taxonomy analyze` picks, the main split under the analysis threshold, the ones an analyst read.
Shown side by side without their rules they read as one number that disagrees with itself (3,622,
2,973 and 2,551 on one store). Pages, the CLI, the static report and the MCP server take the name
and the rule of each count from here, so the same count is called the same thing everywhere and
two different counts never share a name. docs/stats.md prints this glossary
(tests/project/test_docs_cli.py keeps the two equal).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Count:
    key: str  # the name in --json and MCP answers
    name: str  # as shown, lower case
    rule: str  # what it counts, in one sentence a user can check

    @property
    def label(self) -> str:
        """The name as a heading or a column label."""
        return self.name[:1].upper() + self.name[1:]


PREDICTIONS = Count(
    "predictions", "loaded predictions",
    "every prediction stored: every split and rerun, infrastructure errors included")
LOADED_FAILURES = Count(
    "failures", "failures as loaded",
    "predictions judged failed at load (the log's verdicts, or the scale given), every split and "
    "rerun; infrastructure errors apart")
TO_ANALYSE = Count(
    "selected", "failures to analyse",
    "what `python -m taxonomy analyze` picks: failures as loaded, every split, an earlier rerun's "
    "only on a question its later rerun did not ask, after --models, --datasets and --sample")
UNDER_THRESHOLD = Count(
    "failures", "failures under the analysis threshold",
    "the latest outcome of each question on each run's main split that fails: for a 0/1 metric the "
    "harness's own verdict, for a continuous metric a score under the analysis threshold (0.7 of the "
    "range unless moved); what every page, test and error type counts")
ANALYSED = Count(
    "analysed", "analysed failures",
    "failures under the analysis threshold that an analyst has read")
LABELLED = Count(
    "classified", "labelled failures",
    "analysed failures filed under a category (an error type, Other, Hard to Analyze, No Model "
    "Error); error-type shares are of these")

GLOSSARY: tuple[Count, ...] = (PREDICTIONS, LOADED_FAILURES, TO_ANALYSE, UNDER_THRESHOLD, ANALYSED, LABELLED)


def definitions(*counts: Count) -> dict[str, str]:
    """{key: "name: rule"} for an answer that carries these counts (MCP, --json)."""
    return {c.key: f"{c.name}: {c.rule}" for c in counts}


def glossary_markdown() -> str:
    """The glossary as the Markdown table docs/stats.md holds."""
    rows = ["| count | key | what it counts |", "|---|---|---|"]
    rows += [f"| {c.name} | `{c.key}` | {c.rule} |" for c in GLOSSARY]
    return "\n".join(rows)
