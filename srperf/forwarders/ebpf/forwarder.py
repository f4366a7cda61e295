"""srperf's own eBPF dataplane: SR proxies for SR-unaware VNFs.

Sources: ``testbed/dataplanes/ebpf`` (tc programs built with clang,
:mod:`srperf.forwarders.ebpf.build`); script: ``cfg_scripts/ebpf.sh``;
counters: :mod:`srperf.forwarders.ebpf.counters`.  Offers End.AD (dynamic,
with SRNK's ``age``), End.AS (static), End.AM (masquerading), a caching proxy
and SRNK's End baseline, each in front of legacy VNFs
(:class:`srperf.testbeds.vnf.VnfSet`).

The objects are built on this host and pushed with their sources to the SUT's
private work directory (the script rebuilds there only when an object is
missing), so a remote SUT needs ``tc`` and ``bpftool`` but no compiler.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Any, Mapping

from srperf.config.model import TestbedConfig
from srperf.config.settings import Settings, setting
from srperf.forwarders.base import Forwarder, Prepared
from srperf.forwarders.common_env import addressing_env
from srperf.resources import ebpf_dir
from srperf.transports.base import Transport

SOURCES = ("srproxy.c", "srproxy.h", "vnf_drop.c", "Makefile")
"""Files of testbed/dataplanes/ebpf pushed to the SUT beside the objects."""


@dataclass(frozen=True)
class ProxySettings(Settings):
    """Knobs of the eBPF proxies (passed to ebpf.sh as SRPERF_* variables)."""

    age_s: float = setting(1.0, "End.AD: minimum time between two rewrites of a VNF's "
                           "stored header (SRNK's age; 0 = rewrite on every packet)",
                           unit="s", schema={"type": "number", "minimum": 0, "maximum": 3600})
    cache_entries: int = setting(65536, "caching proxy: size of the LRU header cache",
                                 unit="entries", schema={"type": "integer", "minimum": 1,
                                                         "maximum": 16777216})
    cache_miss: str = setting("drop", "caching proxy: a packet from the VNF with no cached "
                              "header is dropped or passed on bare",
                              schema={"enum": ["drop", "pass"]})
    cache_stale_s: float = setting(0.001, "caching proxy: an entry older than this is stale "
                                   "(its packet was lost in the VNF): a packet with the same "
                                   "key replaces it instead of being dropped (0 = never "
                                   "stale, the caching-proxy paper)", unit="s",
                                   schema={"type": "number", "minimum": 0, "maximum": 3600})
    cache_nat_key: bool = setting(False, "caching proxy, a VNF that source-NATs: leave out "
                                  "of the key the inner source address and port of packets "
                                  "from the in-port, the destination of the others (answers "
                                  "the VNF de-NATs)",
                                  schema={"type": "boolean"})
    fib: bool = setting(True, "return path through bpf_fib_lookup + redirect (false: the "
                        "kernel stack)", schema={"type": "boolean"})

    def __post_init__(self) -> None:
        if self.age_s < 0:
            raise ValueError(f"age_s {self.age_s}: must be >= 0")
        if self.cache_entries < 1:
            raise ValueError(f"cache_entries {self.cache_entries}: must be >= 1")
        if self.cache_stale_s < 0:
            raise ValueError(f"cache_stale_s {self.cache_stale_s}: must be >= 0")
        if self.cache_miss not in ("drop", "pass"):
            raise ValueError(f"cache_miss {self.cache_miss!r}: must be drop or pass")


DEFAULT_SETTINGS = ProxySettings()


@dataclass(frozen=True)
class EbpfOptions(Settings):
    """Experiment ``options`` of the eBPF forwarder: its legacy VNFs and proxy knobs."""

    vnf_count: int = setting(1, "legacy VNF namespaces behind the SUT", unit="VNFs",
                             schema={"type": "integer", "minimum": 1, "maximum": 256})
    vnf_mode: str = setting("forward", "what every VNF does with the inner packets",
                            schema={"enum": ["forward", "drop", "sink", "delay", "snat"]})
    proxy: ProxySettings = setting(ProxySettings, "the proxies' knobs")


def proxy_env(tb: TestbedConfig, settings: ProxySettings = DEFAULT_SETTINGS) -> dict[str, str]:
    """The SRPERF_* variables ebpf.sh reads besides the addressing ones."""
    a = tb.addressing
    return {
        "SRPERF_VNF_IF_PREFIX": a.vnf_if_prefix,
        "SRPERF_VNF_SID_BASE": a.vnf_sid_base,
        "SRPERF_VNF_MAC_PREFIX": a.vnf_mac_prefix,
        "SRPERF_VNF_IP6": a.vnf_ip6,
        "SRPERF_AD_AGE": f"{settings.age_s:g}",
        "SRPERF_AS_SRC": a.tester_tx_ip6,
        "SRPERF_AS_SEGS": a.sid_next,
        "SRPERF_CACHE_SIZE": str(settings.cache_entries),
        "SRPERF_CACHE_MISS": settings.cache_miss,
        "SRPERF_CACHE_NAT_KEY": "1" if settings.cache_nat_key else "0",
        "SRPERF_CACHE_STALE": f"{settings.cache_stale_s:g}",
        "SRPERF_EBPF_FIB": "1" if settings.fib else "0",
    }


class EbpfForwarder(Forwarder):
    """srperf's eBPF SR-proxy dataplane (tc programs)."""

    name = "ebpf"
    script = "ebpf.sh"
    description = "srperf's eBPF SR proxies (tc, clang-built) in front of legacy VNFs"
    behaviors = ("end_ad", "end_ad_v4", "end_as", "end_am", "end_cache", "end_cache_v4",
                 "end_baseline")
    options = EbpfOptions
    runs_in_netns = True
    version_commands = {"iproute2": ("ip", "-V"), "bpftool": ("bpftool", "version"),
                        "clang": ("clang", "--version")}
    drop_counters = {
        "hop_limit": ("in_hop_limit",),
        "segments_left": ("in_bad",),
        "bad_srh": ("in_bad",),
        "no_srh": ("in_bad",),
        "upper_layer": ("in_bad", "in_l2_unsupported"),
        "inner_hop_limit": ("from_hop_limit",),
        "duplicate": ("cache_dup",),
    }

    def conformance_options(self, options: Settings) -> Settings:
        """End.AD relearns the header on every packet (age 0): the matrix sends packets
        with different SRHs one after the other, and checks the behavior, not SRNK's
        limit on how often it learns."""
        import dataclasses

        assert isinstance(options, EbpfOptions)
        return dataclasses.replace(options, proxy=dataclasses.replace(options.proxy,
                                                                      age_s=0.0))

    def why_not(self, behavior: str) -> str:
        if not self.offers(behavior):
            return "srperf's eBPF dataplane implements the SR proxies only (forwarder linux)"
        return ""

    def env(self, tb: TestbedConfig, options: Settings, prepared: Prepared) -> dict[str, str]:
        assert isinstance(options, EbpfOptions)
        return {**addressing_env(tb), **proxy_env(tb, options.proxy), **prepared.env}

    def vnfs(self, options: Settings) -> tuple[int, str]:
        assert isinstance(options, EbpfOptions)
        return options.vnf_count, options.vnf_mode

    def prepare(self, sut: Transport, options: Settings) -> Prepared:
        """Build the objects here, push them and the sources to the SUT."""
        from srperf.forwarders.ebpf.build import build_all

        assert isinstance(options, EbpfOptions)
        objects = build_all(cache_entries=(options.proxy.cache_entries,))
        pushed = [sut.push(path) for path in objects]
        pushed += [sut.push(ebpf_dir() / name) for name in SOURCES]
        where = posixpath.dirname(pushed[0])
        return Prepared(env={"SRPERF_BUILD_DIR": where, "SRPERF_EBPF_DIR": where})

    def counters(self, sut: Transport, script: str,
                 env: Mapping[str, str]) -> dict[str, int] | None:
        from srperf.forwarders.ebpf.counters import CountersError, read_with

        def runner(argv: list[str]) -> str:
            res = sut.run(argv, env=env, timeout=30.0)
            if not res.ok:
                raise CountersError(f"ebpf.sh counters on {sut.where} failed: "
                                    f"{(res.stderr or res.stdout).strip()}")
            return res.stdout

        return read_with(runner, script)

    def profile_sources(self, sut: Transport, env: Mapping[str, str]) -> list[Any]:
        """Each attached program's run time (the kernel's BPF statistics)."""
        from srperf.profile.bpf import BpfPrograms

        return [BpfPrograms(sut)]


FORWARDER = EbpfForwarder()

__all__ = ["EbpfForwarder", "EbpfOptions", "ProxySettings", "DEFAULT_SETTINGS", "proxy_env",
           "FORWARDER"]
