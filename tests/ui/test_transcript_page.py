"""/instances shows an agent's transcript as a timeline (issue 25 item 2): a page of steps at a
time, tool calls and results folded, errors marked, long texts cut visibly with the whole text one
click away, the analyst's first-error step highlighted with its quote marked, `?step=N` opening the
page that holds step N; a 5,000-step transcript opens in under 2 s; model text stays text."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from taxonomy import analyze
from transcripts_gen import seed_transcripts
from ui.text import cut_note  # noqa: F401  (the page's wording for a display cut)
from ui.transcript import PREVIEW_CHARS, STEPS_PER_PAGE

ROOT = Path(__file__).resolve().parents[2]
N_STEPS = 5_000
GIVE_UP = 4_321  # the step where the agent turns to made-up data: the offline detector's first error
HOSTILE = "# not a heading <img src=http://127.0.0.1:9/x> [link](http://example.invalid) **bold**"


def long_steps() -> list[dict]:
    steps = [{"kind": "message", "role": "user", "text": "Fix the failing test in the repository."}]
    while len(steps) < N_STEPS:
        i = len(steps)
        if i == GIVE_UP:
            steps.append({"kind": "message", "role": "assistant", "agent": "solver",
                          "text": "No data in the repo, so I will use a mock dataset instead."})
        elif i % 4 == 1:
            steps.append({"kind": "message", "role": "assistant", "agent": "solver",
                          "text": f"Step {i}: I will look at the file. " + ("x" * 2_000 if i % 40 == 1 else "")})
        elif i % 4 == 2:
            steps.append({"kind": "tool call", "role": "assistant", "agent": "solver", "tool_name": "bash",
                          "tool_call_id": f"c{i}", "arguments": {"cmd": f"cat file{i}.py"}})
        elif i % 4 == 3:
            steps.append({"kind": "tool result", "role": "tool", "tool_name": "bash", "tool_call_id": f"c{i - 1}",
                          "text": HOSTILE if i % 100 == 3 else f"contents of file{i - 1}.py",
                          **({"error": "No such file or directory"} if i % 20 == 3 else {})})
        else:
            steps.append({"kind": "message", "role": "user", "agent": "user-proxy", "text": f"continue ({i})"})
    return steps


@pytest.fixture
def long_store(tmp_db, monkeypatch):
    seed_transcripts(tmp_db, [{"instance_id": "long", "is_correct": False, "output": "no fix", "steps": long_steps()}],
                     model="agent-a", dataset="agent-bench")
    analyze(tmp_db, "offline")
    monkeypatch.setenv("FAULTLINE_DB", str(tmp_db))
    monkeypatch.delenv("FAULTLINE_READ_ONLY", raising=False)
    return tmp_db


def page(**params) -> tuple[AppTest, float]:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.switch_page("pages/instances.py")
    at.query_params.update(params)
    started = time.perf_counter()
    at.run()
    seconds = time.perf_counter() - started
    assert not at.exception, [e.value for e in at.exception]
    return at, seconds


def texts(at) -> list[str]:
    return [m.value for m in at.markdown] + [c.value for c in at.caption]


def test_a_5000_step_transcript_opens_on_the_first_error_in_under_2_s(long_store):
    page(analyst="offline")  # the app's imports and the store's first open, as a user's first page
    at, seconds = page(analyst="offline", instance="agent-bench:long")
    assert seconds < 2.0, f"opening the 5,000-step transcript took {seconds:.2f} s"
    shown = texts(at)
    assert any(t.startswith("5,000 steps · 1,250 tool calls · 250 tool results with an error") for t in shown)
    # it opens on the page holding the first decisive error, one page of steps drawn
    lo = GIVE_UP // STEPS_PER_PAGE * STEPS_PER_PAGE
    assert f"Steps {lo:,}–{lo + STEPS_PER_PAGE - 1:,} of 5,000. Link to a step: add step=N to this page's link." in shown
    heads = [t for t in shown if t.startswith("**#")]
    assert len(heads) == STEPS_PER_PAGE and heads[0].startswith(f"**#{lo}**")
    flag = [t for t in shown if "first decisive error" in t and "badge" in t]
    assert flag == [":orange-badge[:material/flag: first decisive error] by analyst offline · agent solver"
                    " · evidence quote marked below"]
    # the quote is marked in the step's text, escaped
    marked = [t for t in shown if "<mark>" in t]
    assert len(marked) == 1 and "No data in the repo, so I will use a <mark>mock dataset</mark> instead&#46;" in marked[0]
    assert any(t.startswith(f"first decisive error at step {GIVE_UP:,}".replace(",", "")) for t in shown)


def test_step_links_open_their_page_and_mark_errors_tools_and_cut_texts(long_store):
    at, seconds = page(analyst="offline", instance="agent-bench:long", step="41")
    assert seconds < 2.0
    shown = texts(at)
    assert "Steps 0–99 of 5,000. Link to a step: add step=N to this page's link." in shown
    assert ":material/link: the step this link names" in shown
    assert at.number_input[0].value == 1
    # a tool call: its tool named, its arguments folded; a tool result folded under its tool, with
    # its error marked in red
    assert any(t.startswith("**#2** · **solver** · assistant · :blue-badge[tool call] `bash`") for t in shown)
    assert any(e.label == r'arguments: \{\"cmd\"\:\"cat file2\.py\"\}' for e in at.expander)
    head_23 = next(t for t in shown if t.startswith("**#23**"))
    assert ":gray-badge[tool result] `bash`" in head_23 and ":red-badge[:material/error: error]" in head_23
    assert ":red[**error:** No such file or directory]" in shown
    # a long text: cut visibly at PREVIEW_CHARS, the whole of it one click away
    assert f"[… {2_000 + len('Step 41: I will look at the file. ') - PREVIEW_CHARS:,} more characters]" in shown
    assert any(e.label.startswith("show all 2,034 characters") for e in at.expander)
    # model text stays text: no tag, link or heading survives into the markup
    markup = " ".join(shown) + " ".join(e.label for e in at.expander)
    # (each Markdown character escaped with a backslash, or as an HTML entity inside markup)
    assert HOSTILE not in markup and not re.search(r"(?<!\\)<img|(?<!\\)\]\(http|^# ", markup, re.M)
    hostile = [e.label for e in at.expander if "img src" in e.label]
    assert hostile == ["result (86 characters): \\# not a heading \\<img src\\=http\\:\u200b//127\\.0\\.0\\.1\\:9/x\\> "
                       "\\[link\\]\\(http\\:\u200b//example\\.invalid\\) \\*\\*bold\\*\\*"]


def test_a_step_the_transcript_lacks_is_said_and_the_page_opens_on_the_first_error(long_store):
    at, _ = page(analyst="offline", instance="agent-bench:long", step="99999")
    assert any("names step “99999”, which this transcript of 5,000 steps does not have" in w.value
               for w in at.warning)
    lo = GIVE_UP // STEPS_PER_PAGE * STEPS_PER_PAGE
    assert f"Steps {lo:,}–{lo + STEPS_PER_PAGE - 1:,} of 5,000. Link to a step: add step=N to this page's link." \
        in texts(at)


def test_paging_moves_through_the_steps(long_store):
    at, _ = page(analyst="offline", instance="agent-bench:long")
    at.number_input[0].set_value(50).run()
    assert not at.exception
    assert "Steps 4,900–4,999 of 5,000. Link to a step: add step=N to this page's link." in texts(at)
    # the link keeps the page: it names the page's first step
    assert at.query_params["step"] == "4900"
    assert ":material/link: the step this link names" in texts(at)


def test_each_model_s_transcript_is_picked_by_the_link(long_store):
    seed_transcripts(long_store, [{"instance_id": "long", "is_correct": True, "output": "fixed", "steps": [
        {"kind": "message", "role": "user", "text": "Fix the failing test in the repository."},
        {"kind": "tool call", "role": "assistant", "agent": "coder", "tool_name": "edit", "tool_call_id": "e1",
         "arguments": {"path": "a.py"}},
        {"kind": "tool result", "role": "tool", "tool_name": "edit", "tool_call_id": "e1", "text": "ok"}]}],
        model="agent-b", dataset="agent-bench", run_id="agents:r2")
    at, _ = page(analyst="offline", instance="agent-bench:long", transcript="agent-b")
    assert at.selectbox(key="transcript").options == ["agent-a", "agent-b"]
    assert at.selectbox(key="transcript").value == "agent-b"
    shown = texts(at)
    assert "3 steps · 1 tool call · no tool error · agents coder" in shown
    assert "Steps 0–2 of 3. Link to a step: add step=N to this page's link." in shown
    at.selectbox(key="transcript").set_value("agent-a").run()
    assert any(t.startswith("5,000 steps") for t in texts(at))


def test_a_tool_name_in_a_step_heading_reads_as_written():
    """In a code span nothing is Markdown: the name is not escaped (find\\_user read with its
    backslash), and a backtick in it cannot close the span early."""
    from ui.transcript import _head

    step = {"step_index": 3, "agent": None, "role": "assistant", "kind": "tool call",
            "tool_name": "find_user_id_by_name_zip", "error": None, "seconds": None, "output_tokens": None,
            "finish_reason": None}
    assert _head(step) == "**#3** · assistant · :blue-badge[tool call] `find_user_id_by_name_zip`"
    assert _head({**step, "tool_name": "a`b"}).endswith(":blue-badge[tool call] ``a`b``")
