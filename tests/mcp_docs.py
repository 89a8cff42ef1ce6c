"""The example answers in docs/mcp.md, taken from the demo store.

Each example is a `json` block right after a marker naming the call, e.g.

    <!-- example: compare {"a": "demo/atlas-7b", "b": "demo/atlas-70b", "limit": 2} -->

tests/mcp_server/test_mcp.py checks every block is what that call answers on a freshly built demo store;
`python tests/mcp_docs.py` writes them again after a change.
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "mcp.md"
# the block's text has no line starting with ``` (JSON escapes the newlines inside strings)
EXAMPLE = re.compile(r"(<!-- example: (\w+) (\{.*?\}) -->\n```json\n)(.*?)(\n```)$", re.S | re.M)


def examples(text: str) -> list[tuple[str, dict, str]]:
    """(tool, arguments, the block's JSON text) for every example in `text`."""
    return [(m.group(2), json.loads(m.group(3)), m.group(4)) for m in EXAMPLE.finditer(text)]


def shown(answer_text: str) -> str:
    """An answer as the page shows it: the wire's compact JSON, indented for reading."""
    return json.dumps(json.loads(answer_text), indent=2, ensure_ascii=False)


def rendered(text: str, db) -> str:
    """`text` with every example block replaced by what its call answers on `db` (default links)."""
    from mcp_server.answers import Settings, answer

    settings = Settings(db=str(db), base_url="http://localhost:8501")

    def one(m: re.Match) -> str:
        return m.group(1) + shown(answer(m.group(2), settings, **json.loads(m.group(3)))[0]) + m.group(5)

    return EXAMPLE.sub(one, text)


def main() -> int:
    sys.path.insert(0, str(ROOT))
    from demo import build_demo

    # a script run outside pytest (no session's demo store to copy): it builds the demo as the
    # fixture does, with the same builder, so the examples are what the tests check them against
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "demo.duckdb"
        build_demo(db)
        DOC.write_text(rendered(DOC.read_text(), db))
    print(f"wrote the examples of {DOC.relative_to(ROOT)} from the demo store")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
