"""The house has floors (docs/architecture.md): no module imports one of a higher floor, and no
modules import each other round in a circle, counting imports inside functions too (a lazy
import is still an import). The one exemption: a command-line entry point (`cli.py`,
`__main__.py`) may dispatch to a higher floor's command (`python -m ingest --demo`,
`python -m stats mcp`), as `app.py` does to every page."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from conftest import ROOT

# lowest first; the pages, app.py and serve.py are the top floor
LAYERS = ("core", "store", "export", "ingest", "taxonomy", "demo", "stats", "mcp_server", "ui", "pages")
TOP = ("app", "serve")
ENTRY_POINTS = ("cli", "__main__")


def _modules() -> dict[str, Path]:
    found = {}
    for package in LAYERS:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    for name in TOP:
        found[name] = ROOT / f"{name}.py"
    return found


def _imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The project modules `name` imports anywhere in its text (each `from X import y` counted
    as an import of X.y when that is a module, else of X)."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            prefix = ".".join(base + ([node.module] if node.module else []))
            targets = [f"{prefix}.{a.name}" if f"{prefix}.{a.name}" in known else prefix for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                out.add(target)
    return out


def _floor(name: str) -> int:
    top = name.split(".")[0]
    return LAYERS.index(top) if top in LAYERS else len(LAYERS)


def _graph() -> dict[str, set[str]]:
    known = _modules()
    return {name: _imports(name, path, known) for name, path in known.items()}


def test_no_module_imports_a_higher_floor():
    graph = _graph()
    upward = sorted(f"{m} -> {t}" for m, targets in graph.items() for t in targets
                    if _floor(t) > _floor(m) and m.rpartition(".")[2] not in ENTRY_POINTS)
    assert upward == []


def test_no_import_circle():
    graph = _graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert circles == []


def test_the_graph_sees_lazy_and_relative_imports():
    """The checks above can fail: the graph finds an import inside a function, a relative one,
    and a `from package import module`."""
    graph = _graph()
    assert "demo" in graph["ui.data"]  # inside active_db's helpers
    assert "ingest.report" in graph["ingest.load"]  # from .report import ...
    assert "core.significance" in graph["stats.compare"]  # from core import significance as t
    assert "mcp_server.server" in graph["stats.cli"]  # the one kind of upward import allowed


def test_docs_state_the_same_floors():
    text = (ROOT / "docs" / "architecture.md").read_text()
    listed = re.search(r"<!-- floors -->\n(.*?)\n<!-- /floors -->", text, re.S).group(1)
    assert tuple(re.findall(r"^\d+\. `(\w+)/`", listed, re.M)) == LAYERS


def test_a_toy_source_added_as_this_page_says_loads(tmp_path, monkeypatch):
    """docs/architecture.md, "Adding a source", followed to the letter with a made-up format: a
    `.toy` file of `id<TAB>answer<TAB>reference` lines, one run of model `toy-model` on `toyset`,
    pass when the answer is the reference."""
    import hashlib
    from typing import Iterator

    import duckdb

    from core.records import InstanceRecord, ParsedRun, PredictionRecord, Reference, RunRecord
    from ingest import IngestError, ReadOptions, ingest_paths, registry
    from ingest.files import head
    from ingest.jsonio import read_bytes
    from ingest.source import Source

    def looks_like(path: Path) -> bool:
        return path.is_file() and path.suffix == ".toy" and (head(path, 64) or b"").startswith(b"toy\n")

    def count_runs(path: Path) -> int:
        return 1

    def read(path: Path, options: ReadOptions) -> Iterator[ParsedRun]:
        raw = read_bytes(path)  # within the size cap, a regular file
        rows = [line.split("\t") for line in raw.decode().splitlines()[1:] if line]
        if any(len(row) != 3 for row in rows):
            raise IngestError(f"{path}: every line holds id, answer and reference, tab-separated")
        instances = [InstanceRecord(instance_id=i, raw_instance_id=i, refs=[Reference(text=ref, correct=True)])
                     for i, _, ref in rows]
        predictions = [PredictionRecord(instance_id=i, output_text=answer, is_correct=answer == ref)
                       for i, answer, ref in rows]
        run = RunRecord(run_id=hashlib.sha1(f"toy|{path.resolve()}".encode()).hexdigest()[:16],
                        source_format="toy", source_path=str(path.resolve()),
                        content_hash=hashlib.sha256(raw).hexdigest(), run_name=path.stem,
                        model=options.model or "toy-model", dataset="toyset", main_metric="exact match",
                        main_metric_source="the toy format", metric_max=1.0, lower_is_better=False,
                        verdict_rule="pass when the answer is the reference")
        yield ParsedRun(run=run, instances=instances, predictions=predictions)

    toy = Source("toy", looks_like, read, count_runs, "a .toy file starting with a 'toy' line")
    generic = next(n for n, r in enumerate(registry.SOURCES) if r.name == "jsonl")
    monkeypatch.setattr(registry, "SOURCES", (*registry.SOURCES[:generic], toy, *registry.SOURCES[generic:]))

    log = tmp_path / "answers.toy"
    log.write_text("toy\nq1\tParis\tParis\nq2\t4\t5\nq3\tblue\tblue\n")
    summary = ingest_paths([log], tmp_path / "store.duckdb")
    assert (summary.runs, summary.predictions, summary.failures) == (1, 3, 1)
    con = duckdb.connect(str(tmp_path / "store.duckdb"), read_only=True)
    try:
        assert con.execute("SELECT model, dataset, source_format FROM runs").fetchall() == [
            ("toy-model", "toyset", "toy")]
        assert con.execute("SELECT instance_id, is_correct FROM predictions ORDER BY instance_id").fetchall() == [
            ("q1", True), ("q2", False), ("q3", True)]
    finally:
        con.close()


# the tests mirror the floors: tests/<floor>/test_*.py, the project's own checks in tests/project/,
# and what several test modules share in support modules at tests/ (conftest.py for fixtures)
TEST_FOLDERS = (*LAYERS, "project")


def _test_modules_imported(path: Path, test_modules: set[str]) -> list[str]:
    """The test modules (by file stem) `path` imports anywhere in its text, in any spelling:
    `tests.ui.test_browser`, `test_browser`, `from tests.ui import test_browser`."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        elif isinstance(node, ast.ImportFrom):  # from . import test_x
            names = [a.name for a in node.names]
        else:
            continue
        found += [n for n in names if n.rpartition(".")[2] in test_modules]
    return found


