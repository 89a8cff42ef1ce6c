"""Uploads built to hurt are refused with a message and nothing written; paths typed into the
app are read only under the configured roots, whatever exists elsewhere."""

from __future__ import annotations

import io
import json
import random
import stat
import zipfile

import pytest
from streamlit.testing.v1 import AppTest

from conftest import ROOT
from ui.uploads import Limits, UploadRefused, allowed_path, data_roots, save_uploads

SMALL = Limits(file_bytes=1024 * 1024, unpacked_bytes=4 * 1024 * 1024, line_bytes=64 * 1024)
GOOD = b'{"model": "m", "instance_id": "1", "output": "x", "correct": true}\n'


def _zip(entries: list[tuple[zipfile.ZipInfo | str, bytes]]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for info, data in entries:
            z.writestr(info, data)
    return buf.getvalue()


def _symlink_entry() -> zipfile.ZipInfo:
    info = zipfile.ZipInfo("samples/link.json")
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    return info


CASES = [
    ("zip slip", "log.eval", lambda: _zip([("../../escape.json", b"{}")]), "points outside the archive"),
    ("absolute entry", "log.eval", lambda: _zip([("/etc/cron.d/x", b"{}")]), "points outside the archive"),
    ("windows drive", "log.eval", lambda: _zip([("C:/x.json", b"{}")]), "points outside the archive"),
    ("symlink entry", "log.eval", lambda: _zip([(_symlink_entry(), b"/etc/passwd")]), "is a symbolic link"),
    ("bomb by ratio", "log.eval", lambda: _zip([("samples/big.json", b"0" * (3 * 1024 * 1024))]), "expands more than 200×"),
    ("bomb by total", "log.eval",
     # two-letter noise packs about 7:1, far from a bomb's ratio, but unpacks past the cap
     lambda: _zip([(f"samples/{i}.json", bytes(random.Random(i).choices(b"ab", k=1024 * 1024)))
                   for i in range(5)]), "unpacks to more than 4 MiB"),
    ("not a zip", "log.eval", lambda: b"not a zip at all", "not a readable .eval archive"),
    ("oversized file", "preds.jsonl", lambda: GOOD * (1024 * 1024 // len(GOOD) + 1), "larger than 1 MiB"),
    ("non UTF-8", "preds.csv", lambda: "model,output\nm,caf\xe9\n".encode("latin-1"), "not UTF-8 text"),
    ("huge line", "preds.jsonl", lambda: b'{"output": "' + b"a" * (65 * 1024) + b'"}\n', "a line longer than 0 MiB"),
    ("path in name", "../../etc/cron.d/x.jsonl", lambda: GOOD, "may not contain a folder"),
    ("absolute name", "/tmp/x.jsonl", lambda: GOOD, "may not contain a folder"),
    ("windows name", "..\\x.jsonl", lambda: GOOD, "may not contain a folder"),
    ("unknown type", "run.sh", lambda: b"rm -rf /", "not a log type Faultline reads"),
]


@pytest.mark.parametrize("name, filename, build, message", CASES, ids=[c[0] for c in CASES])
def test_hostile_upload_is_refused_and_nothing_is_written(tmp_path, name, filename, build, message):
    root = tmp_path / "uploads"
    with pytest.raises(UploadRefused) as err:
        # a good file in the same upload is not written either
        save_uploads([("good.jsonl", GOOD), (filename, build())], root, SMALL)
    assert message in err.value.message
    assert not root.exists() or not any(root.rglob("*"))
    assert not (tmp_path / "escape.json").exists()


def test_a_real_bomb_is_stopped_without_unpacking_it(tmp_path):
    # 256 MiB of zeros in a quarter of a MiB: refused after reading a few MiB, never unpacked
    buf = io.BytesIO()
    info = zipfile.ZipInfo("samples/1_epoch_1.json")
    info.compress_type = zipfile.ZIP_DEFLATED
    with zipfile.ZipFile(buf, "w") as z, z.open(info, "w", force_zip64=True) as member:
        chunk = b"\0" * (16 * 1024 * 1024)
        for _ in range(16):
            member.write(chunk)
    data = buf.getvalue()
    assert len(data) < 1024 * 1024
    with pytest.raises(UploadRefused, match="expands more than"):
        save_uploads([("bomb.eval", data)], tmp_path / "uploads", Limits.from_env())
    assert not (tmp_path / "uploads").exists()


def test_same_name_uploads_never_share_a_folder_or_overwrite(tmp_path):
    root = tmp_path / "uploads"
    first = save_uploads([("preds.jsonl", b"1\n")], root, SMALL)
    second = save_uploads([("preds.jsonl", b"2\n")], root, SMALL)  # same second, other session
    both = save_uploads([("preds.jsonl", b"3\n"), ("preds.jsonl", b"4\n")], root, SMALL)
    paths = first + second + both
    assert len({p.parent for p in first + second}) == 2
    assert [p.read_bytes() for p in paths] == [b"1\n", b"2\n", b"3\n", b"4\n"]
    assert len(set(paths)) == 4 and all(root in p.parents for p in paths)


def test_good_eval_archive_and_bom_csv_are_accepted(tmp_path):
    archive = _zip([("header.json", b"{}"), ("samples/1_epoch_1.json", b"{}")])
    written = save_uploads([("log.eval", archive), ("preds.csv", b"\xef\xbb\xbfmodel,output\nm,x\n")],
                           tmp_path / "u", SMALL)
    assert [p.name for p in written] == ["log.eval", "preds.csv"]


def test_paths_only_under_the_data_roots(tmp_path, monkeypatch):
    inside, outside = tmp_path / "root", tmp_path / "elsewhere"
    inside.mkdir()
    outside.mkdir()
    (inside / "preds.jsonl").write_bytes(GOOD)
    (outside / "secret.csv").write_text("password,hunter2\n")
    (inside / "link.csv").symlink_to(outside / "secret.csv")
    monkeypatch.setenv("FAULTLINE_DATA_ROOTS", str(inside))
    roots = data_roots(tmp_path / "uploads")
    assert roots == [inside.resolve()]
    assert allowed_path(str(inside / "preds.jsonl"), roots) == (inside / "preds.jsonl").resolve()
    assert allowed_path("preds.jsonl", roots) == (inside / "preds.jsonl").resolve()  # relative: under the first root
    messages = []
    for path in (outside / "secret.csv", outside / "missing.csv", inside / "link.csv", "/etc/passwd",
                 inside / ".." / "elsewhere" / "secret.csv"):
        with pytest.raises(UploadRefused) as err:
            allowed_path(str(path), roots)
        messages.append(err.value.message.replace(str(path), "PATH"))
        assert "hunter2" not in err.value.message
    # the same answer whether the file exists or not: nothing about the file system leaks
    assert len(set(messages)) == 1 and "reads logs only under" in messages[0]
    with pytest.raises(UploadRefused, match="no such file or folder under the allowed folders"):
        allowed_path(str(inside / "nope.jsonl"), roots)


def test_default_roots_are_the_data_folder_and_uploads(tmp_path, monkeypatch):
    monkeypatch.delenv("FAULTLINE_DATA_ROOTS", raising=False)
    assert data_roots(tmp_path / "uploads") == [(ROOT / "data").resolve(), (tmp_path / "uploads").resolve()]


def test_app_load_panel_refuses_a_path_outside_the_roots(tmp_path, monkeypatch):
    db = tmp_path / "store.duckdb"
    import store

    with store.write_session(db):
        pass  # an empty store: the page shows the load panel
    monkeypatch.setenv("FAULTLINE_DB", str(db))
    monkeypatch.setenv("FAULTLINE_DATA_ROOTS", str(tmp_path / "logs"))
    monkeypatch.delenv("FAULTLINE_READ_ONLY", raising=False)
    from ui import jobs

    before = len(jobs.jobs())
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.run()
    at.text_input[0].input("/etc/passwd")
    next(b for b in at.button if b.label == "Load").click()
    at.run()
    assert not at.exception
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and "reads logs only under" in errors[0] and "root:" not in errors[0]
    assert len(jobs.jobs()) == before


# ---------------------------------------------------------------- issue 19 (item 7) and issue 17 (item 4)


def _zeros_zip(entries: int, size: int) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        zeros = b"\0" * size
        for i in range(entries):
            z.writestr(f"runs/v1/run{i}/instances.json", zeros)
    return buf.getvalue()


@pytest.mark.parametrize("name", ["suite.zip", "log.eval"])
def test_a_thousand_entries_of_a_mebibyte_of_zeros_are_refused_from_their_headers(tmp_path, monkeypatch, name):
    data = _zeros_zip(1000, 1024 * 1024)  # 1,000 MiB in about 1 MB: under the 1 GiB total cap
    opened = []
    real_open = zipfile.ZipFile.open
    monkeypatch.setattr(zipfile.ZipFile, "open", lambda self, *a, **k: opened.append(a) or real_open(self, *a, **k))
    with pytest.raises(UploadRefused) as err:
        save_uploads([(name, data)], tmp_path / "uploads", Limits.from_env())
    assert f"{name}: entry 'runs/v1/run0/instances.json' expands more than 200× (a compression bomb?); refused" \
        == err.value.message
    # the unfixed check inflated all 1,000 MiB in the server to count them, and accepted them
    assert opened == []
    assert not (tmp_path / "uploads").exists()


def test_many_small_entries_that_expand_too_much_together_are_refused(tmp_path):
    # each 64 KiB entry passes alone; together 64 MiB from a few hundred KiB
    data = _zeros_zip(1024, 64 * 1024)
    with pytest.raises(UploadRefused, match=r"suite.zip: expands more than 200× as a whole \(64 MiB"):
        save_uploads([("suite.zip", data)], tmp_path / "uploads", Limits.from_env())


def test_an_entry_that_lies_about_its_size_is_stopped_while_unpacking(tmp_path):
    data = bytearray(_zip([("runs/v1/r/instances.json", bytes(random.Random(1).choices(b"ab", k=300_000)))]))
    # forge the declared size (local and central headers) down to 100 bytes
    for sig, offset in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):
        at = data.find(sig) + offset
        data[at:at + 4] = (100).to_bytes(4, "little")
    with pytest.raises(UploadRefused) as err:
        save_uploads([("suite.zip", bytes(data))], tmp_path / "uploads", SMALL)
    assert err.value.message.startswith("suite.zip: ")
    assert not any((tmp_path / "uploads").rglob("*.json"))


def test_a_zip_of_a_folder_of_logs_is_unpacked_into_its_own_folder(tmp_path):
    rows = [{"model": "m", "instance_id": str(i), "output": "x", "correct": i % 2 == 0} for i in range(4)]
    suite = _zip([("logs/", b""), ("logs/a/preds.jsonl", "".join(json.dumps(r) + "\n" for r in rows).encode()),
                  ("logs/empty.txt", b"")])
    first, second = (save_uploads([("my suite.zip", suite)], tmp_path / "uploads", SMALL)[0] for _ in range(2))
    assert first != second and first.name == "my suite" and first.parent.parent == tmp_path / "uploads"
    assert sorted(p.relative_to(first).as_posix() for p in first.rglob("*") if p.is_file()) == [
        "logs/a/preds.jsonl", "logs/empty.txt"]
    assert (first / "logs" / "empty.txt").read_bytes() == b""


def test_an_upload_name_too_long_for_a_file_system_is_refused(tmp_path):
    name = "x" * 296 + ".jsonl"
    with pytest.raises(UploadRefused) as err:
        save_uploads([(name, GOOD)], tmp_path / "uploads", SMALL)
    assert err.value.message == (f"{'x' * 40}…: a file name of 302 bytes, longer than the 255 a file system takes; "
                                 "rename it and upload again")
    assert not (tmp_path / "uploads").exists()


@pytest.mark.parametrize("typed, why", [("logs/a\x00b.jsonl", "it holds a NUL byte"),
                                        ("d" * 300 + "/x.jsonl", "File name too long")])
def test_a_typed_path_with_a_nul_byte_or_a_name_too_long_is_refused(tmp_path, typed, why):
    # the unfixed check let Python's ValueError / OSError end the page in a traceback
    with pytest.raises(UploadRefused) as err:
        allowed_path(typed, [tmp_path.resolve()])
    assert "not a usable path" in err.value.message and why in err.value.message


def test_a_spreadsheet_uploads_whole_and_a_fake_one_is_refused(tmp_path):
    """The CLI reads .xlsx: the picker takes it too, checked from its central directory like any
    zip (a spreadsheet is one), kept whole for ingest to read."""
    import io

    from openpyxl import Workbook

    from ui.uploads import UPLOAD_TYPES, UploadRefused, check_upload, save_uploads

    assert "xlsx" in UPLOAD_TYPES
    book = Workbook()
    sheet = book.active
    sheet.append(["model", "dataset", "instance_id", "input", "output", "reference", "correct"])
    sheet.append(["m", "d", "q1", "2+2?", "5", "4", 0])
    buffer = io.BytesIO()
    book.save(buffer)
    assert check_upload("preds.xlsx", buffer.getvalue()) == "preds.xlsx"
    saved = save_uploads([("preds.xlsx", buffer.getvalue())], tmp_path)
    assert [p.name for p in saved] == ["preds.xlsx"] and saved[0].read_bytes() == buffer.getvalue()
    with pytest.raises(UploadRefused, match="preds.xlsx: "):
        check_upload("preds.xlsx", b"model,dataset\nm,d\n")
