"""Command-line values checked before anything is opened or started.

- A run named on the command line (``--resume RUN_ID``, ``report RUN``...) is an id
  as srperf makes them (``20261127-211433-0ffe88``), a unique part of one, or
  ``last``: an empty text would be the prefix of every run (``--resume ''`` resumed
  the store's only run) and a pattern (``*``, ``%``, ``?``) matches nothing
  srperf makes.
- ``conform`` needs a SUT that forwards real packets and a forwarder with packet
  behaviors: the simulated SUT is a model, ``pipes`` has functions (router,
  relay...), not packet behaviors; both are refused before a run is opened.
"""

from __future__ import annotations

import re

from srperf.errors import ConfigError

RUN_SPEC = re.compile(r"^[0-9A-Za-z][0-9A-Za-z-]{0,63}$")
"""A run id or a prefix of one (letters, digits, dashes; at most 64 characters)."""


def check_run_spec(flag: str, spec: str) -> str:
    """``spec`` when it can name one run; ConfigError naming ``flag`` otherwise."""
    if spec == "last":
        return spec
    if not isinstance(spec, str) or not spec.strip():
        raise ConfigError("<command line>", flag, spec,
                          "empty: name a run id, a unique part of one (its hex suffix), "
                          "or 'last' "
                          "(srperf runs lists them)")
    if not RUN_SPEC.match(spec):
        raise ConfigError("<command line>", flag, spec,
                          "not a run id: run ids are letters, digits and dashes "
                          "(e.g. 20261127-211433-0ffe88); give one, a unique part of one, or "
                          "'last' (no patterns)")
    return spec


def check_conform_forwarder(forwarder_name: str, file: str, flag: str) -> None:
    """Refuse ``conform`` for a forwarder without packet behaviors (``pipes``)."""
    from srperf.forwarders import registry as forwarders

    fwd = forwarders.get(forwarder_name)
    if not fwd.behaviors:
        what = (f"its behaviors are {', '.join(fwd.functions)}" if fwd.functions
                else "it offers none")
        raise ConfigError(file, flag, forwarder_name,
                          f"has no packet behavior to check ({what}); conform checks the "
                          "packet behaviors of "
                          + ", ".join(n for n in forwarders.names()
                                      if forwarders.get(n).behaviors))


def check_conform_testbed(source: str, kind: str, is_model: bool) -> None:
    """Refuse ``conform`` on a testbed whose SUT is a model (simulated)."""
    if is_model:
        raise ConfigError(source, "kind", kind,
                          "conform sends real packets through the SUT and compares what "
                          "comes out; the simulated SUT is a model that forwards none: use "
                          "a virtual or ssh testbed (--testbed virtual); no run was opened")


__all__ = ["RUN_SPEC", "check_conform_forwarder", "check_conform_testbed", "check_run_spec"]
