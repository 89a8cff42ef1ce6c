"""Hostile values, the smaller items: numbers given as text (an MCP cursor "²", 5,000 digits,
Arabic-Indic digits) read by one helper with a message naming where; a Who&When mistake_step "²";
invisible and direction-changing characters refused in names and shown as <U+XXXX> wherever
text is shown; an archive inside an uploaded .zip counted against the upload's caps before
anything is unpacked; an .xlsx formula cell with no computed value refused, never read as empty;
one JSONL line bounded in memory. Each with exact expected values; nothing half-written."""

from __future__ import annotations

import io
import json
import random
import zipfile
from pathlib import Path

import pytest

from conftest import q, run_module
from ingest.errors import IngestError
from ingest.limits import Limits as IngestLimits
from core.names import json_visible, visible
from core.numbers import NumberError, decimal_number, number_or_none, whole_number, whole_or_none

ROOT = Path(__file__).resolve().parents[2]
FIVE_THOUSAND = "7" * 5000
CUT_40 = repr("7" * 40) + "… (5,000 characters)"


# ---------------------------------------------------------------- 1. numbers given as text

@pytest.mark.parametrize("text, message", [
    ("²", "cursor: '²' is not a whole number (expected ASCII digits 0-9, at most 18)"),   # isdigit() True
    ("٣", "cursor: '٣' is not a whole number (expected ASCII digits 0-9, at most 18)"),   # int() reads 3
    (FIVE_THOUSAND, f"cursor: {CUT_40} is not a whole number (expected ASCII digits 0-9, at most 18)"),
    ("1_000", "cursor: '1_000' is not a whole number (expected ASCII digits 0-9, at most 18)"),
    ("-3", "cursor: '-3' is not a whole number (expected ASCII digits 0-9, at most 18)"),
    ("", "cursor: '' is not a whole number (expected ASCII digits 0-9, at most 18)"),
])
def test_a_whole_number_is_ascii_digits_only(text, message):
    with pytest.raises(NumberError) as caught:
        whole_number(text, "cursor")
    assert caught.value.message == message
    assert isinstance(caught.value, ValueError) and isinstance(caught.value, IngestError)


def test_numbers_that_are_numbers_are_read_and_ranges_are_said():
    assert whole_number(" 42\n", "x") == 42 and whole_number(7, "x") == 7 and whole_number("-2", "x", low=None) == -2
    assert decimal_number("0.7", "x") == 0.7 and decimal_number("-2.5e-3", "x") == -0.0025 and decimal_number(3, "x") == 3.0
    with pytest.raises(NumberError, match=r"^--port: 70000 is out of range \(expected from 1 to 65535\)$"):
        whole_number("70000", "--port", low=1, high=65535)
    for text, message in (("1e999", "x: '1e999' is not a finite number"),
                          ("nan", "x: 'nan' is not a number (expected a decimal in ASCII digits, e.g. 0.7 or 2.5e-3)"),
                          ("١.٥", "x: '١.٥' is not a number (expected a decimal in ASCII digits, e.g. 0.7 or 2.5e-3)")):
        with pytest.raises(NumberError) as caught:
            decimal_number(text, "x")
        assert caught.value.message == message
    # a log's numbers: "no number" rather than an error, and never a traceback
    assert [number_or_none(v) for v in ("12", "١٢", 10**400, "1_0", True, "0x10")] == [12.0, None, None, None, None, None]
    assert str(number_or_none("NaN")) == "nan" and number_or_none("-Infinity") == float("-inf")  # lm-eval writes them
    assert [whole_or_none(v) for v in ("12", "²", "٣", FIVE_THOUSAND, 5, "1.0")] == [12, None, None, None, 5, None]


def _parse_error(capsys, parse) -> str:
    with pytest.raises(SystemExit) as done:
        parse()
    assert done.value.code == 2
    return capsys.readouterr().err.strip().splitlines()[-1]


