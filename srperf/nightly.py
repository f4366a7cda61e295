"""The nightly regression job: run a suite, store it, compare, report, JUnit.

A suite file (YAML)::

    name: nightly-linux            # runs of the suite are tagged with this name
    testbed: virtual               # file or shipped name
    experiments: [quick]           # files or shipped names, run one after another
    repetitions: 5                 # optional: overrides each experiment's
    algorithm: mlr                 # optional: overrides each experiment's
    compare: {threshold_pct: 5, method: welch}   # regression threshold, %
    verdict: trend                 # trend (default: jumpavg over the history) | baseline
    trend: {min_change_pct: 0, window: 60, reference: end}  # see srperf.results.trend
    results: srperf-results        # local results directory (SQLite), as `srperf run`
    database: postgresql://u@h/db  # optional: a shared store; runs are copied there
    reports: nightly-reports       # HTML/Markdown reports and junit.xml go here

Each experiment is run through the orchestrator into the local SQLite store,
tagged ``purpose='nightly'`` with the suite name, copied to the shared store
when there is one, and compared with the last good run of the same suite,
experiment and testbed there (a finished nightly run with at least one figure,
not itself judged a regression).  The verdict is stored in ``comparisons``; a run
without one figure (every search generator-limited, every behavior unsupported)
gets the verdict ``nothing_measured``, a JUnit failure on each of its cases and
exit status 3: a night that measured nothing is never green.

With ``verdict: trend`` (the default) a night is red when one of its tests starts
a regression group in the history of the suite, experiment and testbed
(:mod:`srperf.results.trend_verdict`, jumpavg as in FD.io CSIT); the comparison
with the last good run is still made, stored and shown, but only decides with
``verdict: baseline`` (the behaviour before trending).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from srperf import resources
from srperf.safety import safe_paths
from srperf.results import emulation
from srperf.config.loader import load_experiment, load_testbed, read_yaml, validate
from srperf.config.model import ALGORITHMS
from srperf.errors import ConfigError, SrperfError
from srperf.measure.orchestrator import Orchestrator
from srperf.results import junit, measured, report, trend_verdict
from srperf.results.compare import (DEFAULT_THRESHOLD_PCT, REGRESSION, Comparison,
                                    compare_runs, format_markdown)
from srperf.results.junit import SuiteResult
from srperf.results.store import ResultStore
from srperf.results.trend import RunFilter, TrendSettings

log = logging.getLogger(__name__)

NOTHING_MEASURED = "nothing_measured"
"""The verdict of a nightly run with no figure: a failure, never a baseline."""

SUITE_SCHEMA: dict[str, Any] = {
    "type": "object", "additionalProperties": False, "required": ["name", "experiments"],
    "properties": {
        "name": {"type": "string", "pattern": r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}\Z",
                 "pattern_doc": "a suite name is 1-64 letters, digits, '_', '.', '+' or '-', "
                                "starting with a letter or digit (it is part of file names)"},
        "testbed": {"type": "string", "minLength": 1, "maxLength": 4096},
        "experiments": {"oneOf": [
            {"type": "string", "minLength": 1, "maxLength": 4096},
            {"type": "array", "minItems": 1, "maxItems": 256,
             "items": {"type": "string", "minLength": 1, "maxLength": 4096}}],
            "description": "a list of experiment files or names"},
        "repetitions": {"type": "integer", "minimum": 1, "maximum": 1000},
        "algorithm": {"enum": list(ALGORITHMS)},
        "compare": {"type": "object", "additionalProperties": False, "properties": {
            "threshold_pct": {"type": "number", "minimum": 0, "maximum": 1000,
                              "description": "regression threshold (%)"},
            "method": {"enum": ["welch", "bootstrap"]}}},
        "verdict": {"enum": ["trend", "baseline"],
                    "description": "what makes a night red: the trend or the baseline"},
        "trend": {"type": "object", "additionalProperties": False, "properties": {
            "min_change_pct": {"type": "number", "minimum": 0, "maximum": 1000,
                               "description": "smallest change of a group that is an "
                                              "anomaly (%)"},
            "window": {"type": "integer", "minimum": 2, "maximum": 100000,
                       "unit": "nights",
                       "description": "newest samples grouped per test"},
            "confirm": {"type": "integer", "minimum": 0, "maximum": 1000,
                        "unit": "nights",
                        "description": "nights a regression group may be confirmed late"},
            "sbps": {"type": "number", "minimum": 1, "maximum": 64,
                     "unit": "bits",
                     "description": "jumpavg significant bits per sample"},
            "reference": {"type": "string", "pattern": "^[a-z0-9_.]{1,40}$",
                          "description": "a behavior the suite measures: every other "
                                         "behavior is also trended relative to it"}}},
        "results": {"type": "string", "minLength": 1, "maxLength": 4096},
        "database": {"type": "string", "minLength": 1, "maxLength": 4096},
        "reports": {"type": "string", "minLength": 1, "maxLength": 4096},
    },
}
"""The suite file (shown in the module docstring); the same checks as experiments."""
SUITE_KEYS = set(SUITE_SCHEMA["properties"])


@dataclass(frozen=True)
class Suite:
    """A nightly suite (threshold in % of the baseline mean)."""

    name: str
    testbed: str
    experiments: tuple[str, ...]
    source: str
    repetitions: int | None = None
    algorithm: str | None = None
    threshold_pct: float = DEFAULT_THRESHOLD_PCT
    method: str = "welch"
    results: str = "srperf-results"
    database: str | None = None
    reports: str = "nightly-reports"
    verdict: str = "trend"
    trend: TrendSettings = TrendSettings()


def load_suite(path: str | Path) -> Suite:
    """Read and check a suite file; :class:`ConfigError` names file, key and value."""
    file = str(path)
    data = read_yaml(Path(path))
    validate(file, data, SUITE_SCHEMA)
    exps = data["experiments"]
    if isinstance(exps, str):
        exps = [exps]
    from srperf.config.applicability import check_suite_experiments

    check_suite_experiments(file, exps)
    trend = _trend_settings(file, data.get("trend") or {})
    _check_trend_block(file, data, exps)
    reps = data.get("repetitions")
    cmp: dict[str, Any] = data.get("compare") or {}
    thr = cmp.get("threshold_pct", DEFAULT_THRESHOLD_PCT)
    method = cmp.get("method", "welch")
    return Suite(name=str(data["name"]), testbed=str(data.get("testbed", "virtual")),
                 experiments=tuple(exps), source=file, repetitions=reps,
                 algorithm=data.get("algorithm"), threshold_pct=float(thr), method=method,
                 results=str(data.get("results", "srperf-results")),
                 database=data.get("database"),
                 reports=str(data.get("reports", "nightly-reports")),
                 verdict=str(data.get("verdict", "trend")),
                 trend=trend)


def _check_trend_block(file: str, data: dict[str, Any], experiments: list[str]) -> None:
    """A ``trend`` block the suite's verdict ignores (``verdict: baseline``) is refused,
    and so is a ``trend.reference`` that no experiment of the suite measures (every
    relative figure would be missing)."""
    trend = data.get("trend")
    if trend is not None and data.get("verdict", "trend") != "trend":
        raise ConfigError(file, "trend", trend, f"verdict {data.get('verdict')!r} ignores "
                          "the trend block: set verdict: trend, or remove the block")
    reference = (trend or {}).get("reference") if isinstance(trend, dict) else None
    if not reference:
        return
    from srperf import resources

    measured: set[str] = set()
    for name in experiments:
        try:
            found = resources.find_config(name, "experiment")
            measured.update(load_experiment(found).behaviors)
        except ConfigError:
            return   # the experiment's own error is reported where it is loaded
    if reference not in measured:
        raise ConfigError(file, "trend.reference", reference, "no experiment of the suite "
                          f"measures it (they measure {', '.join(sorted(measured))})")


def _trend_settings(file: str, data: dict[str, Any]) -> TrendSettings:
    """The suite's ``trend`` block (the schema checked the types and ranges)."""
    try:
        return TrendSettings(**data)
    except ValueError as exc:   # a reference that is no behavior
        raise ConfigError(file, "trend.reference", data.get("reference"), str(exc)) from None


