"""Start and stop a TRex server on the tester host, from a release directory there.

``srperf testbed up`` on a testbed whose tester options name a ``release``
writes ``srperf_trex_cfg.yaml`` into that directory (from the testbed's
``interfaces``, :func:`srperf.drivers.trex_cfg.render_trex_cfg`), starts
``t-rex-64 -i`` in a session of its own (its process group is the server) and
waits until the RPC port listens; ``down`` ends that process group.

Everything is per testbed, so that two testbeds may share one TRex release
directory without sharing (or killing) each other's server: in the release
directory, ``srperf_trex.<testbed>.pid`` (the PID), ``srperf_trex.<testbed>.log``
(the server's output), ``srperf_trex_cfg.<testbed>.yaml`` (its config, whose DPDK
file ``prefix`` is ``srperf-<testbed>``, so its hugepage files and
``/var/run/dpdk/<prefix>`` are its own).  A server whose RPC port is already
taken (another testbed's server, any other program) is refused, naming who holds it.

Its two ports (``tester.options.sync_port``, the RPC port, and ``async_port``, the
publisher's) must be its own as well wherever its server listens: two servers in one
network namespace (an SSH tester host's, or this host's) need four distinct ports,
while a virtual testbed's server listens in its own tester namespace, where the
defaults never clash.  Each config srperf writes starts with a comment saying whose it
is and where its server listens (:func:`config_header`), so that the configs the other
testbeds left in the release directory tell ``srperf validate`` (a release on this
host) and ``testbed up`` (any host) of a clash before anything starts
(:func:`port_clashes`, refused as a :class:`ConfigError` naming the key and port).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import posixpath
import re
import time
from typing import Mapping

import yaml

from srperf.config.model import TestbedConfig
from srperf.drivers.trex import TrexOptions
from srperf.drivers.trex_cfg import read_pci, render_trex_cfg
from srperf.errors import ConfigError, GeneratorError
from srperf.transports.base import Transport

log = logging.getLogger(__name__)

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


def file_key(testbed: str) -> str:
    """``testbed`` as it appears in file names and the DPDK prefix (``[A-Za-z0-9_.-]``)."""
    return _UNSAFE.sub("_", testbed) or "_"


def dpdk_prefix(testbed: str) -> str:
    """The DPDK file prefix of a testbed's TRex server (``--file-prefix``)."""
    return f"srperf-{file_key(testbed)}"


PORT_KEYS = (("sync_port", "zmq_rpc_port"), ("async_port", "zmq_pub_port"))
"""``tester.options`` key of each of the server's ports, and its trex_cfg.yaml key
(TRex's defaults: 4501 and 4500)."""
CONFIG_GLOB = "srperf_trex_cfg.*.yaml"
_HEADER = "# srperf-trex-server: "


def listen_scope(node: Transport) -> str:
    """Where a server started through ``node`` listens: ``netns NAME`` for a namespace of
    this host (a virtual testbed's tester), else ``host`` (the namespace of the host that
    holds the release directory)."""
    return "host" if node.machine() is node else node.where


def config_header(testbed: str, source: str, scope: str) -> str:
    """The first line of the config srperf writes: whose server it is and where it
    listens (a YAML comment, which TRex ignores)."""
    return _HEADER + json.dumps({"testbed": testbed, "file": source, "listens_in": scope},
                                sort_keys=True) + "\n"


@dataclasses.dataclass(frozen=True)
class PortClash:
    """A port of this testbed's server that another testbed's server (its config in the
    same release, listening in the same place) uses too."""

    key: str
    """This testbed's key: ``tester.options.sync_port`` or ``async_port``."""
    port: int
    other: str
    """The other testbed's name."""
    other_file: str
    """The other testbed's file."""
    other_key: str
    """The other config's key holding ``port`` (``zmq_rpc_port`` or ``zmq_pub_port``)."""
    cfg_path: str
    """The other testbed's config in the release directory."""

    def error(self, source: str, scope: str) -> ConfigError:
        """The refusal, naming ``source`` (this testbed's file), the key and the port."""
        return ConfigError(
            source, self.key, self.port,
            f"testbed {self.other} ({self.other_file}) uses port {self.port} "
            f"({self.other_key} of {self.cfg_path}) for its TRex server from the same "
            f"release, which listens in the same network namespace ({scope}): two servers "
            "there need four distinct ports; set other tester.options.sync_port and "
            "async_port here (e.g. 4511 and 4510), or remove that config if testbed "
            f"{self.other} is gone")


