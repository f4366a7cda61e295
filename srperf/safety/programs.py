"""Programs srperf runs as root from a path a testbed file names: the read gate for them.

A virtual testbed's ``sut.vpp_binary`` (and the ``vppctl`` beside it), a local tester's
TRex release (``tester.options.release``: its ``t-rex-64`` script, the libraries and
scripts it loads, and the pid file whose process group srperf signals) and the TRex
client srperf imports (``tester.options.client_path``: Python put first on the
client process's ``sys.path``) are run by root, and so is an experiment's VPP
``options.vppctl`` on a virtual testbed (the CFG script runs it in the SUT namespace).
Each must be trusted by :mod:`srperf.safety.read_gate` as any kernel tree or image is:
root's or the invoking user's along the whole path, writable by no one else, of the
expected kind; a TRex release as a whole tree.  Checked at ``validate`` (and the start of
a run, :func:`srperf.measure.preflight.check_local`) and again just before the program
starts.  A violation is an :class:`~srperf.safety.read_gate.Untrusted` (exit 2) naming
the testbed file, the key and the path.
"""

from __future__ import annotations

import os
from pathlib import Path

from srperf.safety import read_gate


def _tree_or_parent(file: str, key: str, tree: str) -> None:
    """``tree`` as a trusted tree; when it is missing, its nearest existing parent as a
    trusted directory, so that no other user can make it between this check and its use."""
    path = Path(os.path.abspath(tree))
    there = path
    while not os.path.lexists(there) and there != there.parent:
        there = there.parent
    if there == path:
        read_gate.trusted_tree(path, file, key)
    else:
        read_gate.trusted_dir(there, file, key)


def check_trex_release(file: str, release: str) -> None:
    """The TRex release directory ``release`` (on this host) as a trusted tree; when it
    is missing (starting it then fails), its nearest existing parent as a trusted
    directory: a release another user could create there would be run by root."""
    _tree_or_parent(file, "tester.options.release", release)


def check_trex_client(file: str, client_path: str) -> None:
    """The TRex client directory whose Python root imports, as a trusted tree; when it
    is missing (the import then fails), its nearest existing parent as a trusted
    directory, so that no other user can make it in between."""
    _tree_or_parent(file, "tester.options.client_path", client_path)


def check_program(file: str, key: str, program: str) -> None:
    """A program named by path (``/`` in it) that root runs on this host, as a trusted
    file; a bare name is found on root's own ``PATH``."""
    if "/" in program:
        read_gate.trusted_file(program, file, key)


def check_vpp(file: str, binary: str) -> None:
    """The VPP binary, and the ``vppctl`` beside it when there, as trusted files."""
    read_gate.trusted_file(binary, file, "sut.vpp_binary")
    vppctl = Path(binary).parent / "vppctl"
    if os.path.lexists(vppctl):
        read_gate.trusted_file(vppctl, file, "sut.vpp_binary")


__all__ = ["check_program", "check_trex_client", "check_trex_release", "check_vpp"]