@dataclass
class NightlyResult:
    """What a nightly job produced; ``regression`` decides the exit code."""

    suite: Suite
    results: list[SuiteResult] = field(default_factory=list)
    junit_path: Path | None = None
    markdown: str = ""

    @property
    def regression(self) -> bool:
        if self.suite.verdict == "trend":
            return any(r.trend is not None and r.trend.red for r in self.results)
        return any(r.comparison is not None and r.comparison.verdict == REGRESSION
                   for r in self.results)

    @property
    def errors(self) -> bool:
        return any(r.error for r in self.results)

    @property
    def nothing_measured(self) -> bool:
        """True when an experiment of the suite ended without one figure."""
        return any(r.nothing_measured for r in self.results)


def no_baseline_note(store: ResultStore, experiment: str, testbed: str, suite: str,
                     run_id: str, accept: Callable[[str], bool]) -> str:
    """Why a nightly run has no baseline: only this suite's finished nightly runs with a
    figure count, and which run would have been taken were others counted."""
    rule = (f"no baseline yet: only finished nightly runs of suite {suite} ({experiment} "
            f"on {testbed}, with a figure, not a regression) are baselines")
    other = store.last_good_run(experiment, testbed, suite, exclude=run_id, accept=accept,
                                nightly_only=False)
    if other is None:
        return rule + f"; no other run of {experiment} on {testbed} has a figure"
    row = store.run_row(other) or {}
    purpose = row.get("purpose") or "run"
    where = (f"{purpose} of suite {row['suite']}" if row.get("suite")
             else "srperf run" if purpose == "run" else purpose)
    return rule + (f"; run {other} ({where}) would have been taken; this run is the "
                   "baseline of the next night")


