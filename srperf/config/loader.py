"""Load and validate experiment and testbed YAML files.

Every problem raises :class:`srperf.errors.ConfigError` naming the file, the
key path (``search.trial_duration_s``, ``behaviors[2]``) and the bad value.
Loading never touches a SUT.  File values, ``--set`` values and command-line
options take one path: :func:`srperf.config.coerce.coerce` then the schema
(:func:`check_value` for a single option), then the cross-field checks here.
"""

from __future__ import annotations

import dataclasses
import difflib
import ipaddress
import re
from pathlib import Path
from typing import Any, Sequence

import jsonschema

from srperf.imix import IMIX_SIZE, parse_imix
from srperf.config.model import (Addressing, EndpointHostConfig, EndpointsConfig,
                                 Experiment, LatencyConfig, PortConfig,
                                 ProfileConfig, SearchConfig, TrafficConfig,
                                 SshConfig, SutConfig, TesterConfig, TestbedConfig,
                                 TransportConfig, expand_proxy_command, vnf_sid)
from srperf.config.settings import SettingError
from srperf.config.coerce import coerce
from srperf.config.schema import (ADDRESSING_RANGES, EXPERIMENT_SCHEMA, IFNAME_DOC, IFNAME_PATTERN, MAC_DOC,
                                  MAC_PATTERN, TESTBED_SCHEMA)
from srperf.config.yamlfile import parse_text, read_mapping, refuse_non_finite
from srperf.errors import ConfigError


def _key(path: Any) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def read_yaml(path: Path) -> dict[str, Any]:
    """Parse a YAML mapping strictly (:mod:`srperf.config.yamlfile`); errors name the file."""
    return read_mapping(Path(path))


