"""Load and validate experiment and testbed YAML files.

Every problem raises :class:`srperf.errors.ConfigError` naming the file, the
key path (``search.trial_duration_s``, ``behaviors[2]``) and the bad value.
Loading never touches a SUT.
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
from srperf.config.model import (Addressing, Experiment, LatencyConfig, PortConfig,
                                 SearchConfig,
                                 SshConfig, SutConfig, TesterConfig, TestbedConfig,
                                 TransportConfig, expand_proxy_command, vnf_sid)
from srperf.config.settings import SettingError
from srperf.config.schema import (EXPERIMENT_SCHEMA, IFNAME_DOC, IFNAME_PATTERN, MAC_PATTERN,
                                  TESTBED_SCHEMA)
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
    raise ConfigError(file, _key(err.path), err.instance, reason)


# -- experiment ------------------------------------------------------------------
def apply_overrides(data: dict[str, Any], overrides: Sequence[str], file: str) -> None:
    """Apply ``KEY.PATH=VALUE`` overrides (VALUE read as YAML) to a loaded mapping."""
    for item in overrides:
        key, sep, text = item.partition("=")
        if not sep or not key:
            raise ConfigError(file, "--set", item, "use KEY=VALUE, e.g. search.trial_duration_s=2")
        try:
            value = parse_text(text, file) if text.strip() else None
        except ConfigError:
            raise ConfigError(file, f"--set {key}", text, "not a YAML value") from None
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
    check_options(file, forwarder, dict(data.get("options", {})))
    if len(set(behaviors)) != len(behaviors):
        dup = next(b for b in behaviors if behaviors.count(b) > 1)
        raise ConfigError(file, f"behaviors[{behaviors.index(dup)}]", dup, "listed twice")
    sizes = [IMIX_SIZE if v == "imix" else v for v in data.get("packet_sizes", [64])]
    imix: tuple[tuple[int, int], ...] = ()
    if IMIX_SIZE in sizes:
        try:
            imix = parse_imix(data.get("imix", "simple"))
        except ValueError as exc:
            raise ConfigError(file, "imix", data.get("imix"), str(exc)) from None
    elif "imix" in data:
        raise ConfigError(file, "imix", data["imix"],
                          "set, but packet_sizes has no 'imix' entry to use it")
    return Experiment(
        name=data["name"], forwarder=forwarder, behaviors=behaviors,
        packet_sizes=tuple(sizes), imix=imix, search=search,
        repetitions=int(data.get("repetitions", 1)), testbed=data.get("testbed"),
        verify=bool(data.get("verify", True)), options=dict(data.get("options", {})),
        conformance=str(data.get("conformance", "off")),
        latency=LatencyConfig.from_mapping(dict(data.get("latency", {}))), source=file)


def _check_behaviors(file: str, forwarder: str, behaviors: tuple[str, ...]) -> None:
    from srperf import behaviors as catalogue
    from srperf import forwarders

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
    _check_driver_options(file, tester.driver, tester.options)
    from srperf import testbeds

    config = TestbedConfig(name=data["name"], kind=data.get("kind", "virtual"),
                           prefix=data.get("prefix", default_prefix(data)),
                           tester=tester, sut=sut,
                           addressing=addressing, simulated=dict(data.get("simulated", {})),
                           provision=dict(data.get("provision", {})), source=file)
    testbeds.KINDS[config.kind].check_config(config)
    return config


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
    for name in ("key_file", "known_hosts"):
        if fields.get(name) is None:
            continue
        value = fields[name]
        found = (base / Path(value).expanduser()).resolve()
        if not found.is_file():
            why = "is not a regular file" if found.exists() else "does not exist"
            raise ConfigError(file, f"{role}.transport.ssh.{name}", value,
                              f"{found} {why}")
        fields[name] = str(found)
    ssh = SshConfig(**fields)
    if ssh.proxy_command is not None:
        try:
            expand_proxy_command(ssh.proxy_command, ssh.host, ssh.port, ssh.user)
        except ValueError as exc:
            raise ConfigError(file, f"{role}.transport.ssh.proxy_command", ssh.proxy_command,
                              str(exc)) from None
    return ssh


def _port(data: dict[str, Any] | None, default: PortConfig, mac: str) -> PortConfig:
    if not data:
        return PortConfig(default.name, mac)
    return PortConfig(data["name"], data.get("mac", mac))


_INT_RANGES = {
    "link_prefix_len6": (1, 127), "link_prefix_len4": (1, 31), "table": (1, 2**32 - 1),
    "csid_lblen": (8, 112), "csid_nflen": (8, 64), "link_mtu": (1280, 65535),
}
"""Allowed values of integer addressing keys (inclusive); C-SIDs are checked below."""
_RESERVED_TABLES = {253: "default", 254: "main", 255: "local"}
_MAC_PREFIX4 = r"^([0-9a-fA-F]{2}:){3}[0-9a-fA-F]{2}$"


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
            if not re.match(_MAC_PREFIX4, str(value)):
                raise ConfigError(file, key, value,
                                  "not the first 4 bytes of a MAC (like 02:5e:00:10)")
        elif name.endswith("_mac"):
            if not re.match(MAC_PATTERN, str(value)):
                raise ConfigError(file, key, value, "not a MAC address")
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
    return addressing


def _check_vnfs(file: str, a: Addressing) -> None:
    """The VNF names and SIDs derived from a prefix must be valid for every VNF index."""
    from srperf.testbeds.vnf import MAX_VNFS

    last = MAX_VNFS - 1
    name = f"{a.vnf_if_prefix}{last}"
    if not re.match(IFNAME_PATTERN, name):
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
