"""An experiment file loaded: its search, traffic, behaviors, forwarder options and
stateful blocks, each checked against the others.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence, TypeVar

from srperf.traffic.imix import IMIX_SIZE, parse_imix
from srperf.config.model import (Experiment, LatencyConfig, ProfileConfig, SearchConfig,
                                 TrafficConfig)
from srperf.config.settings import SettingError, Settings
from srperf.config.schema import EXPERIMENT_SCHEMA
from srperf.config.yamlfile import refuse_non_finite
from srperf.errors import ConfigError
from srperf.config.reader import _validate, apply_overrides, read_yaml, suggest


def load_experiment(path: str | Path, overrides: Sequence[str] = ()) -> Experiment:
    """Load, validate and return an experiment (with ``--set`` overrides applied)."""
    path = Path(path)
    file = str(path) + (" (with --set)" if overrides else "")
    data = read_yaml(path)
    apply_overrides(data, overrides, file)
    return experiment_from_mapping(data, file)


def experiment_from_mapping(data: dict[str, Any], file: str) -> Experiment:
    """Validate a parsed experiment mapping (``file`` names it in errors)."""
    refuse_non_finite(file, data)
    _validate(file, data, EXPERIMENT_SCHEMA)
    s = dict(data.get("search") or {})
    # Unless set, the first-phase duration follows a shorter trial duration.
    s.setdefault("initial_trial_duration_s",
                 min(SearchConfig.initial_trial_duration_s,
                     float(s.get("trial_duration_s", SearchConfig.trial_duration_s))))
    search = _block(file, "search", SearchConfig, s)
    if (search.min_rate.percent == search.max_rate.percent
            and search.min_rate.value >= search.max_rate.value):
        raise ConfigError(file, "search.min_rate", s.get("min_rate"),
                          f"must be below search.max_rate ({s.get('max_rate', search.max_rate)})")
    if search.initial_trial_duration_s > search.trial_duration_s:
        raise ConfigError(file, "search.initial_trial_duration_s",
                          search.initial_trial_duration_s,
                          "must not exceed search.trial_duration_s")
    forwarder = data.get("forwarder", "linux")
    behaviors = tuple(data["behaviors"])
    _check_behaviors(file, forwarder, behaviors)
    options = dict(data.get("options", {}))
    check_options(file, forwarder, options)
    from srperf.config.applicability import check_experiment_mapping

    check_experiment_mapping(file, data)   # uniqueness, keys that apply, reserved tables
    if len(set(behaviors)) != len(behaviors):
        dup = next(b for b in behaviors if behaviors.count(b) > 1)
        raise ConfigError(file, f"behaviors[{behaviors.index(dup)}]", dup, "listed twice")
    sizes = [IMIX_SIZE if v == "imix" else v for v in data.get("packet_sizes", [64])]
    for i, size in enumerate(sizes):
        if sizes.index(size) != i:
            raise ConfigError(file, f"packet_sizes[{i}]", data["packet_sizes"][i],
                              f"listed twice (also packet_sizes[{sizes.index(size)}]): "
                              "each size is one search per behavior and repetition")
    imix: tuple[tuple[int, int], ...] = ()
    if IMIX_SIZE in sizes:
        try:
            imix = parse_imix(data.get("imix", "simple"))
        except ValueError as exc:
            raise ConfigError(file, "imix", data.get("imix"), str(exc)) from None
    elif "imix" in data:
        raise ConfigError(file, "imix", data["imix"],
                          "set, but packet_sizes has no 'imix' entry to use it")
    traffic = _block(file, "traffic", TrafficConfig, data.get("traffic"))
    if traffic.flows.count > 1 and IMIX_SIZE in sizes:
        raise ConfigError(file, "traffic.flows.count", traffic.flows.count,
                          "many flows are not sent with the 'imix' packet size")
    kind = str(data.get("kind", "pdr"))
    pm = None
    if "pm" in data:
        from srperf.config.pm import PmConfig
        from srperf.pm.cases import check_pm

        pm = _block(file, "pm", PmConfig, data["pm"])
        check_pm(file, pm, data)
    latency = _block(file, "latency", LatencyConfig, data.get("latency"))
    profile = _block(file, "profile", ProfileConfig, data.get("profile"))
    stateful = _stateful_blocks(file, data, kind)
    _check_pipes(file, forwarder, kind, behaviors, stateful.get("pipes", ()), options)
    return Experiment(
        **stateful, kind=kind, traffic=traffic,
        name=str(data["name"]), forwarder=forwarder, behaviors=behaviors,
        packet_sizes=tuple(sizes), imix=imix, search=search,
        repetitions=int(data.get("repetitions", 1)), testbed=data.get("testbed"),
        verify=bool(data.get("verify", True)), options=options,
        conformance=str(data.get("conformance", "off")),
        latency=latency, profile=profile, pm=pm, source=file)


S = TypeVar("S", bound=Settings)


def _block(file: str, key: str, cls: type[S], data: Any) -> S:
    """The settings block ``key`` of experiment ``file`` (absent or empty: the defaults);
    a value its parser refuses is a ConfigError naming ``key.setting``."""
    try:
        return cls.from_mapping(dict(data or {}))
    except SettingError as exc:
        raise ConfigError(file, f"{key}.{exc.key}".rstrip("."), exc.value,
                          exc.reason) from None


def _stateful_blocks(file: str, data: dict[str, Any], kind: str) -> dict[str, Any]:
    """The ``goodput:`` and ``http:`` blocks as settings (srperf.config.stateful);
    a block for another kind than the experiment's is refused (it would be ignored)."""
    from srperf.config.stateful import GoodputConfig, HttpConfig

    out: dict[str, Any] = {}
    for key, cls in (("goodput", GoodputConfig), ("http", HttpConfig)):
        if key in data and kind != key:
            raise ConfigError(file, key, data[key],
                              f"a {key} block, but the experiment's kind is {kind!r} "
                              f"(set kind: {key} to use it)")
        out[key] = _block(file, key, cls, data.get(key))
    if "pipes" in data:
        from srperf.config.stateful import parse_pipes

        if kind != "http":
            raise ConfigError(file, "pipes", data["pipes"],
                              f"SRv6Pipes chains are measured by wrk: set kind: http, "
                              f"not {kind!r}")
        try:
            out["pipes"] = parse_pipes(data["pipes"], out["http"].object_sizes)
        except SettingError as exc:
            raise ConfigError(file, f"pipes.{exc.key}", exc.value, exc.reason) from None
    return out


