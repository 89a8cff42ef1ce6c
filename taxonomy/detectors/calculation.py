"""Calculation Error: a worked answer with a false arithmetic step.

Rule: a claim "expression = result" in the output (numbers, + − × ÷ / *, parentheses, % as
hundredths, $ signs; GSM8K's "<<expr=result>>" included), or "N% of M = / is R", whose result is wrong beyond the rounding of
the digits shown. It is reported when the answer's final number differs from the reference's
final number (the false step carries into the answer), or when there is no numeric reference to
compare with. A false step in an answer that still ends on the reference number is not reported:
it is not what made the answer wrong.

Incorrect Method/Application: a chain "2 + 3 * 4 = 5 * 4 = 20" whose first expression, worked
strictly left to right, gives the chain's result while the order of operations gives another
(and the expression mixes + or − with × or ÷, without brackets): "Ignores the order of
operations", reported on the same condition as a false step.
"""

from __future__ import annotations

import ast
import re
from fractions import Fraction

from .base import (
    Evidence,
    Finding,
    Look,
    Title,
    final_number,
    gold_refs,
    output_of,
    to_number,
)

_NUM = r"-?\$?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?%?"
_OP = r"[+\-−×x*/÷]"
# a maximal chain "a op b (op c)* = r"; the lookbehinds keep the match from starting inside a
# longer expression or a word, the lookahead from ending inside one ("= 12 × 3" continues; "= 296.
# 296 - 57" does not: a full stop ends the claim)
_CLAIM = re.compile(
    r"(?<![\w.,$%)])(?<![+\-−×*/÷]\s)(?<![+\-−×*/÷])"
    r"(\(*" + _NUM + r"\)*(?:\s*" + _OP + r"\s*\(*" + _NUM + r"\)*)+)"
    r"\s*=\s*(" + _NUM + r")(?!(?:[.,]?\d)*\s*[+\-−×x*/÷(\d])"
)


def _evaluate(expr: str) -> Fraction | None:
    """Exact value of an arithmetic expression, or None when it is not plain arithmetic."""
    text = expr.replace("$", "").replace(",", "").replace("−", "-").replace("×", "*").replace("÷", "/")
    text = re.sub(r"(?<=[\d)\s])x(?=[\s\d(])", "*", text)
    text = re.sub(r"(\d+(?:\.\d+)?)%", r"(\1/100)", text)
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError:
        return None

    def ev(node):
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return Fraction(str(node.value))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -ev(node.operand)
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.Div)):
            a, b = ev(node.left), ev(node.right)
            if isinstance(node.op, ast.Add):
                return a + b
            if isinstance(node.op, ast.Sub):
                return a - b
            if isinstance(node.op, ast.Mult):
                return a * b
            if b == 0:
                raise ZeroDivisionError
            return a / b
        raise ValueError(type(node).__name__)

    try:
        return ev(tree)
    except (ValueError, ZeroDivisionError, RecursionError):
        return None


def _is_false(value: Fraction | None, stated: str) -> bool:
    """Whether the stated result is wrong beyond the rounding of its digits. A result written as a
    percent is right as hundredths ("9/20 = 45%") or as the number of percent an expression that
    multiplies by 100 gives ("0.45 × 100 = 45%")."""
    if value is None:
        return False
    digits = stated.replace("$", "").rstrip("%")
    got = to_number(digits)
    if got is None:
        return False
    # a result written with d decimals is right if it rounds the true value to d decimals
    decimals = len(digits.split(".")[1]) if "." in digits else 0
    tolerance = Fraction(1, 2 * 10**decimals)
    if stated.endswith("%"):
        return abs(value - got / 100) > tolerance / 100 and abs(value - got) > tolerance
    return abs(value - got) > tolerance


# "15% of $80 = $10", "20 percent of 150 is 25"
_PERCENT_OF = re.compile(
    r"(?<![\w.,])(\d+(?:\.\d+)?)\s*(?:%|percent)\s+of\s+(" + _NUM + r")\s*(?:=|is|equals|comes to)\s*(" + _NUM + r")(?!(?:[.,]?\d)*\s*[+\-−×x*/÷(\d])",
    re.I)


