"""``srperf ab``: a paired, interleaved A/B comparison of two behaviors (issue 48).

Registered by :mod:`srperf.cli`; like it, this module prints.  The measurement is
:mod:`srperf.measure.ab`, the statistics :mod:`srperf.results.paired`; docs/paired-ab.md
says how to read the result.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any

from srperf.errors import ConfigError

EXIT_OK = 0
AB_KEYS = ("a", "b", "forwarder", "testbed", "packet_size", "load_pps", "load_factor",
           "trial_s", "width_pct", "budget_s", "min_blocks", "max_blocks", "seed", "set")
"""Keys of an A/B file (YAML): the command's options, by their long names."""


def add_parsers(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    from srperf.cli.results import _store_args

    c = sub.add_parser(
        "ab", help="paired A/B: two behaviors in randomized ABBA blocks, the ratio B/A with "
        "its interval and the smallest difference this budget resolves",
        description="Measure behavior A against behavior B on one testbed in one sitting: "
        "blocks of four trials in random ABBA or BAAB order at one common offered load "
        "above both PDRs; each block gives a ratio of received rates B/A; the result is "
        "their geometric mean with a 95 %% t interval on the log scale, stopped when the "
        "interval is narrower than --width or --budget is spent (it says which).  A = B "
        "is the A/A calibration.  Every trial and the result are stored.")
    c.add_argument("file", nargs="?", help="A/B file (YAML) with keys " + ", ".join(AB_KEYS))
    c.add_argument("--a", dest="a", help="behavior A (the reference)")
    c.add_argument("--b", dest="b", help="behavior B (compared with A)")
    c.add_argument("--forwarder", "-f", help="forwarder (default linux)")
    c.add_argument("--testbed", "-t", help="testbed file or name (default: virtual)")
    c.add_argument("--size", dest="packet_size", type=int, help="frame size, B (default 64)")
    c.add_argument("--load", dest="load_pps", type=float,
                   help="common offered load, pps (default: 1.1 x the larger PDR of one "
                        "search a side)")
    c.add_argument("--trial-s", dest="trial_s", type=float, help="trial duration, s (1)")
    c.add_argument("--width", dest="width_pct", type=float,
                   help="stop when the interval is within +- this %% (1)")
    c.add_argument("--budget", dest="budget_s", type=float, help="time budget, s (600)")
    c.add_argument("--min-blocks", dest="min_blocks", type=int,
                   help="blocks before the width may stop it (8)")
    c.add_argument("--max-blocks", dest="max_blocks", type=int, help="at most (1000)")
    c.add_argument("--seed", type=int, help="seed of the block orders (0)")
    _store_args(c, writes=True)
    c.add_argument("--keep-testbed", action="store_true",
                   help="leave a virtual testbed this command brought up")
    c.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="experiment setting (search.*, options.*), as for srperf run")


def _number(src: str, key: str, value: Any, kind: type) -> Any:
    try:
        out = kind(value)
    except (TypeError, ValueError):
        raise ConfigError(src, key, value, f"must be {'an integer' if kind is int else 'a number'}"
                          ) from None
    if not out > 0 and key not in ("seed",):
        raise ConfigError(src, key, value, "must be > 0")
    return out


def settings_of(args: argparse.Namespace) -> dict[str, Any]:
    """The A/B settings: the file's keys, overridden by the options given."""
    data: dict[str, Any] = {}
    src = "<command line>"
    if args.file:
        from srperf.config.yamlfile import read_mapping

        src = str(args.file)
        # as every config file: root's or the user's, a regular file (no FIFO or device
        # read), bounded, strict YAML whose errors quote no line of the file
        loaded = read_mapping(Path(args.file))
        for k in loaded:
            if k not in AB_KEYS:
                raise ConfigError(src, str(k), loaded[k], "unknown key; known: " +
                                  ", ".join(AB_KEYS))
        data.update(loaded)
    for k in AB_KEYS:
        v = getattr(args, k, None)
        if v is not None and v != []:
            data[k] = v
    for k in ("a", "b"):
        if not data.get(k):
            raise ConfigError(src, k, data.get(k), "a behavior is required (--a / --b)")
    for k, kind in (("packet_size", int), ("load_pps", float), ("load_factor", float),
                    ("trial_s", float), ("width_pct", float), ("budget_s", float),
                    ("min_blocks", int), ("max_blocks", int), ("seed", int)):
        if k in data and data[k] is not None:
            data[k] = _number(src, k, data[k], kind)
    sets = data.get("set", [])
    if isinstance(sets, str) or not isinstance(sets, list):
        raise ConfigError(src, "set", sets, "must be a list of KEY=VALUE")
    data["set"] = [str(x) for x in sets]
    data["_source"] = src
    return data


