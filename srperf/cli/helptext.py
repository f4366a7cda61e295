"""What each command's ``--help`` says besides its options: what it does, its exit status.

A command whose parser sets its own description or epilog keeps it; one that sets
neither (a command added later, say) gets its one-line help as description and
:data:`EXIT_STATUS` as epilog, so no ``--help`` ends without its exit codes.
Everything here is read by users: no module paths, no markup.
"""

from __future__ import annotations

import argparse

from srperf.cli.guard import RUN_EPILOG, HelpFormatter, subparsers
from srperf.resources import shipped_names

EXIT_STATUS = """exit status:
  0    success
  1    srperf failed: the message says why (an internal error names its log file)
  2    bad input: the message names the file (or option), the key and the value
  130  interrupted (SIGINT); 143: terminated (SIGTERM)"""

RESULTS_EXIT = """exit status:
  0    done
  1    srperf failed: the message says why (an internal error names its log file)
  2    bad input: no results store at --results / --db, no such run, or a prefix
       that matches several runs (the message names it)"""

DESCRIPTIONS: dict[str, str] = {
    "run": "Run an experiment: for each packet size, repetition and behavior (interleaved), "
           "configure the SUT, verify the behavior on a few real packets, search its "
           "PDR/NDR and store every trial as it ends; print a summary table at the end. "
           "EXPERIMENT is a file or the name of a shipped one ("
           + ", ".join(shipped_names("experiment")) + ").",
    "testbed": "Bring a testbed up, take it down, show its state, or trust its SSH "
               "nodes' host keys. A virtual testbed is two network namespaces on this host "
               "joined by veth pairs (needs root); an ssh testbed is checked: the SUT "
               "answers and has its ports. 'up' and 'down' take the testbed's lock: a "
               "testbed a run is using is refused (exit 2, naming the run).",
    "behaviors": "List the SRv6 behaviors srperf knows (name, display name, kind) and the "
                 "forwarders that offer each; for a forwarder that does not, why not.",
    "build": "Compile the traffic generator (srgen), the tester's XDP sink, the eBPF "
             "dataplane, the SRv6Pipes relay and the user-space delay line into the build "
             "directory ($SRPERF_BUILD_DIR, default "
             "~/.cache/srperf/build); a program is rebuilt only when a source is newer. "
             "The set-up ('make install', 'make run', 'make test') does this already.",
    "runs": "List the runs of a results store, newest first: id, experiment, testbed, "
            "status (running, finished, interrupted, failed; dead when the process of a "
            "running run is gone), searches ended/planned, trials, start and reason.",
    "report": "Write one self-contained HTML report of one or more runs (per behavior "
              "mean, CV and CI95, every search's trials and each run's environment) and, "
              "with --markdown, a Markdown summary. Several runs are shown side by side.",
    "compare": "Compare the current run with a baseline run, per behavior and packet size: "
               "the change of the mean PDR with its 95 % interval. A change is a "
               "regression or an improvement only when the whole interval lies beyond the "
               "threshold, no change when it lies within it, inconclusive otherwise.",
    "export": "Export runs (runs, searches, trials, outcomes and summary) as CSV files, "
              "Parquet files or one JSON file.",
    "nightly": "Run every experiment of a nightly suite file, compare each with the last "
               "good run of the same experiment and testbed (only the suite's own nightly "
               "runs count: a plain 'srperf run' is never a baseline), and write "
               "HTML/Markdown reports and a JUnit XML file.",
    "provision": "Write the CloudLab profile (TARGET 'cloudlab'), or install and tune a "
                 "testbed's nodes over SSH (TARGET a testbed file or name): the forwarder's "
                 "tools, offloads, RX queues, IRQ affinity and CPU governor on the SUT, the "
                 "pinned TRex release on the tester. Each step is reported as done, "
                 "already there, not applicable or failed; running it again changes "
                 "nothing. --dry-run prints the commands and runs none; --check only "
                 "reads the nodes back.",
}

EPILOGS: dict[str, str] = {
    "pdr": RUN_EPILOG,
    "testbed": """exit status:
  0    done ('status' is 0 whether the testbed is up or down)
  1    srperf failed: e.g. an SSH node refused the connection (the message names it)
  2    bad input, or the testbed is held by a run or was made with other settings
       (the message names the run or the settings)
  130  interrupted (SIGINT); 143: terminated (SIGTERM)""",
    "behaviors": EXIT_STATUS,
    "build": """exit status:
  0    everything compiled
  1    a compiler failed (its output is shown) or a tool is missing
  130  interrupted (SIGINT); 143: terminated (SIGTERM)""",
    "runs": RESULTS_EXIT,
    "report": RESULTS_EXIT,
    "export": RESULTS_EXIT,
    "compare": """exit status:
  0    no behavior regressed (no change, improvement or inconclusive)
  1    a behavior regressed beyond --threshold, or srperf failed
  2    bad input: no results store, no such run, or a bad option value""",
    "nightly": """exit status:
  0    every experiment ran and none regressed
  1    an experiment regressed or could not run (the JUnit file says which)
  2    bad input: the suite file (or an experiment or testbed it names) is invalid
  130  interrupted (SIGINT); 143: terminated (SIGTERM)""",
    "provision": """exit status:
  0    every step done or already there (--check: nothing differs)
  1    a step failed (--check: something differs); the command and its output are shown
  2    bad input, or the testbed is held by a run (the message names it)
  130  interrupted (SIGINT); 143: terminated (SIGTERM)""",
    "conform": """exit status:
  0    no case failed (pass, finding or n/a)
  1    a case failed, or srperf failed
  2    bad input: the message names the file (or option), the key and the value
  130  interrupted (SIGINT); 143: terminated (SIGTERM); the SUT is cleaned""",
}


def _help_lines(parser: argparse.ArgumentParser) -> dict[str, str]:
    """Subcommand name -> its one-line help in ``parser``'s command list."""
    lines: dict[str, str] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                lines[choice.dest] = choice.help or ""
    return lines


def complete(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Give every subcommand of ``parser`` (one level) a description and an exit-status
    epilog: its own if it has them, else from the tables here, else its help line and
    :data:`EXIT_STATUS`."""
    lines = _help_lines(parser)
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        for name, sub in action.choices.items():
            # The tables are keyed by top-level command: ``kernel build`` is not ``build``.
            top = len(sub.prog.split()) == 2
            text = (DESCRIPTIONS.get(name) if top else None) or lines.get(name, "")
            if sub.description is None and text:
                sub.description = text[:1].upper() + text[1:] + ("" if text.endswith(".")
                                                                  else ".")
            if sub.epilog is None:
                sub.epilog = EPILOGS.get(name, EXIT_STATUS) if top else EXIT_STATUS
    return parser


def use_help_formatter(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Give every (sub)command :class:`HelpFormatter`, a description and its exit status
    (:func:`complete`)."""
    for _, p in subparsers(parser):
        p.formatter_class = HelpFormatter
        complete(p)
    return parser


__all__ = ["DESCRIPTIONS", "EPILOGS", "EXIT_STATUS", "complete", "use_help_formatter"]