def _check_pipes(file: str, forwarder: str, kind: str, behaviors: tuple[str, ...],
                 cases: tuple[Any, ...], options: dict[str, Any]) -> None:
    """Forwarder pipes and the ``pipes:`` block go together (srperf.forwarders.pipes)."""
    from srperf.forwarders import pipes

    wrong = pipes.check_experiment(forwarder, kind, behaviors, cases, options)
    if wrong is not None:
        raise ConfigError(file, *wrong)


def _check_behaviors(file: str, forwarder: str, behaviors: tuple[str, ...]) -> None:
    from srperf.behaviors import catalogue
    from srperf.forwarders import registry as forwarders

    from srperf.forwarders import pipes

    if forwarder == pipes.FORWARDER.name:   # its behaviors are its functions: _check_pipes
        return
    from srperf.behaviors import fastpath

    known = set(catalogue.names())
    for i, name in enumerate(behaviors):
        if name not in known and fastpath.is_chain_name(name):
            try:
                fastpath.parse_chain(name)
            except fastpath.ChainError as exc:
                raise ConfigError(file, f"behaviors[{i}]", name,
                                  f"not a fast-path chain: {exc}") from None
        elif name not in known:
            raise ConfigError(file, f"behaviors[{i}]", name,
                              f"unknown behavior{suggest(name, known)} "
                              f"(known: {', '.join(sorted(known))})")
        if not forwarders.get(forwarder).offers(name):
            raise ConfigError(file, f"behaviors[{i}]", name,
                              f"not offered by forwarder {forwarder!r}: "
                              f"{forwarders.get(forwarder).why_not(name)} "
                              f"(offered by: {', '.join(forwarders.offering(name)) or 'none'})")


def check_options(file: str, forwarder: str, options: dict[str, Any]) -> None:
    """Validate an experiment's ``options`` against the forwarder's options schema."""
    from srperf.forwarders import registry as forwarders

    fwd = forwarders.get(forwarder)
    if options and not fwd.options.json_schema()["properties"]:
        key = next(iter(options))
        raise ConfigError(file, f"options.{key}", options[key],
                          f"forwarder {forwarder!r} takes no options")
    schema = {"type": "object", "properties": {"options": fwd.options.json_schema()}}
    _validate(file, {"options": options}, schema)
    try:
        fwd.parse_options(options)
    except SettingError as exc:
        raise ConfigError(file, f"options.{exc.key}".rstrip("."), exc.value, exc.reason) from None
    except ValueError as exc:
        raise ConfigError(file, "options", options, str(exc)) from None