def test_cli_numbers_are_refused_with_the_flag_and_exit_2(capsys):
    from stats.cli import build_parser as stats_parser
    from taxonomy.cli import build_parser as taxonomy_parser

    assert _parse_error(capsys, lambda: stats_parser().parse_args(["mcp", "--http", "²"])) == (
        "python -m stats mcp: error: argument --http: '²' is not a port number (expected ASCII digits 0-9, at most 18)")
    assert _parse_error(capsys, lambda: stats_parser().parse_args(["mcp", "--answer-tokens", FIVE_THOUSAND])) == (
        f"python -m stats mcp: error: argument --answer-tokens: {CUT_40} is not a number of tokens (expected "
        "ASCII digits 0-9, at most 18)")
    assert _parse_error(capsys, lambda: taxonomy_parser().parse_args(["analyze", "--concurrency", "٣"])) == (
        "python -m taxonomy analyze: error: argument --concurrency: '٣' is not a whole number (expected ASCII "
        "digits 0-9, at most 18)")
    assert _parse_error(capsys, lambda: taxonomy_parser().parse_args(["analyze", "--timeout", "nan"])) == (
        "python -m taxonomy analyze: error: argument --timeout: 'nan' is not a number (expected a decimal in "
        "ASCII digits, e.g. 0.7 or 2.5e-3)")
    assert _parse_error(capsys, lambda: taxonomy_parser().parse_args(["analyze", "--max-cost", "1e999"])) == (
        "python -m taxonomy analyze: error: argument --max-cost: '1e999' is not a finite number")


def test_ingest_numbers_and_size_settings_are_refused_with_exit_2(tmp_path, capsys, monkeypatch):
    from ingest.cli import main

    log = tmp_path / "p.jsonl"
    log.write_text('{"model": "m", "instance_id": "1", "output": "x", "score": 0.5}\n')
    assert main([str(log), "--db", str(tmp_path / "s.duckdb"), "--pass-threshold", "١"]) == 2
    assert capsys.readouterr().err == ("error: --pass-threshold ١: '١' is not a number (expected a decimal in "
                                       "ASCII digits, e.g. 0.7 or 2.5e-3)\n")
    monkeypatch.setenv("FAULTLINE_MAX_TEXT_BYTES", "1e400")  # float() made it inf, then int(inf) raised
    assert main([str(log), "--db", str(tmp_path / "s.duckdb")]) == 2
    assert capsys.readouterr().err == ("error: FAULTLINE_MAX_TEXT_BYTES='1e400': expected a size in bytes, "
                                       "e.g. 268435456 or 256M\n")
    assert not (tmp_path / "s.duckdb").exists()


def test_app_settings_are_ascii_numbers(monkeypatch, capsys):
    from ui import data, text, uploads

    monkeypatch.setenv("FAULTLINE_MAX_UPLOAD_MB", "٣")  # float() read 3: uploads of 3 MiB
    with pytest.raises(uploads.UploadRefused) as caught:
        uploads.Limits.from_env()
    assert caught.value.message == ("FAULTLINE_MAX_UPLOAD_MB: '٣' is not a size in MiB (expected a decimal in ASCII "
                                    "digits, e.g. 0.7 or 2.5e-3); uploads are refused until it is fixed")
    monkeypatch.setenv("FAULTLINE_MAX_UPLOAD_MB", "0.5")
    assert uploads.Limits.from_env().file_bytes == 512 * 1024
    # settings read by every page: the default, said in the server's log, never a failed page
    monkeypatch.setenv("FAULTLINE_QUERY_TIMEOUT", "nan")  # float() read nan: no deadline at all
    monkeypatch.setenv("FAULTLINE_DISPLAY_CHARS", "²")     # int() raised on importing ui.text
    capsys.readouterr()
    assert data.query_timeout() == 60.0 and text._display_chars() == 20000
    assert capsys.readouterr().err == (
        "warning: FAULTLINE_QUERY_TIMEOUT: 'nan' is not a number of seconds (expected a decimal in ASCII digits, "
        "e.g. 0.7 or 2.5e-3); queries are given 60 s\n"
        "warning: FAULTLINE_DISPLAY_CHARS: '²' is not a number of characters (expected ASCII digits 0-9, at most "
        "18); pages show 20,000 characters of a text\n")


