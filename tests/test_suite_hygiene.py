"""The suite's own rule (issue 48): a test that measures asserts what the code
guarantees -- statuses, labels, structure, cleanup, that a figure exists and is finite --
never how two noisy measurements compare (one kernel faster than another, a sampled
share above zero).  This scans the tests that send real traffic (``netns``) for an
assertion that orders a measured figure, or asserts a measured verdict.

A line may be allowed with the marker ``# measured-ok: <why>`` (e.g. a bound the code
enforces, such as a shaped link's rate); the reason is required."""

from __future__ import annotations

import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent
MARKER = "# measured-ok:"
MEASURED = (r"share|stack_share|pdr|kpps|lower_pps|upper_pps|ns_per_packet|cpu_ns"
            r"|mbps|goodput|mrr|throughput|requests_per_s|change_pct|delta_pct")
ORDERED = re.compile(rf"^\s*assert\b.*\b(?:{MEASURED})\w*\b.*(?:<|>)(?!=\s*0\b)")
VERDICT = re.compile(r"^\s*assert\b.*(?:verdict|regressions)\b.*(?:==|!=|not\b).*"
                     r"(?:REGRESSION|IMPROVEMENT|\"regression\"|\"improvement\"|regressions)")
EXIT_OF_VERDICT = re.compile(r"^\s*assert\b.*main\(\[\s*[\"'](?:compare|ab|nightly)[\"']"
                             r".*==\s*[01]\b")
"""``srperf compare`` of two measured runs asserted to exit 0 (no regression) or 1."""


def offending(text: str) -> list[tuple[int, str]]:
    """(line number, line) of each assertion in ``text`` that orders a measured figure
    or asserts a measured verdict, without the allow marker."""
    out = []
    for no, line in enumerate(text.splitlines(), 1):
        if MARKER in line:
            continue
        code = line.split("#", 1)[0]
        if VERDICT.search(code) or EXIT_OF_VERDICT.search(code):
            out.append((no, line.strip()))
            continue
        if not ORDERED.search(code):
            continue
        # "x > 0", "0 <= share <= 1": a figure that exists, not a comparison -- except a
        # sampled share strictly above zero, which is chance
        strict_share = re.search(r"share\w*[^<>]*>\s*0\b|\b0\s*<[^<>=]*share", code)
        rest = re.sub(r"\b0(?:\.0)?\s*<=|<=\s*1(?:\.0)?\b|>=?\s*0(?:\.0)?\b|<\s*1(?:\.0)?\b|"
                      r"\b0(?:\.0)?\s*<", "", code)
        if strict_share or re.search(rf"\b(?:{MEASURED})\w*\b[^#]*[<>]|[<>][^#]*\b(?:{MEASURED})",
                                     rest):
            out.append((no, line.strip()))
    return out


def _measuring_files() -> list[Path]:
    return sorted(p for p in TESTS.glob("test_*.py")
                  if "mark.netns" in p.read_text() and p.name != Path(__file__).name)


def test_the_scan_finds_what_it_should() -> None:
    bad = ("    assert by['end'].pdr_kpps < by['end_x'].pdr_kpps\n"
           "    assert lookup and 0 < lookup[0]['share'] < 1\n"
           "    assert c.verdict != REGRESSION\n"
           "    assert main([\"compare\", a, b, \"--results\", str(r)]) == 0\n")
    assert [n for n, _ in offending(bad)] == [1, 2, 3, 4]
    good = ("    assert lookup and 0.0 <= lookup[0]['share'] <= 1.0\n"
            "    assert ns > 0 and prof['packets'] > 0\n"
            "    assert x.kpps < cap  # measured-ok: the shaper enforces it\n"
            "    assert c.verdict in ('not_enough_evidence', 'no_change')\n")
    assert offending(good) == []


def test_measuring_tests_assert_no_comparison_of_measurements() -> None:
    found = {p.name: offending(p.read_text()) for p in _measuring_files()}
    found = {k: v for k, v in found.items() if v}
    assert not found, "tests that measure assert how measurements compare (mark an " \
        f"enforced bound with '{MARKER} <why>'): {found}"