def cmd_ab(args: argparse.Namespace) -> int:
    from srperf.behaviors import catalogue
    from srperf.cli.results import store_location
    from srperf.config.experiment import experiment_from_mapping
    from srperf.config.loader import resolve_testbed
    from srperf.config.reader import apply_overrides
    from srperf.forwarders import registry as forwarders
    from srperf.measure import environment
    from srperf.measure.ab import AbConfig, run_ab
    from srperf.measure.session import MeasurementSession
    from srperf.results.store import ResultStore
    from srperf.safety.safe_paths import check_dir
    from srperf.search.configured import search_settings
    from srperf.testbeds import registry as testbeds

    check_dir(Path(args.results), "--results")
    data = settings_of(args)
    src = data["_source"]
    for k in ("a", "b"):
        try:
            catalogue.get(str(data[k]))
        except KeyError:
            raise ConfigError(src, k, data[k], "no such behavior (srperf behaviors)") from None
    fields = {f.name for f in dataclasses.fields(AbConfig)}
    cfg = AbConfig(**{k: v for k, v in data.items() if k in fields})
    cfg.rule()   # bad widths and budgets are errors before a testbed comes up
    exp_data: dict[str, Any] = {"name": "ab", "forwarder": data.get("forwarder", "linux"),
                                "behaviors": list(dict.fromkeys([cfg.a, cfg.b]))}
    apply_overrides(exp_data, data["set"], src)
    exp = experiment_from_mapping(exp_data, src)
    tb = resolve_testbed(data.get("testbed"), exp)
    testbed = testbeds.create(tb)
    forwarder = forwarders.get(exp.forwarder)
    testbed.check_forwarder(forwarder, exp.source)
    options = forwarder.parse_options(exp.options)
    settings = search_settings(exp, tb)
    store = ResultStore(store_location(args))
    run_id = store.begin_run(f"ab:{cfg.a}-vs-{cfg.b}", tb.name, forwarder.name,
                             environment.collect(), purpose="ab")
    print(f"paired A/B run {run_id}: A = {cfg.a}, B = {cfg.b}, {cfg.packet_size} B, on "
          f"{tb.name}; stop at +-{cfg.width_pct:g} % or {cfg.budget_s:g} s", flush=True)
    status = "failed"
    try:
        with MeasurementSession(testbed, forwarder, options, store, run_id,
                                keep_testbed=args.keep_testbed) as session:
            env = environment.collect()
            env.update(session.environment())
            store.update_environment(run_id, env)
            outcome = run_ab(session, cfg, settings, exp.search.algorithm,
                             say=lambda s: print(s, flush=True))
        status = "finished"
    except KeyboardInterrupt:
        status = "interrupted"
        raise
    finally:
        store.end_run(run_id, status)
        if status != "finished":
            store.close()
    r = outcome.result
    assert r is not None
    store.add_comparison(run_id, None, cfg.width_pct, r.status, outcome.detail())
    store.close()
    if testbed.is_model:
        print("MODEL: the simulated SUT; these figures are not measurements.")
    print(f"at {outcome.load_pps / 1e3:.1f} kpps offered, received rate: {r.describe()}")
    print(f"stopped: {r.stop_reason} ({r.n_blocks} blocks)")
    print(f"stored as run {run_id} in {store.where}")
    return EXIT_OK


COMMANDS = {"ab": cmd_ab}