def arithmetic_claims(text: str) -> list[str]:
    """Every "expression = result" claim of the text, true or false, verbatim."""
    return [m.group(0) for m in _CLAIM.finditer(text)]


def false_steps(text: str) -> list[str]:
    """Claims like "12 × 7 = 86", "3 + 4 × 2 = 14" or "15% of 80 = 10" whose stated result is wrong, verbatim."""
    found = []
    for m in _CLAIM.finditer(text):
        expr, result = m.groups()
        if expr.count("(") != expr.count(")"):
            continue
        if _is_false(_evaluate(expr), result):
            found.append((m.start(), m.group(0)))
    for m in _PERCENT_OF.finditer(text):
        pct, base, result = m.groups()
        if _is_false(_evaluate(f"{pct}/100*{base}"), result):
            found.append((m.start(), m.group(0)))
    return [claim for _, claim in sorted(found)]


_EXPR = r"\(*" + _NUM + r"\)*(?:\s*" + _OP + r"\s*\(*" + _NUM + r"\)*)+"
_CHAIN = re.compile(r"(?<![\w.,$%)])(" + _EXPR + r")((?:\s*=\s*(?:" + _EXPR + "|" + _NUM + r"))+)")


def _left_to_right(expr: str) -> Fraction | None:
    """The value of a bracket-free expression worked strictly from left to right."""
    text = expr.replace("$", "").replace(",", "").replace("−", "-").replace("×", "*").replace("÷", "/")
    text = re.sub(r"(?<=[\d\s])x(?=[\s\d])", "*", text)
    parts = re.findall(r"(?:(?<=^)|(?<=[*/+\-]))\s*(-?\d+(?:\.\d+)?)|([*/+\-])", text)
    value, op = None, None
    for number, operator in parts:
        if operator and value is not None and op is None:
            op = operator
            continue
        if not number:
            return None
        n = Fraction(number)
        if value is None:
            value = n
        elif op == "+":
            value += n
        elif op == "-":
            value -= n
        elif op == "*":
            value *= n
        elif op == "/":
            if n == 0:
                return None
            value /= n
        op = None
    return value


def precedence_slips(text: str) -> list[str]:
    """Chains whose first expression was worked left to right against the order of operations."""
    found = []
    for m in _CHAIN.finditer(text):
        first, rest = m.group(1), m.group(2)
        if "(" in first or not (re.search(r"[+\-−]\s*\$?\d", first[1:]) and re.search(r"[×x*/÷]", first)):
            continue
        last = rest.split("=")[-1]
        right, stated, naive = _evaluate(first), _evaluate(last), _left_to_right(first)
        if None not in (right, stated, naive) and right != stated and naive == stated:
            found.append(m.group(0).strip())
    return found


ORDER_OF_OPERATIONS = Title("Ignores the order of operations", "Incorrect Method/Application")
MISCALCULATES = Title("Miscalculates an intermediate step", "Calculation Error")


def detect_calculation(rec: dict) -> Finding | Look | None:
    out = output_of(rec)
    bad = false_steps(out)
    slips = precedence_slips(out)
    if not bad and not slips:
        return None
    got = final_number(out)
    ref_finals = [f for f in (final_number(r) for r in gold_refs(rec)) if f is not None]
    if slips and not (ref_finals and got is not None and any(got[0] == f[0] for f in ref_finals)):
        return ORDER_OF_OPERATIONS.finding(
            "calculation",
            f"The model works \"{slips[0]}\" from left to right, doing the addition or subtraction before the "
            f"multiplication or division; the slip carries into its answer.",
            tuple(Evidence("Applies multiplication and division before addition and subtraction", q) for q in slips[:3]),
        )
    if not bad:
        return None
    if ref_finals and got is not None and any(got[0] == f[0] for f in ref_finals):
        return Look("calculation", f"\"{bad[0]}\" is false, but the answer still ends on the reference's number, so "
                                   f"it is not what made the answer wrong")
    against = f" and ends on {got[1]} instead of {ref_finals[0][1]}" if ref_finals and got else ""
    return MISCALCULATES.finding(
        "calculation",
        f"The model states \"{bad[0]}\", which is arithmetically false{against}; the slip carries into its answer.",
        tuple(Evidence("Computes each step correctly", b) for b in bad[:3]),
    )