def test_url_thresholds_are_ascii_numbers():
    from stats.headline import parse_thresholds

    assert parse_thresholds(["aci_bench:4.2"]) == {"aci_bench": 4.2}
    for item in ("aci_bench:٤", "aci_bench:1_0", "aci_bench:" + FIVE_THOUSAND):
        with pytest.raises(ValueError) as caught:
            parse_thresholds([item])
        assert str(caught.value).endswith(": expected DATASET=X with X a number, e.g. aci_bench=4.2")


def test_numbers_inside_logs_never_raise():
    from ingest.jsonio import parse_json
    from ingest.sources.inspect_log import _sample_order
    from ingest.sources.lmeval import _arg_index
    from taxonomy.detectors.base import spoken_values
    from taxonomy.llm import _retry_after

    assert _sample_order("samples/²_epoch_1.json") == ((1, 0, "²"), 1)
    assert _sample_order(f"samples/{FIVE_THOUSAND}_epoch_2.json") == ((1, 0, FIVE_THOUSAND), 2)
    assert _arg_index("gen_args_²") == 0 and _arg_index("gen_args_3") == 3
    # a model that says "one two" 3,000 times: 6,000 spoken digits made int() raise
    assert sorted(spoken_values("one two " * 3000)) == [1, 2]
    # a 400-digit integer: every reader's float() of it raised OverflowError
    with pytest.raises(IngestError) as caught:
        parse_json('{"score": ' + "9" * 400 + "}", "x.json")
    assert caught.value.message == "x.json: a number too long to read (an integer of 400 digits, over the 308 read)"

    class Refused(Exception):
        litellm_response_headers = {}

    for header, wait in (("5", 5.0), ("nan", None), ("1e999", None), ("²", None), ("٣", None)):
        exc = Refused()
        exc.litellm_response_headers = {"retry-after": header}
        assert _retry_after(exc) == wait, header


# ---------------------------------------------------------------- 2. Who&When


def test_a_who_and_when_log_named_with_a_superscript_is_read(tmp_path, tmp_db):
    from transcripts_gen import msg, who_when

    logs = tmp_path / "ww"
    who_when(logs / "1.json", [msg("Planner", "Plan.", "assistant")], qid="q-1")
    who_when(logs / "².json", [msg("Planner", "Plan again.", "assistant")], qid="q-2")
    done = run_module("ingest", logs, "--db", tmp_db, "--model", "team-a")
    assert done.returncode == 0, done.stderr  # "²".isdigit() is True: int("²") was a traceback
    assert q(tmp_db, "SELECT instance_id FROM outcomes ORDER BY 1") == [("q-1",), ("q-2",)]


# ---------------------------------------------------------------- 3. invisible characters


def test_visible_shows_every_format_character():
    assert visible("safe\u202eexe.txt") == "safe<U+202E>exe.txt"
    assert visible("gpt\u200b-4\ufeff\u00ad\u2066x\U000e0041") == "gpt<U+200B>-4<U+FEFF><U+00AD><U+2066>x<U+E0041>"
    assert visible("naïve 日本 \t\n") == "naïve 日本 \t\n"
    raw = json.dumps({"a": "x\u200by\U000e0041"}, ensure_ascii=False)
    assert json_visible(raw) == '{"a": "x\\u200by\\udb40\\udc41"}' and json.loads(json_visible(raw)) == json.loads(raw)


@pytest.mark.parametrize("name, what", [
    ("gpt\u200b4", "U+200B (ZERO WIDTH SPACE) at position 4"),
    ("\ufeffgpt4", "U+FEFF (ZERO WIDTH NO-BREAK SPACE) at position 1"),
    ("gpt\u200e4", "U+200E (LEFT-TO-RIGHT MARK) at position 4"),
    ("gpt\u00ad4", "U+00AD (SOFT HYPHEN) at position 4"),
])
def test_invisible_characters_in_a_model_name_are_refused_with_the_line(tmp_path, name, what):
    log = tmp_path / "preds.jsonl"
    log.write_text(json.dumps({"model": name, "instance_id": "q1", "output": "a", "correct": True}) + "\n")
    r = run_module("ingest", log, "--db", tmp_path / "s.duckdb")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr == (f"error: {log}:1: column 'model': {name!r} holds an invisible character ({what}), which makes "
                        "it look like another name; names must be printable text\n")
    assert not (tmp_path / "s.duckdb").exists()