def suggest(word: str, known: Any) -> str:
    """`` (did you mean 'x'?)`` for the known word nearest to ``word``, else ``""``."""
    close = difflib.get_close_matches(str(word), [str(k) for k in known], n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _validate(file: str, data: dict[str, Any], schema: dict[str, Any]) -> None:
    """Coerce ``data`` to ``schema`` in place (whole floats, off/on, one-line texts),
    then check it against the schema; ConfigError names the first problem."""
    coerce(file, data, schema)
    validator = jsonschema.Draft202012Validator(schema)
    errors = list(validator.iter_errors(data))
    if not errors:
        return
    # An unknown key first (a typo explains the rest: "behaviour" makes "behaviors"
    # missing), then the first error in key order.
    unknown = [e for e in errors if e.validator == "additionalProperties"]
    err = (unknown or sorted(errors, key=lambda e: (list(map(str, e.path)), e.message)))[0]
    if err.validator == "additionalProperties":
        props = err.schema.get("properties", {})
        extra = sorted(set(err.instance) - set(props))
        key = _key(list(err.path) + [extra[0]]) if extra else _key(err.path)
        known = ", ".join(sorted(props))
        raise ConfigError(file, key, err.instance.get(extra[0]) if extra else err.instance,
                          f"unknown key{suggest(extra[0], props) if extra else ''} "
                          f"(known keys here: {known})")
    if err.validator == "required":
        missing = err.message.split("'")[1] if "'" in err.message else err.message
        raise ConfigError(file, _key(list(err.path) + [missing]), None, "required key missing")
    reason = err.message
    if err.validator == "oneOf":
        reason = err.schema.get("description") or "none of the accepted forms"
    elif err.validator == "enum":
        reason = (f"must be one of {', '.join(map(str, err.validator_value))}"
                  f"{suggest(err.instance, err.validator_value)}")
    elif err.validator == "pattern":
        reason = err.schema.get("pattern_doc") or \
            f"does not match the pattern {err.validator_value}"
    elif err.validator == "type" and err.validator_value in ("integer", ["integer", "null"]):
        reason = "must be a whole number (an integer)"
    elif err.validator in ("maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum"):
        reason = {"maximum": "above the limit of", "exclusiveMaximum": "must be below",
                  "minimum": "below the limit of", "exclusiveMinimum": "must be above"}[
            err.validator] + f" {_number(err.validator_value)}" + _unit(err.schema)
    elif err.validator in ("maxLength", "maxItems"):
        reason = (f"longer than the limit of {err.validator_value} "
                  f"{'characters' if err.validator == 'maxLength' else 'entries'}")
    value = err.instance
    if err.schema.get("secret") and isinstance(value, str):
        from srperf.redact import redacted_command

        value = redacted_command(value)
    raise ConfigError(file, _key(err.path), value, reason)


validate = _validate
"""Coerce and check ``data`` against a schema (any srperf file: suites, provisioning)."""


def _number(value: Any) -> str:
    return str(value) if isinstance(value, int) else f"{value:g}"


def _unit(schema: dict[str, Any]) -> str:
    """`` (s)`` when the schema's description ends with a unit in parentheses."""
    doc = str(schema.get("description", ""))
    head = doc.split(":")[0]
    return f" {head[head.rindex('(') + 1:head.rindex(')')]}" \
        if head.endswith(")") and "(" in head else ""


def _subschema(schema: dict[str, Any], dotted: str) -> dict[str, Any]:
    node = schema
    for part in dotted.split("."):
        node = node["properties"][part]
    return node


def check_value(flag: str, value: Any, dotted: str, schema: dict[str, Any] | None = None,
                file: str = "<command line>") -> Any:
    """A command-line option checked like the file key it stands for: ``dotted`` is the
    key path in ``schema`` (default: the experiment schema); returns the value coerced
    (``--repetitions 1e3`` -> 1000), or ConfigError naming ``flag`` and the bound."""
    sub = _subschema(schema or EXPERIMENT_SCHEMA, dotted)
    box = {flag: value}
    _validate(file, box, {"type": "object", "properties": {flag: sub}})
    return box[flag]


# -- experiment ------------------------------------------------------------------
def apply_overrides(data: dict[str, Any], overrides: Sequence[str], file: str) -> None:
    """Apply ``KEY.PATH=VALUE`` overrides (VALUE read as YAML) to a loaded mapping."""
    for item in overrides:
        key, sep, text = item.partition("=")
        if not sep or not key:
            raise ConfigError(file, "--set", item, "use KEY=VALUE, e.g. search.trial_duration_s=2")
        try:
            value = parse_text(text, file) if text.strip() else None
        except ConfigError as exc:
            why = exc.reason if exc.reason.startswith("refused") else "not a YAML value"
            raise ConfigError(file, f"--set {key}", text, why) from None
        refuse_non_finite(file, value, [f"--set {key}"])
        node = data
        parts = key.split(".")
        if not all(parts):
            raise ConfigError(file, "--set", item, "empty key part (use a.b=VALUE)")
        for part in parts[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ConfigError(file, key, text, f"{part} is not a mapping")
            node = child
        node[parts[-1]] = value


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
    try:
        search = SearchConfig.from_mapping(s)
    except SettingError as exc:
        raise ConfigError(file, f"search.{exc.key}".rstrip("."), exc.value, exc.reason) from None
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
    try:
        traffic = TrafficConfig.from_mapping(dict(data.get("traffic") or {}))
    except SettingError as exc:
        raise ConfigError(file, f"traffic.{exc.key}".rstrip("."), exc.value,
                          exc.reason) from None
    if traffic.flows.count > 1 and IMIX_SIZE in sizes:
        raise ConfigError(file, "traffic.flows.count", traffic.flows.count,
                          "many flows are not sent with the 'imix' packet size")
    kind = str(data.get("kind", "pdr"))
    stateful = _stateful_blocks(file, data, kind)
    _check_pipes(file, forwarder, kind, behaviors, stateful.get("pipes", ()), options)
    return Experiment(
        **stateful, kind=kind, traffic=traffic,
        name=str(data["name"]), forwarder=forwarder, behaviors=behaviors,
        packet_sizes=tuple(sizes), imix=imix, search=search,
        repetitions=int(data.get("repetitions", 1)), testbed=data.get("testbed"),
        verify=bool(data.get("verify", True)), options=options,
        conformance=str(data.get("conformance", "off")),
        latency=LatencyConfig.from_mapping(dict(data.get("latency", {}))),
        profile=ProfileConfig.from_mapping(dict(data.get("profile", {}))), source=file)


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
        try:
            out[key] = cls.from_mapping(dict(data.get(key) or {}))
        except SettingError as exc:
            raise ConfigError(file, f"{key}.{exc.key}".rstrip("."), exc.value,
                              exc.reason) from None
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
    from srperf import behaviors as catalogue
    from srperf import forwarders

    from srperf.forwarders import pipes

    if forwarder == pipes.FORWARDER.name:   # its behaviors are its functions: _check_pipes
        return
    known = set(catalogue.names())
    for i, name in enumerate(behaviors):
        if name not in known:
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
    from srperf import forwarders

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


# -- testbed ---------------------------------------------------------------------
def load_testbed(path: str | Path) -> TestbedConfig:
    """Load, validate and return a testbed."""
    path = Path(path)
    file = str(path)
    data = read_yaml(path)
    _reject_remote_dir(file, data)
    _validate(file, data, TESTBED_SCHEMA)
    addressing = _addressing(file, data.get("addressing", {}))
    t = data.get("tester", {})
    tester = TesterConfig(
        driver=t.get("driver", "linux"),
        tx=_port(t.get("tx"), TesterConfig.tx, addressing.tester_tx_mac),
        rx=_port(t.get("rx"), TesterConfig.rx, addressing.tester_rx_mac),
        line_rate_pps=float(t.get("line_rate_pps", TesterConfig.line_rate_pps)),
        cpu=t.get("cpu", TesterConfig.cpu), options=dict(t.get("options", {})),
        netns=t.get("netns"),
        transport=_transport(file, path.parent, "tester", t["transport"])
        if "transport" in t else None)
    s = data.get("sut", {})
    sut = SutConfig(
        forwarder=s.get("forwarder", "linux"),
        transport=_transport(file, path.parent, "sut", s.get("transport", {})),
        in_port=_port(s.get("in"), SutConfig.in_port, addressing.sut_in_mac),
        out_port=_port(s.get("out"), SutConfig.out_port, addressing.sut_out_mac),
        cpu=s.get("cpu", SutConfig.cpu),
        napi_fifo_priority=int(s.get("napi_fifo_priority", SutConfig.napi_fifo_priority)),
        napi_defer_hard_irqs=int(s.get("napi_defer_hard_irqs", 0)),
        gro_flush_timeout_us=float(s.get("gro_flush_timeout_us", 0.0)),
        vpp_binary=s.get("vpp_binary"))
    for key, a, b in (("tester.rx.name", tester.tx.name, tester.rx.name),
                      ("sut.out.name", sut.in_port.name, sut.out_port.name)):
        if a == b:
            raise ConfigError(file, key, b, "the same interface as the other port")
    _check_port_macs(file, data, {"tester.tx": tester.tx, "tester.rx": tester.rx,
                                  "sut.in": sut.in_port, "sut.out": sut.out_port})
    _check_driver_options(file, tester.driver, tester.options)
    kind = data.get("kind", "virtual")
    _check_simulated(file, kind, data)
    if "kernel" in data and kind != "kernel":
        raise ConfigError(file, "kernel", data["kernel"], f"only a testbed of kind 'kernel' "
                          f"boots a kernel; this one is {kind!r} (remove the block)")
    from srperf import testbeds

    endpoints = _endpoints(file, path.parent, kind, data["endpoints"], sut) \
        if "endpoints" in data else None
    config = TestbedConfig(name=data["name"], kind=data.get("kind", "virtual"),
                           prefix=data.get("prefix", default_prefix(data)),
                           tester=tester, sut=sut,
                           addressing=addressing, simulated=dict(data.get("simulated", {})),
                           provision=dict(data.get("provision", {})), endpoints=endpoints,
                           kernel=dict(data.get("kernel") or {}), source=file)
    testbeds.KINDS[config.kind].check_config(config)
    return config


def _endpoints(file: str, base: Path, kind: str, data: dict[str, Any],
               sut: SutConfig) -> EndpointsConfig:
    """The ``endpoints`` block: two SSH hosts, neither the other nor the SUT."""
    if kind != "ssh":
        raise ConfigError(file, "endpoints", sorted(data),
                          f"endpoint hosts are for an ssh testbed; this one is {kind!r} "
                          "(a virtual testbed makes its client and server namespaces "
                          "itself; remove the block)")
    hosts: dict[str, EndpointHostConfig] = {}
    seen: dict[tuple[str, int], str] = {}
    if sut.transport.ssh is not None:
        seen[(sut.transport.ssh.host, sut.transport.ssh.port)] = "the SUT (sut.transport.ssh)"
    for side in ("client", "server"):
        d = data[side]
        key = f"endpoints.{side}"
        transport = _transport(file, base, key, d["transport"])
        if transport.kind != "ssh" or transport.ssh is None:
            raise ConfigError(file, f"{key}.transport.kind", transport.kind,
                              "an endpoint host is reached over ssh (give "
                              f"{key}.transport.ssh: host, user, key_file, known_hosts)")
        where = (transport.ssh.host, transport.ssh.port)
        if where in seen:
            raise ConfigError(file, f"{key}.transport.ssh.host", transport.ssh.host,
                              f"port {transport.ssh.port} of this host is already "
                              f"{seen[where]}: client, server and SUT each need a network "
                              "stack of their own, or the TCP would not cross the SUT")
        seen[where] = f"endpoints.{side}"
        hosts[side] = EndpointHostConfig(transport, d["dev"], d.get("cpu"))
    return EndpointsConfig(hosts["client"], hosts["server"], data.get("steering", "host"))


def _check_port_macs(file: str, data: dict[str, Any], ports: dict[str, PortConfig]) -> None:
    """The four test ports have four different MACs (from the port or ``addressing``)."""
    seen: dict[str, str] = {}
    for role, port in ports.items():
        section, side = role.split(".")
        written = ((data.get(section) or {}).get(side) or {}).get("mac")
        key = f"{role}.mac" if written else f"addressing.{role.replace('.', '_')}_mac"
        if port.mac.lower() in seen:
            raise ConfigError(file, key, port.mac,
                              f"the same MAC as {seen[port.mac.lower()]}: every test port "
                              "needs its own (the SUT's two ports above all)")
        seen[port.mac.lower()] = role


def _check_simulated(file: str, kind: str, data: dict[str, Any]) -> None:
    """A ``simulated`` block only on a simulated testbed, with the model's own keys."""
    if "simulated" not in data:
        return
    sim = data["simulated"]
    if kind != "simulated":
        raise ConfigError(file, "simulated", sim,
                          f"only a testbed of kind 'simulated' has a model; this one is "
                          f"{kind!r} (remove the block)")
    from srperf.drivers.simulated import _KEYS, SimulatedGenerator

    for key in sim:
        if key not in _KEYS:
            raise ConfigError(file, f"simulated.{key}", sim[key],
                              f"unknown key{suggest(key, _KEYS)} (known keys here: "
                              f"{', '.join(_KEYS)})")
    capacity = sim.get("capacity_pps")
    behaviors = list(capacity) if isinstance(capacity, dict) and "default" not in capacity \
        else [None]
    for behavior in behaviors:
        try:
            SimulatedGenerator.from_config(sim, behavior=behavior)
        except (TypeError, ValueError) as exc:
            raise ConfigError(file, "simulated", sim, str(exc)) from None


def _check_driver_options(file: str, driver: str, options: dict[str, Any]) -> None:
    """Validate ``tester.options`` against the driver's options dataclass."""
    from srperf.generators import options_class

    cls = options_class(driver)
    if cls is None:
        if options:
            raise ConfigError(file, f"tester.options.{next(iter(options))}",
                              options[next(iter(options))],
                              f"driver {driver!r} takes no options here")
        return
    _validate(file, {"tester": {"options": options}},
              {"type": "object", "properties": {"tester": {
                  "type": "object", "properties": {"options": cls.json_schema()}}}})
    try:
        cls(**options)
    except SettingError as exc:
        raise ConfigError(file, f"tester.options.{exc.key}", exc.value, exc.reason) from None
    except (TypeError, ValueError) as exc:
        raise ConfigError(file, "tester.options", options, str(exc)) from None


def _reject_remote_dir(file: str, data: dict[str, Any]) -> None:
    """``remote_dir`` (a fixed, predictable path) is gone: say what replaced it."""
    ssh = ((data.get("sut") or {}).get("transport") or {}).get("ssh")
    if isinstance(ssh, dict) and "remote_dir" in ssh:
        raise ConfigError(file, "sut.transport.ssh.remote_dir", ssh["remote_dir"],
                          "no longer supported: srperf now makes a private directory "
                          "with mktemp -d on the node; remove remote_dir (set tmp_base "
                          "to choose the parent directory, default /tmp)")


def _transport(file: str, base: Path, role: str, data: dict[str, Any]) -> TransportConfig:
    """The ``ROLE.transport`` block (``kind`` defaults to ssh when an ssh block is given)."""
    ssh = _ssh(file, base, data["ssh"], role) if "ssh" in data else None
    kind = data.get("kind", "ssh" if ssh else "netns")
    if kind == "ssh" and ssh is None:
        raise ConfigError(file, f"{role}.transport.ssh", None,
                          f"required when {role}.transport.kind is 'ssh'")
    return TransportConfig(kind, ssh)


def _ssh(file: str, base: Path, data: dict[str, Any], role: str = "sut") -> SshConfig:
    """The ``ROLE.transport.ssh`` block; key files resolved against the YAML's folder."""
    fields: dict[str, Any] = dict(data)
    _check_host(file, f"{role}.transport.ssh.host", str(fields["host"]))
    for name in ("key_file", "known_hosts"):
        if fields.get(name) is None:
            continue
        value = fields[name]
        key = f"{role}.transport.ssh.{name}"
        found = _existing_file(file, key, value, base / Path(value).expanduser())
        if name == "known_hosts":
            _check_known_hosts(file, key, value, found)
        fields[name] = str(found)
    ssh = SshConfig(**fields)
    if ssh.proxy_command is not None:
        from srperf import redact

        redact.register_proxy_command(ssh.proxy_command, ssh.host, ssh.port, ssh.user)
        try:
            expand_proxy_command(ssh.proxy_command, ssh.host, ssh.port, ssh.user)
        except ValueError as exc:
            raise ConfigError(file, f"{role}.transport.ssh.proxy_command",
                              redact.redacted_command(ssh.proxy_command), str(exc)) from None
    return ssh


def _check_host(file: str, key: str, host: str) -> None:
    """An IP address or a host name of dot-separated labels (never an option, a
    pattern or a second line: the name goes into ssh and known_hosts lines)."""
    try:
        ipaddress.ip_address(host)
        return
    except ValueError:
        pass
    labels = host.rstrip(".").split(".")
    if len(host) > 253 or not all(re.fullmatch(r"[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}"
                                                r"[A-Za-z0-9_])?", label) for label in labels):
        raise ConfigError(file, key, host, "not a host name (letters, digits, '-' and '_' in "
                          "dot-separated labels of at most 63, not starting or ending with "
                          "'-') nor an IP address")


def _existing_file(file: str, key: str, value: str, path: Path) -> Path:
    """``path`` resolved, when it is a regular file; ConfigError otherwise (a missing
    file, a directory, a device, a symlink loop)."""
    import os
    import stat as stat_mod

    try:
        found = path.resolve(strict=True)
        mode = os.stat(found).st_mode
    except FileNotFoundError:
        raise ConfigError(file, key, value, f"{path} does not exist") from None
    except (RuntimeError, OSError) as exc:   # ELOOP: "Symlink loop", a too long name...
        why = "a symlink loop" if "loop" in str(exc).lower() or \
            getattr(exc, "errno", None) == 40 else getattr(exc, "strerror", None) or str(exc)
        raise ConfigError(file, key, value, f"{path}: cannot be opened: {why}") from None
    if not stat_mod.S_ISREG(mode):
        raise ConfigError(file, key, value, f"{found} is not a regular file")
    if not os.access(found, os.R_OK):
        raise ConfigError(file, key, value, f"{found}: permission denied")
    return found


def _check_known_hosts(file: str, key: str, value: str, path: Path) -> None:
    """Every line of a known_hosts file is an entry paramiko can read (or a comment)."""
    import paramiko
    from paramiko.hostkeys import HostKeyEntry

    try:
        text = path.read_bytes()[: 16 * 1024 * 1024].decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(file, key, value, f"{path}: not a known_hosts file (not text)") \
            from None
    except OSError as exc:
        raise ConfigError(file, key, value, f"{path}: cannot read: {exc.strerror}") from None
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith(("#", "@")):
            continue
        ok = len(line.split()) >= 3
        try:   # None: a key type paramiko does not know, which it skips too
            HostKeyEntry.from_line(line, number)
        except (paramiko.SSHException, ValueError, TypeError, IndexError,
                paramiko.hostkeys.InvalidHostKey):
            ok = False
        if not ok:
            raise ConfigError(file, key, value,
                              f"{path} line {number}: not a known_hosts entry (HOST KEYTYPE "
                              "BASE64KEY); fix or remove the line, or use "
                              "srperf testbed trust")


def _port(data: dict[str, Any] | None, default: PortConfig, mac: str) -> PortConfig:
    if not data:
        return PortConfig(default.name, mac)
    return PortConfig(data["name"], data.get("mac", mac))


_INT_RANGES = ADDRESSING_RANGES
"""Allowed values of integer addressing keys (inclusive); C-SIDs are checked below."""
_RESERVED_TABLES = {253: "default", 254: "main", 255: "local"}
_MAC_PREFIX4 = r"([0-9a-fA-F]{2}:){3}[0-9a-fA-F]{2}"


def _addressing(file: str, data: dict[str, Any]) -> Addressing:
    addressing = Addressing(**data)
    for f in dataclasses.fields(Addressing):
        value = getattr(addressing, f.name)
        key = f"addressing.{f.name}"
        name = f.name
        if name in _INT_RANGES:
            low, high = _INT_RANGES[name]
            if not low <= value <= high:
                raise ConfigError(file, key, value, f"must be {low}..{high}")
        elif name.endswith("_mac_prefix"):
            if not re.fullmatch(_MAC_PREFIX4, str(value)) or int(str(value)[:2], 16) & 1:
                raise ConfigError(file, key, value,
                                  "not the first 4 bytes of a unicast MAC (like 02:5e:00:10; "
                                  "the first byte even)")
        elif name.endswith("_mac"):
            if not re.fullmatch(MAC_PATTERN, str(value)):
                raise ConfigError(file, key, value, MAC_DOC)
        elif name.endswith("prefix6") or name == "sid_prefix":
            _check_ip(file, key, value, 6, network=True)
        elif name.endswith("prefix4"):
            _check_ip(file, key, value, 4, network=True)
        elif name.endswith("_ip6") or name in ("src6", "dst6", "tunsrc", "csid_block") \
                or (name.startswith("sid_") and isinstance(value, str)):
            _check_ip(file, key, value, 6, network=False)
        elif name.endswith("_ip4") or name in ("src4", "dst4", "vnf_snat4"):
            _check_ip(file, key, value, 4, network=False)
        elif name == "vnf_snat6":
            _check_ip(file, key, value, 6, network=False)
    a = addressing
    if a.table in _RESERVED_TABLES:
        raise ConfigError(file, "addressing.table", a.table,
                          f"the kernel's own {_RESERVED_TABLES[a.table]!r} table; "
                          "use another number")
    for name in ("csid_lblen", "csid_nflen"):
        if getattr(a, name) % 8:
            raise ConfigError(file, f"addressing.{name}", getattr(a, name),
                              "must be a multiple of 8 (the kernel's next-csid flavor)")
    if a.csid_lblen + 2 * a.csid_nflen > 128:
        raise ConfigError(file, "addressing.csid_lblen", a.csid_lblen,
                          f"locator block + two C-SIDs of {a.csid_nflen} bits exceed 128 bits")
    for name in ("csid_sut", "csid_next"):
        value = getattr(a, name)
        if not 1 <= value < 2 ** a.csid_nflen:
            raise ConfigError(file, f"addressing.{name}", value,
                              f"a C-SID of csid_nflen = {a.csid_nflen} bits must be "
                              f"1..{2 ** a.csid_nflen - 1}")
    if a.csid_sut == a.csid_next:
        raise ConfigError(file, "addressing.csid_next", a.csid_next, "equals csid_sut")
    block = int(ipaddress.IPv6Address(a.csid_block))
    if block & ((1 << (128 - a.csid_lblen)) - 1):
        raise ConfigError(file, "addressing.csid_block", a.csid_block,
                          f"has bits set beyond its {a.csid_lblen}-bit locator block "
                          "(csid_lblen)")
    for ip, peer, length, key in ((a.sut_in_ip6, a.tester_tx_ip6, a.link_prefix_len6, "6"),
                                  (a.sut_out_ip6, a.tester_rx_ip6, a.link_prefix_len6, "6"),
                                  (a.sut_in_ip4, a.tester_tx_ip4, a.link_prefix_len4, "4"),
                                  (a.sut_out_ip4, a.tester_rx_ip4, a.link_prefix_len4, "4")):
        net = ipaddress.ip_network(f"{ip}/{length}", strict=False)
        if ipaddress.ip_address(peer) not in net:
            raise ConfigError(file, f"addressing.link_prefix_len{key}", length,
                              f"{peer} is not on the SUT's link {net}")
    _check_vnfs(file, a)
    _check_plan(file, a)
    return addressing


def _check_plan(file: str, a: Addressing) -> None:
    """Addresses that contradict each other: a run would measure the wrong thing."""
    ip, net = ipaddress.ip_address, ipaddress.ip_network
    for v, ports in (("6", ("tester_tx_ip6", "sut_in_ip6", "sut_out_ip6", "tester_rx_ip6")),
                     ("4", ("tester_tx_ip4", "sut_in_ip4", "sut_out_ip4", "tester_rx_ip4"))):
        seen: dict[Any, str] = {}
        for name in ports:
            addr = ip(getattr(a, name))
            if addr in seen:
                raise ConfigError(file, f"addressing.{name}", getattr(a, name),
                                  f"the same address as addressing.{seen[addr]}: each port "
                                  "needs its own")
            seen[addr] = name
        length = getattr(a, f"link_prefix_len{v}")
        link1 = net(f"{getattr(a, ports[1])}/{length}", strict=False)
        link2 = net(f"{getattr(a, ports[2])}/{length}", strict=False)
        if link1.overlaps(link2):
            raise ConfigError(file, f"addressing.{ports[2]}", getattr(a, ports[2]),
                              f"on the same link prefix {link1} as addressing.{ports[1]}: the "
                              "SUT's two links need different prefixes")
        src, dst = f"src{v}", f"dst{v}"
        if ip(getattr(a, src)) == ip(getattr(a, dst)):
            raise ConfigError(file, f"addressing.{dst}", getattr(a, dst),
                              f"the same address as addressing.{src}")
        prefix = net(getattr(a, f"dst_prefix{v}"), strict=False)
        if ip(getattr(a, dst)) not in prefix:
            raise ConfigError(file, f"addressing.{dst}", getattr(a, dst),
                              f"outside its prefix addressing.dst_prefix{v} = {prefix}")
        for link in (link1, link2):
            if prefix.overlaps(link):
                raise ConfigError(file, f"addressing.dst_prefix{v}", getattr(a, f"dst_prefix{v}"),
                                  f"overlaps the link prefix {link}: test traffic would be "
                                  "delivered on the link, not routed")
            for name in (src, dst):
                if ip(getattr(a, name)) in link:
                    raise ConfigError(file, f"addressing.{name}", getattr(a, name),
                                      f"inside the link prefix {link}: test traffic must be "
                                      "routed, not on a link")
    links = [net(f"{a.sut_in_ip6}/{a.link_prefix_len6}", strict=False),
             net(f"{a.sut_out_ip6}/{a.link_prefix_len6}", strict=False)]
    sid_net = net(a.sid_prefix, strict=False)
    for link in links:
        if sid_net.overlaps(link):
            raise ConfigError(file, "addressing.sid_prefix", a.sid_prefix,
                              f"covers the link prefix {link}: SIDs and link addresses must "
                              "not overlap")
    sids = {"sid_sut": a.sid_sut, "sid_next": a.sid_next, "sid_last": a.sid_last}
    seen_sid: dict[Any, str] = {}
    for name, sid in sids.items():
        addr = ip(sid)
        if addr in seen_sid:
            raise ConfigError(file, f"addressing.{name}", sid,
                              f"the same SID as addressing.{seen_sid[addr]}")
        seen_sid[addr] = name
        for link in links:
            if addr in link:
                raise ConfigError(file, f"addressing.{name}", sid,
                                  f"inside the link prefix {link}: a SID is not a link "
                                  "address (a run would measure the SUT's own delivery)")
        for other in ("src6", "dst6"):
            if addr == ip(getattr(a, other)):
                raise ConfigError(file, f"addressing.{name}", sid,
                                  f"the same address as addressing.{other}")


def _check_vnfs(file: str, a: Addressing) -> None:
    """The VNF names and SIDs derived from a prefix must be valid for every VNF index."""
    from srperf.testbeds.vnf import MAX_VNFS

    last = MAX_VNFS - 1
    name = f"{a.vnf_if_prefix}{last}"
    if not re.fullmatch(IFNAME_PATTERN, name):
        raise ConfigError(file, "addressing.vnf_if_prefix", a.vnf_if_prefix,
                          f"VNF interfaces are named <prefix><0..{last}>; {name!r} is not "
                          f"a valid interface name: {IFNAME_DOC}")
    for index in (0, last):
        try:
            vnf_sid(a, index)
        except ValueError:
            raise ConfigError(file, "addressing.vnf_sid_base", a.vnf_sid_base,
                              f"VNF {index}'s SID would be {a.vnf_sid_base}{index + 1:x}, "
                              "not an IPv6 address (end the base with '::' or ':')") from None
    if not 0 <= a.vnf_target <= last:
        raise ConfigError(file, "addressing.vnf_target", a.vnf_target, f"must be 0..{last}")


def _check_ip(file: str, key: str, value: Any, version: int, network: bool) -> None:
    if not isinstance(value, str):
        return
    try:
        obj = ipaddress.ip_network(value, strict=False) if network \
            else ipaddress.ip_address(value)
    except ValueError:
        kind = "prefix" if network else "address"
        raise ConfigError(file, key, value, f"not an IPv{version} {kind}") from None
    if obj.version != version:
        raise ConfigError(file, key, value, f"must be an IPv{version} address")


# -- any file --------------------------------------------------------------------
def guess_kind(data: dict[str, Any]) -> str:
    """``experiment`` or ``testbed``: the schema whose top-level keys ``data`` matches best
    (a misspelt key counts half), so that a typo is reported against the right schema."""
    def score(schema: dict[str, Any]) -> float:
        props = schema["properties"]
        return sum(1.0 if k in props and k != "name" else 0.5 if suggest(k, props) else 0.0
                   for k in data)

    return "experiment" if score(EXPERIMENT_SCHEMA) >= score(TESTBED_SCHEMA) and \
        score(EXPERIMENT_SCHEMA) > 0 else "testbed"


def testbed_of(exp: Experiment) -> TestbedConfig | None:
    """The testbed the experiment's ``testbed`` key names, loaded (None without the key);
    a name that resolves to no file is an error of the experiment file."""
    if exp.testbed is None:
        return None
    from srperf.resources import find_config

    found = find_config(exp.testbed, "testbed")
    if not found.is_file():
        why = "is a directory" if found.is_dir() else "file not found"
        raise ConfigError(exp.source, "testbed", exp.testbed,
                          f"{why} (neither a path nor a shipped testbed name)")
    return load_testbed(found)


DEFAULT_TESTBED = "virtual"
"""The testbed a command uses when neither it nor the experiment names one."""


def resolve_testbed(name: str | None, exp: Experiment | None = None) -> TestbedConfig:
    """The testbed a command runs on: ``name`` (a path or a shipped testbed name) when
    given, else the one the experiment's ``testbed`` key names, else the default."""
    named = testbed_of(exp) if exp is not None else None  # a bad testbed key is an error
    if name is None and named is not None:
        return named
    from srperf.resources import find_config

    return load_testbed(find_config(name or DEFAULT_TESTBED, "testbed"))


def default_prefix(data: dict[str, Any]) -> str:
    """A testbed's ``prefix`` when the file sets none: ``srp`` for a virtual testbed;
    for an SSH testbed one of its own, made from its name (its VNF namespaces
    ``<prefix>-vnfN`` on a SUT host that several testbeds share must not be another
    testbed's, whose cleanup would delete them): the name itself when it fits
    ``[a-z][a-z0-9]{0,7}``, else ``s`` + 7 hex digits of its SHA-256."""
    import hashlib

    name = str(data.get("name", ""))
    if data.get("kind", "virtual") != "ssh":
        return "srp"
    if re.fullmatch(r"[a-z][a-z0-9]{0,7}", name):
        return name
    return "s" + hashlib.sha256(name.encode()).hexdigest()[:7]


def validate_file(path: str | Path) -> str:
    """Validate a file as an experiment or a testbed (guessed from its keys).

    Returns ``"experiment"``, ``"testbed"`` or ``"suite"`` (a nightly suite: ``name``
    and ``experiments``, checked by the caller); raises ConfigError.
    """
    path = Path(path)
    data = read_yaml(path)
    if "experiments" in data and "behaviors" not in data:
        return "suite"
    if guess_kind(data) == "experiment":
        testbed_of(load_experiment(path))
        return "experiment"
    load_testbed(path)
    return "testbed"