def port_clashes(testbed: str, scope: str, ports: Mapping[str, int],
                 configs: Mapping[str, str]) -> list[PortClash]:
    """The ports of testbed ``testbed`` (``{"sync_port": N, "async_port": M}``) that the
    servers of other testbeds use where its own will listen (``scope``), from their
    configs' texts (``{path: text}``).  Configs without srperf's header (written by hand
    or by an older srperf) say nothing of where they listen and are left out."""
    clashes: list[PortClash] = []
    for path, text in sorted(configs.items()):
        first = text.split("\n", 1)[0]
        if not first.startswith(_HEADER):
            continue
        try:
            head = json.loads(first[len(_HEADER):])
            (entry,) = yaml.safe_load(text)
            theirs = {cfg_key: int(entry.get(cfg_key, default)) for cfg_key, default
                      in (("zmq_rpc_port", 4501), ("zmq_pub_port", 4500))}
        except (ValueError, TypeError, AttributeError, yaml.YAMLError):
            log.warning("%s: not a TRex config srperf wrote; left out", path)
            continue
        if head.get("testbed") == testbed or head.get("listens_in") != scope:
            continue
        for key, _ in PORT_KEYS:
            for cfg_key, port in theirs.items():
                if ports[key] == port:
                    clashes.append(PortClash(f"tester.options.{key}", port,
                                             str(head.get("testbed")),
                                             str(head.get("file")), cfg_key, path))
    return clashes


DPDK_RUNTIME = "/var/run/dpdk"
"""Where DPDK keeps a process's runtime directory (``<prefix>``: config, fbarray files,
mp_socket; about 3 MB), left behind when the server ends."""
TREX_BIRD_DIR = "/tmp/trex-bird"
"""The directory TRex makes for its BIRD routing daemon at start and leaves (empty)."""

_START = ('cd "$1" || exit 1; setsid nohup ./t-rex-64 -i --cfg "$2" --no-scapy-server $4 '
          '> "$3" 2>&1 < /dev/null & echo $! > "$5"')