Runner = Callable[[Any, Any, Path], Any]
"""(experiment, testbed, results_dir) -> an object with ``run_id`` (the orchestrator)."""


def _orchestrate(progress: Callable[[str], None] | None, algorithm: str | None) -> Runner:
    def run(exp: Any, tb: Any, results_dir: Path) -> Any:

        return Orchestrator(exp, tb, results_dir, algorithm=algorithm,
                            progress=progress).run()
    return run


def run_nightly(suite: Suite, progress: Callable[[str], None] | None = None,
                runner: Runner | None = None, overrides: dict[str, Any] | None = None
                ) -> NightlyResult:
    """Run every experiment of ``suite``; see the module docstring."""
    if overrides:
        suite = dataclasses.replace(suite, **{k: v for k, v in overrides.items()
                                              if v is not None})
    runner = runner or _orchestrate(progress, suite.algorithm)
    say = progress or (lambda msg: log.info("%s", msg))
    tb = load_testbed(resources.find_config(suite.testbed, "testbed"))
    results_dir = Path(suite.results)
    reports_dir = Path(suite.reports)
    safe_paths.check_dir(results_dir, "results", suite.source)
    safe_paths.ensure_dir(reports_dir, "reports", suite.source)
    suite_part = safe_paths.safe_component(suite.name)
    out = NightlyResult(suite)
    local = ResultStore(results_dir / "srperf.sqlite", "results", suite.source)
    shared = ResultStore(suite.database, "database", suite.source) if suite.database \
        else local
    md_parts = [f"# srperf nightly {suite.name} on {tb.name}\n"]
    if tb.kind == "simulated":
        md_parts.append("**MODEL: the testbed is the simulated SUT; these are not "
                        "measurements.**")
    try:
        for name in suite.experiments:
            exp = load_experiment(resources.find_config(name, "experiment"))
            if suite.repetitions:
                exp = dataclasses.replace(exp, repetitions=suite.repetitions)
            started = time.monotonic()
            result = SuiteResult(exp.name, None)
            out.results.append(result)
            before = local.last_run_id()
            try:
                run_id = runner(exp, tb, results_dir).run_id
            except SrperfError as exc:
                result.error = f"{type(exc).__name__}: {exc}"
                last = local.last_run_id()  # the failed run, if it got as far as a run
                result.run_id = last if last != before else None
                say(f"nightly {suite.name}: {exp.name} failed: {exc}")
                continue
            finally:
                result.seconds = time.monotonic() - started
            result.run_id = run_id
            local.tag_run(run_id, purpose="nightly", suite=suite.name)
            if shared is not local:
                local.copy_run(run_id, shared)
            searches, outcomes = local.frame("searches", run_id), local.frame("outcomes",
                                                                              run_id)
            result.cases = measured.case_names(searches, outcomes)
            baseline = shared.last_good_run(exp.name, tb.name, suite.name, exclude=run_id,
                                            accept=emulation.accept_baseline(
                                                shared, emulation.run_mode(local, run_id)))
            result.baseline_run_id = baseline
            if baseline is None:
                result.baseline_note = no_baseline_note(
                    shared, exp.name, tb.name, suite.name, run_id,
                    emulation.accept_baseline(shared, emulation.run_mode(local, run_id)))
            comparison: Comparison | None = None
            if not measured.run_has_figure(local, run_id):
                result.nothing_measured = measured.nothing_measured(local, run_id) or ""
                result.case_reasons = {p.split(": ", 1)[0]: p for p in
                                       measured.why_nothing(searches, outcomes)}
                verdict = NOTHING_MEASURED
            else:
                if baseline:
                    comparison = compare_runs(shared, baseline, run_id, suite.threshold_pct,
                                              suite.method)
                verdict = comparison.verdict if comparison else "no_baseline"
            result.comparison = comparison
            detail: dict[str, Any] = {"suite": suite.name, "method": suite.method}
            history = RunFilter(testbed=tb.name, suite=suite.name, experiment=exp.name,
                                purpose="nightly")
            if suite.verdict == "trend" and not result.nothing_measured:
                result.trend = trend_verdict.judge(shared, run_id, history, suite.trend)
                detail["trend"] = result.trend.to_dict()
            shared.add_comparison(run_id, baseline, suite.threshold_pct, verdict, detail)
            # the HTML shows what the trend can see in either verdict mode (issue 48)
            steps = result.trend if result.trend is not None or result.nothing_measured \
                else trend_verdict.judge(shared, run_id, history, suite.trend)
            html = safe_paths.file_in(reports_dir, f"nightly-{suite_part}-"
                                      f"{safe_paths.safe_component(exp.name)}-"
                                      f"{safe_paths.safe_component(run_id)}.html",
                                      "reports", suite.source)
            data = report.write_report(
                shared, [baseline, run_id] if baseline else [run_id], html,
                html.with_suffix(".md"),
                title=f"srperf nightly {suite.name}: {exp.name} on {tb.name}",
                comparison=comparison, trend=steps)
            result.report = html
            result.cases += [f"{t.kind} {r['behavior']} {r['variant']} {t.primary_metric}"
                             for t in data.stateful for r in t.rows
                             if r["run"].endswith(run_id)]
            md_parts.append(
                f"{exp.name}: run {run_id}: **{result.nothing_measured}** (not a baseline)"
                if result.nothing_measured else format_markdown(comparison) if comparison
                else f"{exp.name}: run {run_id}, {result.baseline_note}")
            if result.trend is not None:
                verdict += "; trend red" if result.trend.red else "; trend green"
                md_parts += [f"- **{a.test}**: {a.describe()}" for a in result.trend.alerts]
                md_parts += [f"- {name}: {text[text.index('smallest'):]}" for name, text in
                             sorted(result.trend.texts.items()) if "smallest" in text]
            say(f"nightly {suite.name}: {exp.name} run {run_id}: {verdict}; report {html}")
        out.junit_path = junit.write(
            safe_paths.file_in(reports_dir, f"junit-{suite_part}.xml", "reports", suite.source),
            suite.name, out.results, "reports", suite.source)
    finally:
        local.close()
        if shared is not local:
            shared.close()
    out.markdown = "\n\n".join(md_parts)
    return out