def test_invisible_characters_in_model_and_dataset_flags_are_refused(tmp_path):
    log = tmp_path / "preds.jsonl"
    log.write_text(json.dumps({"instance_id": "q1", "output": "a", "correct": True}) + "\n")
    r = run_module("ingest", log, "--db", tmp_path / "s.duckdb", "--model", "m", "--dataset", "ds\u2069")
    assert r.returncode == 2
    assert r.stderr == ("error: --dataset 'ds\\u2069' holds a control character (U+2069 (POP DIRECTIONAL ISOLATE) "
                        "at position 3); names must be printable text\n")
    assert not (tmp_path / "s.duckdb").exists()


def test_text_on_a_page_shows_invisible_characters_as_escapes():
    import polars as pl

    from ui.evidence import highlight
    from ui.tables import csv_text, safe_name, visible_cells
    from ui.text import cell, html_text, md, md_lines

    assert md("safe\u202eexe.txt") == "safe\\<U\\+202E\\>exe\\.txt"
    # the zero-width space md adds against autolinks is its own, after the data's are shown
    assert md("see \u200bwww.x.org") == "see \\<U\\+200B\\>www\u200b\\.x\\.org"
    assert md_lines("a\u202eb\nc") == "a\\<U\\+202E\\>b  \nc"
    assert html_text("safe\u202eexe.txt") == "safe&#60;U&#43;202E&#62;exe&#46;txt"
    assert cell("x\u2066y") == "x<U+2066>y"
    assert highlight("run safe\u202eexe.txt now", ["exe.txt"]) == (
        '<div style="white-space: pre-wrap">run safe&#60;U&#43;202E&#62;<mark>exe&#46;txt</mark> now</div>')
    frame = visible_cells(pl.DataFrame({"output": ["safe\u202eexe.txt", "plain", None], "n": [1, 2, 3]}))
    assert frame["output"].to_list() == ["safe<U+202E>exe.txt", "plain", None] and frame["n"].to_list() == [1, 2, 3]
    assert csv_text(frame) == "output,n\r\nsafe<U+202E>exe.txt,1\r\nplain,2\r\n,3\r\n"
    assert safe_name("m\u200bx\x00") == "m<U+200B>x\\x00"


def test_a_tool_result_with_a_right_to_left_override_is_shown_escaped(tmp_db, monkeypatch):
    from streamlit.testing.v1 import AppTest
    from transcripts_gen import seed_transcripts

    seed_transcripts(tmp_db, [{"instance_id": "t1", "is_correct": False, "output": "wrote safe\u202eexe.txt", "steps": [
        {"kind": "message", "role": "user", "text": "Make the file."},
        {"kind": "tool call", "role": "assistant", "agent": "solver", "tool_name": "bash", "tool_call_id": "c1",
         "arguments": {"cmd": "touch safe\u202eexe.txt"}},
        {"kind": "tool result", "role": "tool", "tool_name": "bash", "tool_call_id": "c1", "text": "safe\u202eexe.txt"},
    ]}], model="agent\u200ba")  # a store written before names were checked
    monkeypatch.setenv("FAULTLINE_DB", str(tmp_db))
    monkeypatch.delenv("FAULTLINE_READ_ONLY", raising=False)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.switch_page("pages/instances.py")
    at.query_params.update(instance="agent-bench:t1")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    shown = ([m.value for m in at.markdown] + [c.value for c in at.caption] + [e.label for e in at.expander]
             + [t.value for t in at.text] + [c.value for c in at.code] + [h.value for h in at.subheader])
    assert not any("\u202e" in t or "\u200b" in t.replace("\\:\u200b//", "") for t in shown)
    # the tool result (folded: its label, and its text inside) and the model's output
    assert "result (12 characters): safe\\<U\\+202E\\>exe\\.txt" in [e.label for e in at.expander]
    assert any("safe&#60;U&#43;202E&#62;exe&#46;txt</div>" in m for m in shown)
    assert any("wrote safe&#60;U&#43;202E&#62;exe&#46;txt" in m for m in shown)
    # the tool call's arguments, folded under a label
    assert any(e.label.startswith("arguments: \\{\\\"cmd\\\"\\:\\\"touch safe\\<U\\+202E\\>exe\\.txt")
               for e in at.expander)


