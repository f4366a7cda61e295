"""A testbed file loaded: tester, SUT, ports, driver options, the simulated block and
the prefix (addressing, transports and endpoint hosts each in their own module).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from srperf.config.model import PortConfig, SutConfig, TesterConfig, TestbedConfig
from srperf.config.settings import SettingError
from srperf.config.schema import TESTBED_SCHEMA
from srperf.errors import ConfigError
from srperf.config.reader import _validate, read_yaml, suggest
from srperf.config.addressing import _addressing
from srperf.config.endpoints import _endpoints
from srperf.config.ssh import _transport


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
    from srperf.testbeds import registry as testbeds

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
    from srperf.traffic.generators import options_class

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


def _port(data: dict[str, Any] | None, default: PortConfig, mac: str) -> PortConfig:
    if not data:
        return PortConfig(default.name, mac)
    return PortConfig(data["name"], data.get("mac", mac))


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
