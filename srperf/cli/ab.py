"""``srperf ab``: a paired, interleaved A/B comparison of two sides (issue 48): two
behaviors, two forwarders, two settings of one forwarder, or one behavior with and
without a SUT change.

Registered by :mod:`srperf.cli`; like it, this module prints.  The measurement is
:mod:`srperf.measure.ab`, the settings :mod:`srperf.config.ab`, the statistics
:mod:`srperf.results.paired`; docs/paired-ab.md says how to read the result.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from srperf.errors import ConfigError

EXIT_OK = 0
_NUMBERS = (("packet_size", int), ("load_pps", float), ("load_factor", float),
            ("probe_pps", float), ("trial_s", float), ("width_pct", float),
            ("budget_s", float), ("min_blocks", int), ("max_blocks", int), ("seed", int))


def add_parsers(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    from srperf.cli.results import _store_args
    from srperf.config.ab import AB_FILE_KEYS

    c = sub.add_parser(
        "ab", help="paired A/B: two behaviors, forwarders, settings or a SUT change in "
        "randomized ABBA blocks, the ratio B/A with its interval and the smallest "
        "difference this budget resolves",
        description="Measure side A against side B on one testbed in one sitting: blocks "
        "of four trials in random ABBA or BAAB order at one common offered load above "
        "both sides' capacities; each block gives a ratio of received rates B/A; the "
        "result is their geometric mean with a 95 %% t interval on the log scale, stopped "
        "when the interval is narrower than --width or --budget is spent (it says which).  "
        "A side is a behavior with its forwarder, its options (--a-set/--b-set "
        "options.KEY=VALUE) and a SUT change (--b-sut-change nft:200 or "
        "sysctl:KEY=VALUE, applied before each of its trials and removed after).  A = B "
        "is the A/A calibration.  Every trial and the result are stored.")
    c.add_argument("file", nargs="?", help="an A/B file (YAML, keys " + ", ".join(AB_FILE_KEYS)
                   + ") or an experiment file with an ab: block")
    c.add_argument("--a", dest="a", help="behavior of side A (the reference)")
    c.add_argument("--b", dest="b", help="behavior of side B (compared with A)")
    c.add_argument("--forwarder", "-f", help="forwarder of both sides (default linux)")
    c.add_argument("--a-forwarder", help="side A's own forwarder")
    c.add_argument("--b-forwarder", help="side B's own forwarder")
    c.add_argument("--a-set", action="append", default=[], metavar="options.KEY=VALUE",
                   help="a forwarder option of side A only")
    c.add_argument("--b-set", action="append", default=[], metavar="options.KEY=VALUE",
                   help="a forwarder option of side B only")
    c.add_argument("--a-sut-change", metavar="SPEC",
                   help="SUT change of side A: nft:N (N non-matching nftables prerouting "
                        "rules) or sysctl:KEY=VALUE")
    c.add_argument("--b-sut-change", metavar="SPEC", help="SUT change of side B (the same)")
    c.add_argument("--testbed", "-t", help="testbed file or name (default: virtual)")
    c.add_argument("--a-testbed", metavar="TESTBED",
                   help="side A's own testbed (e.g. a kernel target); both testbeds are "
                        "brought up once and the sides alternate between them")
    c.add_argument("--b-testbed", metavar="TESTBED", help="side B's own testbed (the same)")
    c.add_argument("--size", dest="packet_size", type=int, help="frame size, B (default 64)")
    c.add_argument("--load", dest="load_pps", type=float,
                   help="common offered load, pps (default: 1.1 x the larger received rate "
                        "of one probe trial a side at the maximum rate)")
    c.add_argument("--load-from", choices=("probe", "search"),
                   help="what chooses the load without --load: probe (one trial a side, "
                        "default) or search (one search a side, its PDR)")
    c.add_argument("--probe", dest="probe_pps", type=float,
                   help="rate of the probe trials, pps (default: the search's max rate)")
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
                   help="experiment setting of both sides (search.*, options.*), as for "
                        "srperf run")


def _number(src: str, key: str, value: Any, kind: type) -> Any:
    if isinstance(value, bool):
        raise ConfigError(src, key, value, f"must be {'an integer' if kind is int else 'a number'}")
    try:
        out = kind(value)
    except (TypeError, ValueError):
        raise ConfigError(src, key, value, f"must be {'an integer' if kind is int else 'a number'}"
                          ) from None
    if not out > 0 and key not in ("seed",):
        raise ConfigError(src, key, value, "must be > 0")
    if key == "seed" and out < 0:
        raise ConfigError(src, key, value, "must be >= 0")
    return out


def _read_file(path: str) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """(the A/B settings, the experiment mapping or None) of ``path``."""
    from srperf.config.ab import AB_FILE_KEYS
    from srperf.config.yamlfile import read_mapping

    # as every config file: root's or the user's, a regular file (no FIFO or device
    # read), bounded, strict YAML whose errors quote no line of the file
    loaded = read_mapping(Path(path))
    if not isinstance(loaded, dict):
        raise ConfigError(path, "file", path, "must be a mapping of " + ", ".join(AB_FILE_KEYS))
    if "ab" in loaded:   # an experiment file with an ab: block
        block = loaded["ab"]
        if not isinstance(block, dict):
            raise ConfigError(path, "ab", block, "must be a mapping (the A/B settings)")
        for k in block:
            if k not in AB_FILE_KEYS or k in ("forwarder", "testbed", "set"):
                raise ConfigError(path, f"ab.{k}", block[k], "unknown key of the ab: block")
        exp = {k: v for k, v in loaded.items() if k != "ab"}
        return dict(block), exp
    for k in loaded:
        if k not in AB_FILE_KEYS:
            raise ConfigError(path, str(k), loaded[k], "unknown key; known: " +
                              ", ".join(AB_FILE_KEYS) + " (or an experiment with an ab: block)")
    return dict(loaded), None


def settings_of(args: argparse.Namespace) -> dict[str, Any]:
    """The A/B settings: the file's keys (or its ab: block), overridden by the options
    given; the sides checked (``_sides``), and the experiment mapping (``_experiment``)."""
    from srperf.config.ab_sides import check_side, side_spec
    from srperf.config.reader import apply_overrides

    data: dict[str, Any] = {}
    src = "<command line>"
    exp_data: dict[str, Any] | None = None
    if args.file:
        src = str(args.file)
        data, exp_data = _read_file(src)
    for k in ("forwarder", "testbed", "packet_size", "load_pps", "load_factor", "load_from",
              "probe_pps", "trial_s", "width_pct", "budget_s", "min_blocks", "max_blocks",
              "seed"):
        v = getattr(args, k, None)
        if v is not None:
            data[k] = v
    for k, kind in _NUMBERS:
        if k in data and data[k] is not None:
            data[k] = _number(src, k, data[k], kind)
    if data.get("load_from", "probe") not in ("probe", "search"):
        raise ConfigError(src, "load_from", data["load_from"], "must be probe or search")
    sets = data.get("set", [])
    if isinstance(sets, str) or not isinstance(sets, list):
        raise ConfigError(src, "set", sets, "must be a list of KEY=VALUE")
    sets = [str(x) for x in sets] + list(getattr(args, "set", []) or [])
    if exp_data is None:
        exp_data = {"name": "ab", "forwarder": data.get("forwarder", "linux")}
    elif "forwarder" in data:
        exp_data["forwarder"] = data["forwarder"]
    apply_overrides(exp_data, sets, src)
    forwarder = str(exp_data.get("forwarder", "linux"))
    options = dict(exp_data.get("options") or {})
    sides = {}
    for k in ("a", "b"):
        given = getattr(args, k, None)
        value = data.get(k)
        if given:
            value = ({**value, "behavior": given} if isinstance(value, dict) else given)
        fw_given = getattr(args, f"{k}_forwarder", None)
        if fw_given:
            value = ({**value, "forwarder": fw_given} if isinstance(value, dict)
                     else {"behavior": value, "forwarder": fw_given})
        spec = side_spec(src, k, value, forwarder, options, getattr(args, f"{k}_set", []) or [],
                         getattr(args, f"{k}_sut_change", None),
                         getattr(args, f"{k}_testbed", None))
        sides[k] = check_side(src, k, spec)
    # the experiment (search settings, testbed) is of the sides on its forwarder; when
    # neither side is, it is side A's
    on_exp = [side for side in sides.values() if side.forwarder == forwarder]
    if not on_exp:
        exp_data["forwarder"], on_exp = sides["a"].forwarder, [sides["a"]]
    behaviors = list(dict.fromkeys(side.behavior for side in on_exp))
    exp_data["behaviors"] = behaviors
    data["_sides"], data["_experiment"], data["_source"] = sides, exp_data, src
    return data


def _testbeds(src: str, cfg: Any, exp: Any, given: str | None) -> dict[str, Any]:
    """The testbed config of each side ("A"/"B"): the side's own (``--a-testbed``,
    ``--b-testbed``, a side's ``testbed:``) or the comparison's.  Two distinct testbeds
    need prefixes of their own, and a model is never one side of a measured one."""
    from srperf.cli.run_several import _check_distinct
    from srperf.config.loader import resolve_testbed

    common = resolve_testbed(given, exp)
    tbs = {s: resolve_testbed(side.testbed, exp) if side.testbed else common
           for s, side in (("A", cfg.a), ("B", cfg.b))}
    if (tbs["A"].source, tbs["A"].name) == (tbs["B"].source, tbs["B"].name):
        return {"A": tbs["A"], "B": tbs["A"]}
    _check_distinct([tbs["A"], tbs["B"]])
    if (tbs["A"].kind == "simulated") != (tbs["B"].kind == "simulated"):
        raise ConfigError(src, "b.testbed", tbs["B"].name, "one side on the simulated "
                          "testbed (a model) and the other on a measured one compare a "
                          "model with a measurement")
    return tbs


def cmd_ab(args: argparse.Namespace) -> int:
    import contextlib

    from srperf.cli.results import store_location
    from srperf.config.experiment import experiment_from_mapping
    from srperf.forwarders import registry as forwarders
    from srperf.measure import environment
    from srperf.measure.ab import AbConfig, AbError, run_ab
    from srperf.measure.session import MeasurementSession
    from srperf.results import emulation
    from srperf.results.store import ResultStore
    from srperf.safety.safe_paths import check_dir
    from srperf.search.configured import search_settings
    from srperf.testbeds import registry as testbeds

    check_dir(Path(args.results), "--results")
    data = settings_of(args)
    src, sides = data["_source"], data["_sides"]
    keys = ("packet_size", "load_pps", "load_factor", "load_from", "probe_pps", "trial_s",
            "width_pct", "budget_s", "min_blocks", "max_blocks", "seed")
    cfg = AbConfig(a=sides["a"], b=sides["b"],
                   **{k: data[k] for k in keys if data.get(k) is not None})
    try:
        cfg.rule()   # bad widths and budgets are errors before a testbed comes up
    except ValueError as exc:
        key = "min_blocks" if "min_blocks" in str(exc) else "width_pct"
        raise ConfigError(src, key, data.get(key), str(exc)) from None
    exp = experiment_from_mapping(data["_experiment"], src)
    tbs = _testbeds(src, cfg, exp, data.get("testbed"))
    two = tbs["A"] is not tbs["B"]
    tb_of = {"A": testbeds.create(tbs["A"])}
    tb_of["B"] = testbeds.create(tbs["B"]) if two else tb_of["A"]
    testbed = tb_of["A"]
    for k, side in (("a", cfg.a), ("b", cfg.b)):
        if side.sut_change is not None and tb_of[k.upper()].is_model:
            raise ConfigError(src, f"{k}.sut_change", side.sut_change.name,
                              "the simulated testbed is a model with no SUT to change (the "
                              "command would run on this host)")
    fws = {s: forwarders.get(side.forwarder) for s, side in (("A", cfg.a), ("B", cfg.b))}
    opts = {}
    for s, side in (("A", cfg.a), ("B", cfg.b)):
        tb_of[s].check_forwarder(fws[s], src)
        opts[s] = fws[s].parse_options(side.options)
    settings = search_settings(exp, tbs["A"])
    store = ResultStore(store_location(args))
    name = f"ab:{cfg.a.behavior}-vs-{cfg.b.behavior}"
    runs = {"A": store.begin_run(name, tbs["A"].name,
                                 fws["A"].name if fws["A"] is fws["B"] or two else
                                 f"{fws['A'].name}+{fws['B'].name}",
                                 environment.collect(), purpose="ab")}
    runs["B"] = (store.begin_run(name, tbs["B"].name, fws["B"].name, environment.collect(),
                                 purpose="ab") if two else runs["A"])
    run_id = runs["B"]   # the comparison is stored with B's run (A's is its baseline)
    where = (f"on {tbs['A'].name}" if not two else
             f"A on {tbs['A'].name}, B on {tbs['B'].name} (both booted, alternating)")
    print(f"paired A/B run {' and '.join(dict.fromkeys(runs.values()))}: A = "
          f"{cfg.a.label()}, B = {cfg.b.label()}, {cfg.packet_size} B, {where}; stop at "
          f"+-{cfg.width_pct:g} % or {cfg.budget_s:g} s", flush=True)
    status = "failed"
    try:
        with contextlib.ExitStack() as stack:
            session = {"A": stack.enter_context(MeasurementSession(
                tb_of["A"], fws["A"], opts["A"], store, runs["A"],
                keep_testbed=args.keep_testbed))}
            session["B"] = (stack.enter_context(MeasurementSession(
                tb_of["B"], fws["B"], opts["B"], store, runs["B"],
                keep_testbed=args.keep_testbed)) if two else session["A"])
            envs = {}
            for s in dict.fromkeys("AB" if two else "A"):
                envs[s] = environment.collect()
                envs[s].update(session[s].environment())
                store.update_environment(runs[s], envs[s])
            modes = {emulation.mode(e) for e in envs.values()}
            if len(modes) > 1:
                raise AbError(f"side A's SUT runs {emulation.mode(envs['A'])} and side B's "
                              f"{emulation.mode(envs['B'])}: srperf does not pair an "
                              "emulated SUT with a native one (under TCG the emulated vCPU "
                              "sets the rate)")
            outcome = run_ab(session["A"], cfg, settings, exp.search.algorithm, fws, opts,
                             say=lambda s: print(testbed.label_line(s), flush=True),
                             execution=envs["A"].get("execution"), sessions=session)
            if two:
                outcome.runs = dict(runs)
        status = "finished"
    except KeyboardInterrupt:
        status = "interrupted"
        raise
    finally:
        for rid in dict.fromkeys(runs.values()):
            store.end_run(rid, status)
        if status != "finished":
            store.close()
    r = outcome.result
    assert r is not None
    store.add_comparison(run_id, runs["A"] if two else None, cfg.width_pct, r.status,
                         outcome.detail())
    store.close()
    if testbed.is_model:
        print("MODEL: the simulated SUT; these figures are not measurements.")
    tag = testbed.label_line
    limited = (f"; {outcome.generator_limited_used} trials paced short of the load but "
               f"saturated the SUT (used)" if outcome.generator_limited_used else "")
    print(tag(f"at {outcome.load_pps / 1e3:.1f} kpps offered, received rate: {r.describe()}"))
    dropped = (f"; {outcome.dropped.count} blocks dropped (the generator fell behind)"
               if outcome.dropped.count else "")
    print(tag(f"stopped: {r.stop_reason} ({r.n_blocks} blocks){limited}{dropped}"))
    for s, use in sorted(outcome.idle_sut.items()):
        if use["wall_s"] > 0:
            print(f"side {s}'s idle SUT used {100 * use['cpu_s'] / use['wall_s']:.1f} % of a "
                  f"CPU while the other side measured ({use['wall_s']:.0f} s)")
    if outcome.emulated:
        print(f"NOTE: {tag('')}the SUT ran under software emulation: the ratio ranks the "
              "sides under emulation, it is not the kernel's native cost (stored with "
              "execution: emulated)")
    print(f"stored as run {run_id} in {store.where}"
          + (f" (side A's trials in run {runs['A']})" if two else ""))
    return EXIT_OK


COMMANDS = {"ab": cmd_ab}