def test_cli_output_shows_invisible_characters_and_json_keeps_the_data(tmp_db):
    from seed_store import seed

    seed(tmp_db, [{"model": "m\u202eodel", "dataset": "d", "instance_id": str(i), "is_correct": i % 2 == 0}
                  for i in range(4)])
    text = run_module("stats", "accuracy", "--db", tmp_db)
    assert text.returncode == 0, text.stderr
    assert "\u202e" not in text.stdout and "m<U+202E>odel" in text.stdout
    as_json = run_module("stats", "accuracy", "--db", tmp_db, "--json")
    assert as_json.returncode == 0 and "\u202e" not in as_json.stdout and "m\\u202eodel" in as_json.stdout
    assert [r["model"] for r in json.loads(as_json.stdout)] == ["m\u202eodel"]


# ---------------------------------------------------------------- 4. an archive inside an upload


def _zip(entries: list[tuple[str, bytes]], method=zipfile.ZIP_DEFLATED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", method) as z:
        for name, data in entries:
            z.writestr(zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0)), data, compress_type=method)
    return buf.getvalue()


def _noise(seed: int, size: int) -> bytes:
    # two-letter noise packs about 7:1: far from a bomb's ratio
    return bytes(random.Random(seed).choices(b"ab", k=size))


MiB = 1024 * 1024


def test_an_eval_inside_a_zip_counts_against_the_upload_caps_before_anything_is_unpacked(tmp_path, monkeypatch):
    import ui.uploads as uploads
    from ui.uploads import Limits, UploadRefused, save_uploads

    inner = _zip([("header.json", b"{}")] + [(f"samples/{i}_epoch_1.json", _noise(i, MiB)) for i in range(10)])
    outer = _zip([("logs/a/preds.jsonl", b'{"model": "m"}\n'), ("logs/run.eval", inner)], zipfile.ZIP_STORED)
    limits = Limits(file_bytes=8 * MiB, unpacked_bytes=8 * MiB, line_bytes=64 * 1024)
    unpacked = []
    real_unpack = uploads._unpack
    monkeypatch.setattr(uploads, "_unpack", lambda *a: unpacked.append(a[0]) or real_unpack(*a))
    with pytest.raises(UploadRefused) as err:
        save_uploads([("suite.zip", outer)], tmp_path / "uploads", limits)
    assert err.value.message == ("suite.zip: entry 'logs/run.eval': unpacks to more than 8 MiB (10 MiB, with the 1 MiB "
                                 "of the archive holding it) (FAULTLINE_MAX_UNPACKED_MB); refused")
    assert unpacked == [] and not (tmp_path / "uploads").exists()
    # the outer archive alone passes: the refusal is the inner one's
    alone = _zip([("logs/a/preds.jsonl", b'{"model": "m"}\n')])
    assert [p.name for p in save_uploads([("suite.zip", alone)], tmp_path / "ok", limits)] == ["suite"]


def test_an_inner_archive_s_entries_count_with_the_outer_ones(tmp_path, monkeypatch):
    import ui.uploads as uploads

    monkeypatch.setattr(uploads, "MAX_ENTRIES", 50)
    inner = _zip([("header.json", b"{}")] + [(f"samples/{i}_epoch_1.json", b"{}") for i in range(44)])
    outer = _zip([(f"logs/{i}.jsonl", b"{}\n") for i in range(10)] + [("logs/run.eval", inner)])
    with pytest.raises(uploads.UploadRefused) as err:
        uploads.save_uploads([("suite.zip", outer)], tmp_path / "uploads", uploads.Limits.from_env())
    assert err.value.message == ("suite.zip: entry 'logs/run.eval': 45 entries (with the 11 of the archive holding "
                                 "it), more than 50; refused")
    assert not (tmp_path / "uploads").exists()