class TrexServer:
    """The TRex server of one testbed, on the tester host reached by ``node``."""

    def __init__(self, node: Transport, options: TrexOptions, testbed: str,
                 ready_s: float = 60.0, ports: tuple[str, ...] = (),
                 kernel_ports: bool = False, cpu: int | None = None,
                 source: str = "", runtime_dir: str = DPDK_RUNTIME,
                 bird_dir: str = TREX_BIRD_DIR) -> None:
        if options.release is None:
            raise GeneratorError("no tester.options.release: srperf does not manage "
                                 "this TRex server")
        self.node, self.opt, self.ready_s = node, options, ready_s
        self.ports = ports
        """The tester's port names, whose PCI addresses serve when ``interfaces`` is empty."""
        self.kernel_ports = kernel_ports
        """True: ``ports`` are kernel interfaces (veth) TRex opens itself through AF_PACKET."""
        self.cpu = cpu
        """The CPU of a ``low_end`` server (TRex's ``low_end_core``); None: TRex's choice."""
        self.testbed = testbed
        """The testbed whose server this is: it keys the PID, config and log files and the
        DPDK file prefix."""
        key = file_key(testbed)
        base = posixpath.join(options.release, f"srperf_trex.{key}")
        self.cfg_path = posixpath.join(options.release, f"srperf_trex_cfg.{key}.yaml")
        self.pid_path, self.log_path = base + ".pid", base + ".log"
        self.prefix = dpdk_prefix(testbed)
        self.source = source or testbed
        """The testbed file (for messages and the config's header)."""
        self.scope = listen_scope(node)
        """Where the server listens (:func:`listen_scope`)."""
        self.runtime_path = posixpath.join(runtime_dir, self.prefix)
        """This server's DPDK runtime directory (removed once it has stopped)."""
        self.bird_dir = bird_dir
        """TRex's BIRD directory (removed when empty and no other server of this release
        runs)."""

    def config_text(self) -> str:
        interfaces = self.opt.interfaces or (
            list(self.ports) if self.kernel_ports
            else [read_pci(self.node, p) for p in self.ports])
        extra = {"low_end_core": self.cpu} if self.opt.low_end and self.cpu is not None else {}
        return config_header(self.testbed, self.source, self.scope) + render_trex_cfg(
            interfaces, cores=self.opt.cores, low_end=self.opt.low_end, prefix=self.prefix,
            zmq_rpc_port=self.opt.sync_port, zmq_pub_port=self.opt.async_port, **extra)

    def _release_untrusted(self) -> str | None:
        """Why root may not run or signal what the release holds (None: it may): on this
        host the whole release must pass the read gate (another user who can change it
        would choose what root runs, or which process group it kills through the pid
        file); a release on another host is that host's."""
        from srperf.transports.netns import NetnsTransport

        if not isinstance(self.node, NetnsTransport):
            return None
        from srperf.safety import programs

        try:
            programs.check_trex_release(self.source, self.opt.release or "")
        except ConfigError as exc:
            return str(exc)
        return None

    def pid(self) -> int | None:
        """The server's PID (its process group) if it runs, else None (also when the
        release on this host is not trusted: its pid file is then not believed)."""
        why = self._release_untrusted()
        if why:
            log.warning("not reading the TRex pid file: %s", why)
            return None
        r = self.node.run(["cat", self.pid_path], timeout=15.0)
        if not r.ok or not r.stdout.strip().isdigit():
            return None
        pid = int(r.stdout.strip())
        return pid if self.node.run(["kill", "-0", str(pid)], timeout=15.0).ok else None

    def start(self) -> bool:
        """Start the server unless it runs; True when this call started it.  A release on
        this host that the read gate does not trust is refused (ConfigError, exit 2)."""
        from srperf.safety import programs
        from srperf.transports.netns import NetnsTransport

        if isinstance(self.node, NetnsTransport):
            # Always, also when the release is missing now (its parent must then be
            # trusted): one another user creates after this check would be run by root.
            programs.check_trex_release(self.source, self.opt.release or "")
        if self.pid() is not None:
            log.info("TRex server of testbed %s already running on %s", self.testbed,
                     self.node.where)
            return False
        binary = posixpath.join(self.opt.release or "", "t-rex-64")
        if not self.node.run(["test", "-x", binary], timeout=15.0).ok:
            raise GeneratorError(f"tester.options.release = {self.opt.release!r}: no "
                                 f"executable t-rex-64 there on {self.node.where}")
        self.check_ports()
        if self._listening():
            raise GeneratorError(
                f"TRex RPC port {self.opt.sync_port} on {self.node.where} is already in use "
                f"({self._holders()}); testbed {self.testbed} does not share another "
                "testbed's server: give it other tester.options.sync_port/async_port, or "
                "stop that server")
        if self._listening(self.opt.async_port):
            raise GeneratorError(
                f"tester.options.async_port = {self.opt.async_port}: that port on "
                f"{self.node.where} is already in use, and TRex's publisher needs it: give "
                "this testbed another async_port")
        self.node.check(["tee", self.cfg_path], input_text=self.config_text(), timeout=15.0)
        flags = "--hdrh" if self.opt.hdrh else ""
        self.node.check(["bash", "-c", _START, "trex", self.opt.release or "", self.cfg_path,
                         self.log_path, flags, self.pid_path], timeout=30.0)
        deadline = time.monotonic() + self.ready_s
        while time.monotonic() < deadline:
            if self.pid() is None:
                raise GeneratorError(f"TRex server on {self.node.where} exited at start: "
                                     f"{self._log_tail()}")
            if self._listening():
                log.info("TRex server up on %s (port %d)", self.node.where,
                         self.opt.sync_port)
                return True
            time.sleep(0.5)
        self.stop()
        raise GeneratorError(f"TRex server on {self.node.where} did not listen on port "
                             f"{self.opt.sync_port} within {self.ready_s:.0f} s: "
                             f"{self._log_tail()}")

    def stop(self) -> bool:
        """End the server's process group and remove what it leaves on the tester host
        (:meth:`remove_leftovers`); True when one was running."""
        pid = self.pid()
        if pid is None:
            self.node.run(["rm", "-f", self.pid_path], timeout=15.0)
            self.remove_leftovers()
            return False
        self.node.run(["kill", "-TERM", "--", f"-{pid}"], timeout=15.0)
        for _ in range(40):
            if not self.node.run(["kill", "-0", str(pid)], timeout=15.0).ok:
                break
            time.sleep(0.25)
        else:
            self.node.run(["kill", "-KILL", "--", f"-{pid}"], timeout=15.0)
            time.sleep(0.25)
        self.node.run(["rm", "-f", self.pid_path], timeout=15.0)
        self.remove_leftovers()
        return True

    def remove_leftovers(self) -> None:
        """Remove what a stopped server of this testbed leaves: its DPDK runtime
        directory (``/var/run/dpdk/srperf-<testbed>``: its own by the file prefix) and,
        when no other srperf server of this release still runs, TRex's BIRD directory
        if it is empty.  Never while this testbed's server runs."""
        if self.pid() is not None:
            return
        if posixpath.basename(self.runtime_path) == self.prefix:   # never a parent
            r = self.node.run(["rm", "-rf", "--one-file-system", "--", self.runtime_path],
                              timeout=15.0)
            if not r.ok:
                log.warning("TRex of testbed %s: could not remove %s on %s: %s",
                            self.testbed, self.runtime_path, self.node.where,
                            r.stderr.strip())
        if not self._others_running():
            self.node.run(["rmdir", "--", self.bird_dir], timeout=15.0)   # only if empty

    def _others_running(self) -> list[str]:
        """The other testbeds whose srperf-managed server runs from this release."""
        r = self.node.run(["bash", "-c", 'for f in "$1"/srperf_trex.*.pid; do '
                           '[ -e "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null && '
                           'echo "${f##*/}"; done; true', "holders",
                           self.opt.release or ""], timeout=15.0)
        return [name[len("srperf_trex."):-len(".pid")] for name in r.stdout.split()
                if name != posixpath.basename(self.pid_path)]

    def check_ports(self) -> None:
        """Refuse (ConfigError naming this testbed's key and port) a port that the config
        of another testbed's server from this release, listening in the same place, uses."""
        clashes = port_clashes(self.testbed, self.scope,
                               {key: getattr(self.opt, key) for key, _ in PORT_KEYS},
                               self._other_configs())
        if clashes:
            raise clashes[0].error(self.source, self.scope)

    def _other_configs(self) -> dict[str, str]:
        """The texts of the configs srperf wrote in the release (but this testbed's), by
        path."""
        r = self.node.run(["bash", "-c", 'for f in "$1"/' + CONFIG_GLOB + '; do '
                           '[ -f "$f" ] && printf "\\n==> %s <==\\n" "$f" && cat "$f"; '
                           'done; true', "configs", self.opt.release or ""], timeout=15.0)
        parts = re.split(r"\n==> (.+) <==\n", "\n" + r.stdout)
        return {path: text for path, text in zip(parts[1::2], parts[2::2])
                if path != self.cfg_path}

    def _listening(self, port: int | None = None) -> bool:
        port = self.opt.sync_port if port is None else port
        r = self.node.run(["ss", "-Hltn", f"sport = :{port}"], timeout=15.0)
        return r.ok and bool(r.stdout.strip())

    def _holders(self) -> str:
        """Who holds the RPC port: the other testbeds whose srperf-managed server runs
        from this release (their PID files), else 'not a server srperf started here'."""
        others = self._others_running()
        if others:
            return "by the TRex server of testbed " + ", ".join(others)
        return "not by a TRex server srperf started from this release"

    def _log_tail(self) -> str:
        r = self.node.run(["tail", "-n", "5", self.log_path], timeout=15.0)
        return " | ".join(r.stdout.split("\n")).strip(" |") or "no output"


def managed_server(tb: TestbedConfig, tester: Transport, *, kernel_ports: bool = False,
                   cpu: int | None = None) -> TrexServer | None:
    """The TRex server srperf starts and stops for testbed ``tb`` on the tester host
    reached by ``tester``: only with ``tester.driver: trex`` and a
    ``tester.options.release`` (None otherwise: nobody's, or the user's own server)."""
    if tb.tester.driver != "trex" or not tb.tester.options.get("release"):
        return None
    return TrexServer(tester, TrexOptions(**tb.tester.options), tb.name,
                      ports=(tb.tester.tx.name, tb.tester.rx.name),
                      kernel_ports=kernel_ports, cpu=cpu, source=tb.source)


__all__ = ["CONFIG_GLOB", "DPDK_RUNTIME", "PORT_KEYS", "PortClash", "TREX_BIRD_DIR",
           "TrexServer", "config_header",
           "dpdk_prefix", "file_key", "listen_scope", "managed_server", "port_clashes"]
