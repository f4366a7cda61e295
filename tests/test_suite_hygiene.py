"""The suite's own rule (issue 48): a test that measures asserts what the code
guarantees -- statuses, labels, structure, cleanup, that a figure exists and is finite --
never how two noisy measurements compare (one kernel faster than another, a sampled
share above zero).  This scans the tests that send real traffic (``netns``) for an
assertion that orders a measured figure, holds it to a tolerance of another, or asserts
a measured verdict (a verdict's word, or the exit status of ``srperf compare``).

The scan reads each ``assert`` statement whole from the file's syntax tree (so an
assertion over several lines, or a verdict's exit status kept in a variable first, is
seen as one).  An assertion may be allowed with the marker ``# measured-ok: <why>`` on
one of its lines or alone on the line above it (e.g. a bound the code enforces, such as
a shaped link's rate, or a planted input); the reason is required."""

from __future__ import annotations

import ast
import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent
MARKER = "# measured-ok:"
ALLOWED = re.compile(re.escape(MARKER) + r"\s*\S")
"""The marker with its reason (a bare marker allows nothing)."""
MEASURED = re.compile(r"(?:share|stack_share|pdr|kpps|lower_pps|upper_pps|ns_per_packet|cpu_ns"
                      r"|mbps|goodput|mrr|throughput|requests_per_s|change_pct|delta_pct)",
                      re.IGNORECASE)
SHARE = re.compile(r"share", re.IGNORECASE)
VERDICT_WORDS = re.compile(r"^(?:regressions?|improvements?|no_change|REGRESSION|IMPROVEMENT"
                           r"|NO_CHANGE)$")
VERDICT_COMMANDS = frozenset({"compare", "ab", "nightly"})
"""Commands whose exit status is a verdict on measured runs (0 no change, 1 regression)."""
ORDERING = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)


def _mentions_measured(node: ast.AST) -> bool:
    """A name, attribute or string key naming a measured figure anywhere in ``node``."""
    for sub in ast.walk(node):
        word = (sub.id if isinstance(sub, ast.Name) else sub.attr
                if isinstance(sub, ast.Attribute) else sub.value
                if isinstance(sub, ast.Constant) and isinstance(sub.value, str) else None)
        if word is not None and MEASURED.search(word) and len(word) < 40:
            return True
    return False


def _mentions_share(node: ast.AST) -> bool:
    return any(SHARE.search(getattr(s, "id", None) or getattr(s, "attr", None)
                            or (s.value if isinstance(s, ast.Constant)
                                and isinstance(s.value, str) else ""))
               for s in ast.walk(node))