def test_a_bomb_inside_an_eval_inside_a_zip_is_refused_from_its_headers(tmp_path):
    """The case of the report: 256 MiB of zeros in an .eval in a .zip (unfixed: unpacked, then
    inflated by ingest until its own cap). Refused naming both, with nothing written."""
    from ui.uploads import Limits, UploadRefused, save_uploads

    buf = io.BytesIO()
    info = zipfile.ZipInfo("samples/1_epoch_1.json")
    info.compress_type = zipfile.ZIP_DEFLATED
    with zipfile.ZipFile(buf, "w") as z, z.open(info, "w", force_zip64=True) as member:
        for _ in range(16):
            member.write(b"\0" * (16 * MiB))
    outer = _zip([("logs/bomb.eval", buf.getvalue())], zipfile.ZIP_STORED)  # stored: the outer looks plain
    with pytest.raises(UploadRefused) as err:
        save_uploads([("suite.zip", outer)], tmp_path / "uploads", Limits.from_env())
    assert err.value.message == ("suite.zip: entry 'logs/bomb.eval': entry 'samples/1_epoch_1.json' expands more than "
                                 "200× (a compression bomb?); refused")
    assert not (tmp_path / "uploads").exists()


def test_a_good_eval_inside_a_zip_is_unpacked(tmp_path):
    from ui.uploads import save_uploads

    inner = _zip([("header.json", b"{}"), ("samples/1_epoch_1.json", b"{}")])
    folder, = save_uploads([("suite.zip", _zip([("logs/run.eval", inner)]))], tmp_path / "uploads")
    assert (folder / "logs" / "run.eval").read_bytes() == inner


def test_a_broken_archive_inside_a_zip_is_named(tmp_path):
    from ui.uploads import UploadRefused, save_uploads

    with pytest.raises(UploadRefused) as err:
        save_uploads([("suite.zip", _zip([("logs/run.eval", b"not a zip")]))], tmp_path / "uploads")
    assert err.value.message == "suite.zip: entry 'logs/run.eval': not a readable .eval archive (zip); refused"


# ---------------------------------------------------------------- 5. formula cells of a workbook


def _workbook(path: Path, cached: str | None) -> Path:
    """A workbook whose C2 is the formula ="fo"&"ur", with `cached` as its stored value (None: as
    openpyxl and other generators write it, no value)."""
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Preds"
    sheet.append(["model", "instance_id", "output", "correct", "note"])
    sheet.append(["m", "1", '="fo"&"ur"', True, "=1+1"])
    sheet.append(["m", "2", "five", False, "=1+1"])
    book.save(path)
    if cached is not None:  # what a spreadsheet program stores beside each formula it computed
        with zipfile.ZipFile(path) as z:
            parts = {n: z.read(n) for n in z.namelist()}
        xml = parts["xl/worksheets/sheet1.xml"].decode()
        formula = '<c r="C2"><f>"fo"&amp;"ur"</f><v /></c>'
        assert formula in xml
        xml = xml.replace(formula, f'<c r="C2" t="str"><f>"fo"&amp;"ur"</f><v>{cached}</v></c>')
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
            for name, data in parts.items():
                z.writestr(name, xml.encode() if name == "xl/worksheets/sheet1.xml" else data)
    return path


def test_a_formula_cell_with_no_computed_value_is_refused_naming_sheet_and_cell(tmp_path, tmp_db):
    book = _workbook(tmp_path / "preds.xlsx", None)
    r = run_module("ingest", book, "--db", tmp_db)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr == (f"error: {book}: sheet 'Preds', cell C2 (column 'output'): a formula (=\"fo\"&\"ur\") whose "
                        "value was never computed — the file holds no value for it (it was written by a program, not "
                        "saved by a spreadsheet); open and save it in Excel or LibreOffice, or export it as CSV\n")
    assert not tmp_db.exists()


def test_a_formula_cell_reads_as_its_computed_value(tmp_path, tmp_db):
    # the unread column "note" holds formulas with no value: it is not read, so not refused
    book = _workbook(tmp_path / "preds.xlsx", "four")
    r = run_module("ingest", book, "--db", tmp_db)
    assert r.returncode == 0, r.stderr
    assert q(tmp_db, "SELECT instance_id, output_text, is_correct FROM outcomes ORDER BY 1") == [
        ("1", "four", True), ("2", "five", False)]


# ---------------------------------------------------------------- 6. one JSONL line, bounded


def _over_the_cap(path: Path, first: dict, cap: int) -> Path:
    big = {"model": "m", "instance_id": "2", "output": "x" * cap, "correct": False}
    path.write_text(json.dumps(first) + "\n" + json.dumps(big) + "\n")
    return path


