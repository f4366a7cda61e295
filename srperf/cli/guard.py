"""What the command line does around every command: no traceback reaches the user.

Bad input is a :class:`ConfigError` (exit 2, file, key and value named); an
error srperf expects is one line (exit 1); anything else is an internal error:
one line naming the exception and the log file that holds its traceback (exit 1).
The log file is made (O_EXCL, 0600, by :mod:`srperf.safety.safe_paths`) under
``$SRPERF_LOG_DIR`` (default ``~/.cache/srperf/errors``, mode 0700), never at a
predictable shared path.
"""

from __future__ import annotations

import argparse
import os
import time
import traceback
from pathlib import Path

EXIT_OK, EXIT_FAILED, EXIT_CONFIG, EXIT_NOTHING_MEASURED = 0, 1, 2, 3

VALIDATE_EPILOG = """What is checked on this host: the files; for a testbed, that what runs
here exists (tester.options.release holds an executable t-rex-64, sut.vpp_binary is an
executable file, tester.cpu and a virtual SUT's sut.cpu are CPUs of this host) and
an SSH SUT's host key is known; for a nightly suite, its testbed and every
experiment against it.  What only a remote host can tell (an SSH SUT's CPU, a
release on a TRex host over SSH) is checked by 'srperf testbed status'.

exit status:
  0  every file is valid (and, for an experiment, fits its testbed)
  1  srperf itself failed (an internal error; the message names the log file)
  2  a file is invalid: the message names the file, the key and the value"""

MAIN_EPILOG = """exit status:
  0    success
  1    the run failed, or srperf itself failed (the message names the log file)
  2    bad input: the message names the file (or option), the key and the value
  3    nothing measured: the run (or nightly job) ended without one figure (every
       search generator-limited, undecided or below the minimum rate, every behavior
       unsupported or failed); the message names each behavior's status
  130  interrupted (SIGINT); 143: terminated (SIGTERM); the SUT is cleaned"""

RUN_EPILOG = """A run is stored as running, then finished, interrupted (SIGINT or SIGTERM: the
signal is stored) or failed (the reason is stored); 'srperf runs' lists them and
shows a running run whose process is gone as dead.  'srperf run --resume RUN_ID'
continues a run that did not finish: the searches that ended are kept.

exit status:
  0    at least one figure was measured, and every behavior was measured or reported
       unsupported
  1    a behavior failed verification or its CFG step; the run failed (e.g. the disk
       holding the results is full: the message names it); or an internal error
  2    bad input: the message names the file (or option), the key and the value
  3    nothing measured: no search of the run gave a figure (every one ended
       generator_limited, undecided or below_min, or every behavior was unsupported
       or failed); the message names each behavior's status; such a run is never a
       nightly baseline
  130  interrupted (SIGINT); 143: terminated (SIGTERM); the SUT is cleaned"""


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions and epilogs laid out by hand (several lines) kept as written, one-line
    ones wrapped; an option's default appended to its help when it has one worth
    showing and the help does not state it already (choices are shown by argparse
    itself, as ``{a,b}``)."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if "\n" in text.strip():
            return super()._fill_text(text, width, indent)
        return argparse.HelpFormatter._fill_text(self, text, width, indent)

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        if "default" in text.lower() or default in (None, False, [], argparse.SUPPRESS) \
                or isinstance(default, bool):
            return text
        if action.option_strings or action.nargs in (argparse.OPTIONAL, argparse.ZERO_OR_MORE):
            return f"{text} (default: %(default)s)"
        return text


def subparsers(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.ArgumentParser]]:
    """Every (sub)command's parser, with its command path: ``[("srperf", p), ("srperf
    run", ...), ...]``."""
    found = [(parser.prog, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                found.extend(subparsers(sub))
    return found


def log_dir() -> Path:
    """Where internal errors are logged (made private on first use)."""
    from srperf.safety import private_dirs

    base = os.environ.get("SRPERF_LOG_DIR")
    path = Path(base) if base else private_dirs.cache_home() / "srperf" / "errors"
    return private_dirs.ensure_private_dir(path, "SRPERF_LOG_DIR", "<environment>")


def write_error_log(exc: BaseException, argv: list[str]) -> Path | None:
    """The traceback of ``exc`` in a new private file; None when no file can be made."""
    from srperf.errors import ConfigError
    from srperf.safety import safe_paths
    from srperf.safety.redact import redact, scan_invocation

    scan_invocation(argv)
    try:
        return safe_paths.new_private_file(
            log_dir(), time.strftime("srperf-%Y%m%dT%H%M%S-"), ".log",
            redact(f"srperf {' '.join(argv)}\n\n")
            + redact("".join(traceback.format_exception(exc))))
    except (OSError, safe_paths.UnsafePath, ConfigError):
        return None


__all__ = ["EXIT_OK", "EXIT_FAILED", "EXIT_CONFIG", "EXIT_NOTHING_MEASURED", "HelpFormatter",
           "MAIN_EPILOG", "RUN_EPILOG", "VALIDATE_EPILOG", "log_dir", "subparsers",
           "write_error_log"]
