"""``SRPERF_*`` variables every forwarder's script may read: the testbed's addressing.

The names are the CFG-script contract's (cfg_scripts/README.md); each forwarder
module adds its own (:meth:`srperf.forwarders.base.Forwarder.env`).
"""

from __future__ import annotations

from srperf.behaviors.policies import b6_segs, encap_segs, insert_segs
from srperf.config.model import TestbedConfig

VRF_DEV = "srperf-vrf"


def addressing_env(tb: TestbedConfig) -> dict[str, str]:
    """The testbed's ports, addresses, SIDs and policies as ``SRPERF_*`` variables."""
    a = tb.addressing
    env = {
        "SRPERF_IN_IF": tb.sut.in_port.name,
        "SRPERF_OUT_IF": tb.sut.out_port.name,
        "SRPERF_IN_MAC": tb.sut.in_port.mac,
        "SRPERF_OUT_MAC": tb.sut.out_port.mac,
        "SRPERF_TESTER_TX_MAC": tb.tester.tx.mac,
        "SRPERF_TESTER_RX_MAC": tb.tester.rx.mac,
        "SRPERF_TESTER_TX_IP6": a.tester_tx_ip6,
        "SRPERF_TESTER_RX_IP6": a.tester_rx_ip6,
        "SRPERF_TESTER_TX_IP4": a.tester_tx_ip4,
        "SRPERF_TESTER_RX_IP4": a.tester_rx_ip4,
        "SRPERF_SUT_IN_IP6": a.sut_in_ip6,
        "SRPERF_SUT_OUT_IP6": a.sut_out_ip6,
        "SRPERF_SUT_IN_IP4": a.sut_in_ip4,
        "SRPERF_SUT_OUT_IP4": a.sut_out_ip4,
        "SRPERF_LINK_PREFIX_LEN6": str(a.link_prefix_len6),
        "SRPERF_LINK_PREFIX_LEN4": str(a.link_prefix_len4),
        "SRPERF_SRC6": a.src6,
        "SRPERF_DST6": a.dst6,
        "SRPERF_DST_PREFIX6": a.dst_prefix6,
        "SRPERF_SRC4": a.src4,
        "SRPERF_DST4": a.dst4,
        "SRPERF_DST_PREFIX4": a.dst_prefix4,
        "SRPERF_SID_SUT": a.sid_sut,
        "SRPERF_SID_NEXT": a.sid_next,
        "SRPERF_SID_LAST": a.sid_last,
        "SRPERF_SID_PREFIX": a.sid_prefix,
        "SRPERF_ENCAP_SEGS": ",".join(encap_segs(tb)),
        "SRPERF_INSERT_SEGS": ",".join(insert_segs(tb)),
        "SRPERF_B6_SEGS": ",".join(b6_segs(tb)),
        "SRPERF_TUNSRC": a.tunsrc,
        "SRPERF_TABLE": str(a.table),
        "SRPERF_VRF_DEV": VRF_DEV,
        "SRPERF_CSID_BLOCK": a.csid_block,
        "SRPERF_CSID_BLOCK_PREFIX": a.csid_block_prefix,
        "SRPERF_CSID_LBLEN": str(a.csid_lblen),
        "SRPERF_CSID_NFLEN": str(a.csid_nflen),
        "SRPERF_CSID_PREFIX": a.csid_prefix(a.csid_sut),
        "SRPERF_CSID_SID": a.csid_address(a.csid_sut),
        "SRPERF_CSID_NEXT_SID": a.csid_address(a.csid_next),
    }
    return env