def test_every_test_module_sits_in_the_folder_of_a_floor():
    misplaced = [str(p.relative_to(ROOT / "tests")) for p in sorted((ROOT / "tests").rglob("test_*.py"))
                 if len(p.relative_to(ROOT / "tests").parts) != 2 or p.parent.name not in TEST_FOLDERS]
    assert misplaced == []


def test_no_test_module_imports_another():
    """Nor does a support module or conftest.py: what tests share lives at tests/."""
    stems = {p.stem for p in (ROOT / "tests").rglob("test_*.py")}
    imports = {str(p.relative_to(ROOT)): found for p in sorted((ROOT / "tests").rglob("*.py"))
               if (found := _test_modules_imported(p, stems))}
    assert imports == {}


def test_the_test_import_check_sees_every_spelling(tmp_path):
    """The check above can fail: a test module imported by its package path, by its bare name (its
    folder is on sys.path), from its package, or inside a function."""
    module = tmp_path / "test_user.py"
    module.write_text("from tests.ui.test_browser import chromium\nimport tests.store.test_store\n"
                      "from tests.ui import test_pages\nfrom browser_kit import settled\n"
                      "def test_x():\n    from test_spending import PRICED\n")
    assert sorted(_test_modules_imported(module, {"test_browser", "test_store", "test_pages", "test_spending"})) == [
        "test_spending", "tests.store.test_store", "tests.ui.test_browser", "tests.ui.test_pages"]