GOOD_ROW = {"model": "m", "instance_id": "1", "output": "a", "correct": True}


def test_a_jsonl_line_over_the_cap_is_refused_with_its_line(tmp_path, tmp_db):
    log = _over_the_cap(tmp_path / "preds.jsonl", GOOD_ROW, 1000)
    r = run_module("ingest", log, "--db", tmp_db, env={**__import__("os").environ, "FAULTLINE_MAX_LINE_BYTES": "1000"})
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr == (f"error: {log}:2: a line longer than the 1000 bytes limit on one line (a line "
                        "is held whole to read it; raise FAULTLINE_MAX_LINE_BYTES to read it)\n")
    assert not tmp_db.exists()
    # under the cap it reads
    ok = run_module("ingest", log, "--db", tmp_db, env={**__import__("os").environ, "FAULTLINE_MAX_LINE_BYTES": "2K"})
    assert ok.returncode == 0, ok.stderr
    assert q(tmp_db, "SELECT instance_id, length(output_text) FROM outcomes ORDER BY 1") == [("1", 1), ("2", 1000)]


def test_every_jsonl_reader_holds_at_most_the_cap_of_a_line(tmp_path):
    from ingest.jsonio import bounded_lines, load_jsonl, read_jsonl
    from ingest.sources import custom

    limits = IngestLimits(line_bytes=1000)
    log = _over_the_cap(tmp_path / "x.jsonl", GOOD_ROW, 5000)
    message = (f"{log}:2: a line longer than the 1000 bytes limit on one line (a line is held whole "
               "to read it; raise FAULTLINE_MAX_LINE_BYTES to read it)")
    for read in (lambda: load_jsonl(log, None, limits), lambda: list(read_jsonl(log, None, limits)),
                 lambda: list(custom._text_rows(log, "jsonl", limits))):
        with pytest.raises(IngestError) as caught:
            read()
        assert caught.value.message == message
    # what is held of the long line: never more than the cap and one byte
    held = []

    class Handle(io.BytesIO):
        def readline(self, size=-1):
            piece = super().readline(size)
            held.append(size)
            return piece

    with pytest.raises(IngestError):
        list(bounded_lines(log, Handle(log.read_bytes()), limits))
    assert max(held) <= 1001
    # a CSV line too (csv reads a line whole before its field limit applies)
    table = tmp_path / "x.csv"
    table.write_text("model,instance_id,output,correct\nm,1," + "x" * 5000 + ",true\n")
    with pytest.raises(IngestError) as caught:
        list(custom._text_rows(table, "csv", limits))
    assert caught.value.message == (f"{table}:2: a line longer than the 1000 bytes limit on one line "
                                    "(a line is held whole to read it; raise FAULTLINE_MAX_LINE_BYTES to read it)")


def test_reading_a_jsonl_a_line_at_a_time_keeps_its_hash_and_its_messages(tmp_path):
    import hashlib

    from ingest.jsonio import load_jsonl, read_bytes

    log = tmp_path / "x.jsonl"
    log.write_bytes(b'{"a": 1}\r\n\n  \n{"a": 2}\n{"a": ')
    one_at_a_time, whole = hashlib.sha256(), hashlib.sha256()
    with pytest.raises(IngestError) as caught:
        load_jsonl(log, one_at_a_time)
    assert caught.value.message == f"{log}:5:7: truncated JSON line: Expecting value"
    read_bytes(log, whole)
    assert one_at_a_time.hexdigest() == whole.hexdigest()
    log.write_bytes(b'{"a": 1}\n{"a": \n{"a": 3}\n')
    with pytest.raises(IngestError, match=r"x.jsonl:2:\d+: invalid JSON"):
        load_jsonl(log)
    log.write_bytes(b'{"a": 1}\n{"a": "caf\xe9"}\n')
    with pytest.raises(IngestError) as caught:
        load_jsonl(log)
    assert caught.value.message == f"{log}:2: not UTF-8 text (invalid continuation byte at byte 10)"
    log.write_bytes(b'{"a": 1}\n{"a": 2}\n')
    assert load_jsonl(log) == [(1, {"a": 1}), (2, {"a": 2})]
