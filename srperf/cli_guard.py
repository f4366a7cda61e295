"""What the command line does around every command: no traceback reaches the user.

Bad input is a :class:`ConfigError` (exit 2, file, key and value named); an
error srperf expects is one line (exit 1); anything else is an internal error:
one line naming the exception and the log file that holds its traceback (exit 1).
The log file is made with ``mkstemp`` under ``$SRPERF_LOG_DIR`` (default
``~/.cache/srperf/errors``, mode 0700), never at a predictable shared path.
"""

from __future__ import annotations

import os
import tempfile
import time
import traceback
from pathlib import Path

EXIT_OK, EXIT_FAILED, EXIT_CONFIG = 0, 1, 2

VALIDATE_EPILOG = """exit status:
  0  every file is valid (and, for an experiment, fits its testbed)
  1  srperf itself failed (an internal error; the message names the log file)
  2  a file is invalid: the message names the file, the key and the value"""

MAIN_EPILOG = """exit status:
  0    success
  1    the run failed, or srperf itself failed (the message names the log file)
  2    bad input: the message names the file (or option), the key and the value
  130  interrupted (SIGINT); 143: terminated (SIGTERM); the SUT is cleaned"""


def log_dir() -> Path:
    """Where internal errors are logged (made private on first use)."""
    base = os.environ.get("SRPERF_LOG_DIR")
    path = Path(base) if base else Path("~/.cache/srperf/errors").expanduser()
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path


def write_error_log(exc: BaseException, argv: list[str]) -> Path | None:
    """The traceback of ``exc`` in a new private file; None when no file can be made."""
    try:
        fd, name = tempfile.mkstemp(prefix=time.strftime("srperf-%Y%m%dT%H%M%S-"),
                                    suffix=".log", dir=log_dir())
    except OSError:
        return None
    with os.fdopen(fd, "w") as out:
        out.write(f"srperf {' '.join(argv)}\n\n")
        out.write("".join(traceback.format_exception(exc)))
    return Path(name)


__all__ = ["EXIT_OK", "EXIT_FAILED", "EXIT_CONFIG", "MAIN_EPILOG", "VALIDATE_EPILOG", "log_dir",
           "write_error_log"]
