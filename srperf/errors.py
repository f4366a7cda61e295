"""Exceptions shared across srperf."""

from __future__ import annotations


class SrperfError(Exception):
    """Base class of every error srperf reports to the user."""


class ConfigError(SrperfError):
    """A configuration file is invalid.

    The message always names the file, the key path and the bad value (its text
    cut to :data:`VALUE_CHARS`, so that a whole file never lands in a message);
    ``value=ConfigError.SKIP`` when the problem is the file itself.
    """

    SKIP: object = object()
    VALUE_CHARS = 120
    label = "config error"
    """How the CLI introduces this error (exit 2 either way)."""

    def __init__(self, file: str, key: str, value: object, reason: str) -> None:
        self.file = file
        self.key = key
        self.value = value
        self.reason = reason
        if value is ConfigError.SKIP:
            where = f"{file}: {key}" if key else file
            super().__init__(f"{where}: {reason}")
            return
        from srperf.safety.redact import redact, redact_for_key

        # a secret is hidden whole, before the value is cut: by its key's name (a value
        # under a password-, token-, secret-like key) and by every registered secret
        text = redact(repr(redact_for_key(key, value)))
        if len(text) > self.VALUE_CHARS:
            text = text[:self.VALUE_CHARS - 3] + "..."
        super().__init__(f"{file}: {key or '<top level>'} = {text}: {reason}")


class UnsupportedBehavior(SrperfError):
    """The SUT cannot run a behavior (the reason comes from the SUT itself)."""

    def __init__(self, behavior: str, reason: str) -> None:
        self.behavior = behavior
        self.reason = reason
        super().__init__(f"{behavior}: unsupported on this SUT: {reason}")


class CfgError(SrperfError):
    """A CFG script function failed on the SUT."""


class VerificationError(SrperfError):
    """A behavior did not transform packets as specified."""


class TransportError(SrperfError):
    """A command could not be run on the SUT."""


class GeneratorError(SrperfError):
    """The traffic generator failed or cannot run here."""


class StoreError(SrperfError):
    """The results store cannot be written (a full disk, a lost database); the
    message names the store.  Rows written before stay readable."""

class SearchAborted(SrperfError):
    """One search could not go on (the generator failed again on a retried trial, a
    SUT command hung): that search is marked ``error`` with this reason and the run
    goes on to the next behavior."""