def _number(node: ast.AST) -> float | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) \
            and not isinstance(node.value, bool):
        return float(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _number(node.operand)
        return None if inner is None else -inner
    return None


def _ordering_offends(cmp: ast.Compare) -> bool:
    """``a < b`` (or a chain) where a side is a measured figure and the other is not the
    bound of a figure that merely exists: ``x > 0``, ``x >= 0``, ``0 <= share <= 1``
    pass; a share strictly above 0 does not (whether a sample fell there is chance)."""
    sides = [cmp.left, *cmp.comparators]
    for i, op in enumerate(cmp.ops):
        if not isinstance(op, ORDERING):
            continue
        left, right = sides[i], sides[i + 1]
        for fig, bound, fig_is_left in ((left, right, True), (right, left, False)):
            if not _mentions_measured(fig):
                continue
            value = _number(bound)
            if value is None:
                return True
            # the figure is above (or at least) the bound?
            above = isinstance(op, (ast.Gt, ast.GtE)) == fig_is_left
            strict = isinstance(op, (ast.Lt, ast.Gt))
            if above and value == 0.0:
                if strict and _mentions_share(fig):
                    return True
                continue
            if not above and value == 1.0 and _mentions_share(fig):
                continue
            return True
    return False


def _approx_of_measured(cmp: ast.Compare) -> bool:
    """``a == pytest.approx(b)`` with measured figures on both sides: two noisy
    figures held to a tolerance of each other."""
    sides = [cmp.left, *cmp.comparators]
    for node in sides:
        if isinstance(node, ast.Call) and getattr(node.func, "attr",
                                                   getattr(node.func, "id", "")) == "approx":
            others = [s for s in sides if s is not node]
            if any(_mentions_measured(a) for a in node.args) \
                    and any(_mentions_measured(o) for o in others):
                return True
    return False


def _verdict_word(cmp: ast.Compare) -> bool:
    """A verdict's word (``"regression"``, ``REGRESSION``, ``no_change`` ...) asserted
    equal, unequal, in or not in something: the outcome of a measured comparison."""
    for sub in (cmp.left, *cmp.comparators):
        for node in ast.walk(sub):
            word = node.value if isinstance(node, ast.Constant) and isinstance(
                node.value, str) else getattr(node, "id", None) or getattr(node, "attr", None)
            if isinstance(word, str) and VERDICT_WORDS.match(word):
                return True
    return False


def _is_verdict_call(node: ast.AST) -> bool:
    """A call running ``srperf compare|ab|nightly``: ``main(["compare", ...])``,
    ``cli("compare", ...)``, ``subprocess.run([srperf, "compare", ...])``."""
    if not isinstance(node, ast.Call):
        return False
    for arg in node.args:
        items = arg.elts if isinstance(arg, (ast.List, ast.Tuple)) else [arg]
        words = [e.value for e in items[:2] if isinstance(e, ast.Constant)]
        if any(w in VERDICT_COMMANDS for w in words if isinstance(w, str)):
            return True
    return False


def _verdict_names(tree: ast.AST) -> set[str]:
    """Names assigned the result of a verdict call (``rc = main(["compare", ...])``)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None \
                and _is_verdict_call(node.value):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


def _verdict_status(cmp: ast.Compare, names: set[str]) -> bool:
    """The exit status of a verdict call asserted to be 0 or 1 (``== 0``, ``!= 1``):
    a claim about how two measured runs compared.  ``in (0, 1)`` (it ran) passes."""
    sides = [cmp.left, *cmp.comparators]
    for i, op in enumerate(cmp.ops):
        if not isinstance(op, (ast.Eq, ast.NotEq)):
            continue
        for a, b in ((sides[i], sides[i + 1]), (sides[i + 1], sides[i])):
            status = a.value if isinstance(a, ast.Attribute) and a.attr == "returncode" else a
            if (_is_verdict_call(status) or isinstance(status, ast.Name)
                    and status.id in names) and _number(b) in (0.0, 1.0):
                return True
    return False


def _truthy_share(test: ast.AST) -> bool:
    """``assert lookup[0]["share"]`` (or one operand of an ``and``): a share above 0."""
    parts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) \
        else [test]
    return any(isinstance(p, (ast.Subscript, ast.Attribute, ast.Name)) and _mentions_share(p)
               for p in parts)


def _claims(test: ast.AST) -> list[ast.AST]:
    """What an assertion claims outright: its test, or each operand of a top-level
    ``and`` / ``or`` (not a comparison that only picks a branch, as in
    ``status == ("finished" if rc == 0 else "failed")``)."""
    if isinstance(test, ast.BoolOp):
        return [c for v in test.values for c in _claims(v)]
    return [test]


def _assert_offends(node: ast.Assert, names: set[str]) -> bool:
    if _truthy_share(node.test):
        return True
    if any(isinstance(c, ast.Compare) and _verdict_status(c, names)
           for c in _claims(node.test)):
        return True
    return any(isinstance(sub, ast.Compare) and (
        _ordering_offends(sub) or _approx_of_measured(sub) or _verdict_word(sub))
        for sub in ast.walk(node.test))


def offending(text: str) -> list[tuple[int, str]]:
    """(first line number, source) of each assertion in ``text`` that orders a measured
    figure, holds two to a tolerance, or asserts a measured verdict, without the
    allow marker on one of its lines."""
    tree = ast.parse(text)
    lines = text.splitlines()
    names = _verdict_names(tree)
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Assert):
            continue
        span = lines[node.lineno - 1:(node.end_lineno or node.lineno)]
        above = lines[node.lineno - 2].strip() if node.lineno > 1 else ""
        if any(ALLOWED.search(line) for line in span) \
                or above.startswith(MARKER) and ALLOWED.search(above):
            continue
        if _assert_offends(node, names):
            out.append((node.lineno, " ".join(line.strip() for line in span)))
    return sorted(out)


def _measuring_files() -> list[Path]:
    return sorted(p for p in TESTS.glob("test_*.py")
                  if "mark.netns" in p.read_text() and p.name != Path(__file__).name)


# The two historical failures (issue 48) as they were written, and their near variants.
BAD = (
    'assert by["end"].pdr_kpps < by["end_x"].pdr_kpps',
    'assert lookup and 0 < lookup[0]["share"] < 1, prof["stacks_note"]',
    "assert c.verdict != REGRESSION",
    'assert main(["compare", ids[0], ids[1], "--results", str(results)]) == 0',
    'assert prof.stack_share("route lookup") > clone + release',
    'rc = main(["compare", a, b])\nassert rc == 0',
    'assert subprocess.run([srperf, "compare", a, b]).returncode == 0',
    'assert cli("compare", a, b) != 1',
    'assert lookup[0]["share"] > 0.0',
    'assert lookup and lookup[0]["share"]',
    "assert share >= 0.01",
    "assert a.pdr_kpps == pytest.approx(b.pdr_kpps, rel=0.1)",
    "assert a.pdr_kpps >= b.pdr_kpps",
    'assert "regression" not in out',
    'assert res.verdict == "no_change"',
    'assert (lookup[0]["share"]\n        > 0)',
    "assert r.lower_pps <= 2 * other.lower_pps",
    "assert a.pdr_kpps < b.pdr_kpps  # measured-ok:",
)
GOOD = (
    'assert lookup and 0.0 <= lookup[0]["share"] <= 1.0',
    'assert ns > 0 and prof["packets"] > 0',
    "assert x.kpps < cap  # measured-ok: the shaper enforces it",
    'assert main(["compare", a, b, "--results", str(r)]) in (0, 1)',
    'assert "not_enough_evidence" in cmp_out or "not_comparable" in cmp_out',
    "assert math.isfinite(r.pdr_kpps) and r.pdr_kpps >= 0",
    'assert (a.kpps\n        < cap)  # measured-ok: the shaper enforces it',
    '# measured-ok: the shaper enforces it\nassert a.kpps < cap',
    'assert main(["run", str(exp)]) == 0',
    'rc = main(["ab", str(f)])\nassert status == ("finished" if rc == 0 else "failed")',
)


def test_the_scan_finds_what_it_should() -> None:
    missed = [b for b in BAD if not offending(b)]
    assert not missed, f"the scan misses: {missed}"
    flagged = [g for g in GOOD if offending(g)]
    assert not flagged, f"the scan flags what the code guarantees: {flagged}"


def test_the_scan_reports_the_first_line_of_a_long_assertion() -> None:
    text = "x = 1\nassert (a.pdr_kpps\n        < b.pdr_kpps)\n"
    assert offending(text) == [(2, "assert (a.pdr_kpps < b.pdr_kpps)")]


def test_measuring_tests_assert_no_comparison_of_measurements() -> None:
    found = {p.name: offending(p.read_text()) for p in _measuring_files()}
    found = {k: v for k, v in found.items() if v}
    assert not found, "tests that measure assert how measurements compare (mark an " \
        f"enforced bound with '{MARKER} <why>'): {found}"
