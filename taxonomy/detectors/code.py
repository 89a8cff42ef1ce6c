"""Code Error: generated code that cannot be what the task asked for.

- Does not parse: a fenced Python block (```python / ```py), or an output that is bare Python
  (opens with def / class / import), with a syntax error.
- The wrong function: the prompt names the function to write (`name(…)` in backticks, "def
  name(", "function name") and the output defines functions, none of them with that name.
- Judged wrong with no visible slip: the task asks for code (the prompt says "write / implement /
  complete a function …" or the reference is code) and the output is code that parses, but
  failed the tests; what is wrong in it needs running it, but the error is the code's.
"""

from __future__ import annotations

import ast
import re

from .base import Evidence, Finding, Title, gold_refs, input_of, output_of

FENCE = re.compile(r"```(\w*)\n(.*?)```", re.S)
_DEFINED = re.compile(r"^\s*(?:async\s+)?(?:def|function)\s+([A-Za-z_]\w*)\s*\(", re.M)
_REQUIRED = re.compile(r"`([A-Za-z_]\w*)\s*\(|\bdef\s+([A-Za-z_]\w*)\s*\(|\bfunction\s+(?:called\s+|named\s+)?`?([A-Za-z_]\w*)`?\s*\(")
_ASKS_CODE = re.compile(r"\b(?:write|implement|complete|define|create)\b[^.\n]{0,40}\b(?:function|method|class|program|script|code)\b", re.I)


def _python_blocks(text: str) -> list[str]:
    """Fenced Python blocks; else the whole output when it is bare Python (opens with def / class / import)."""
    blocks = [body for lang, body in FENCE.findall(text) if lang.lower() in ("python", "py")]
    if not blocks and not FENCE.search(text) and re.match(r"\s*(?:def|class|import|from\s+\S+\s+import)\b", text):
        blocks = [text]
    return blocks


BAD_CODE = Title("Generated code does not parse", "Code Error")


def detect_bad_code(rec: dict) -> Finding | None:
    for body in _python_blocks(output_of(rec)):
        try:
            ast.parse(body)
        except SyntaxError as exc:
            line = body.splitlines()[exc.lineno - 1] if exc.lineno and exc.lineno <= len(body.splitlines()) else None
            return BAD_CODE.finding(
                "bad_code",
                f"The Python code in the answer has a syntax error ({exc.msg}, line {exc.lineno}), so it cannot run.",
                (Evidence("Returns code that parses", line.strip() if line and line.strip() else None),),
            )
    return None


WRONG_FUNCTION = Title("Defines the wrong function name", "Code Error")


def detect_wrong_function(rec: dict) -> Finding | None:
    required = {next(g for g in m.groups() if g) for m in _REQUIRED.finditer(input_of(rec))}
    defined = _DEFINED.findall(output_of(rec))
    if not required or not defined or required & set(defined):
        return None
    want = sorted(required)[0]
    m = re.search(r"(?:def|function)\s+" + re.escape(defined[0]) + r"\s*\([^)\n]*\)?", output_of(rec))
    return WRONG_FUNCTION.finding(
        "wrong_function",
        f"The task asks for `{want}`, but the code defines `{'`, `'.join(dict.fromkeys(defined))}`, so the tests cannot call it.",
        (Evidence(f"Defines `{want}` as the task asks", m.group(0) if m else None),),
    )


def _is_code(text: str) -> bool:
    return bool(FENCE.search(text) or _DEFINED.search(text))


CODE_FAILS_TESTS = Title("Code fails the task's tests", "Code Error")


def detect_code_judged_wrong(rec: dict) -> Finding | None:
    out = output_of(rec)
    asks = _ASKS_CODE.search(input_of(rec)) or any(_is_code(r) for r in gold_refs(rec))
    if not asks or not _is_code(out):
        return None
    first = next((line for line in out.splitlines() if _DEFINED.match(line)), None)
    return CODE_FAILS_TESTS.finding(
        "code_judged_wrong",
        "The answer is code that parses and defines what was asked, but it was scored a failure; its fault (logic, an "
        "edge case) needs the tests run to pin down.",
        (Evidence("Passes the task's tests", first.strip() if first else None),),
    )
