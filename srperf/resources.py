"""Find the files srperf ships: CFG scripts, experiments, testbeds, C sources."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

DEFAULT_TESTBED = "virtual"
"""The testbed a command uses when neither it nor the experiment names one (a name
:func:`find_config` resolves; re-exported by :mod:`srperf.config.loader`)."""


def _dir(package: str) -> Path:
    return Path(str(resources.files(package)))


def cfg_script(forwarder: str) -> Path:
    """Path of ``cfg_scripts/<forwarder>.sh``."""
    return _dir("srperf.data.cfg_scripts") / f"{forwarder}.sh"


def cfg_contract() -> Path:
    """Path of ``cfg_scripts/contract.bash``, which every CFG script sources."""
    return _dir("srperf.data.cfg_scripts") / "contract.bash"


def experiments_dir() -> Path:
    return _dir("srperf.data.experiments")


def testbed_dir() -> Path:
    return _dir("srperf.data.testbed")


def cloudlab_profile() -> Path:
    """Path of the CloudLab profile script (``testbed/cloudlab/profile.py``)."""
    return testbed_dir() / "cloudlab" / "profile.py"


def ebpf_dir() -> Path:
    """Directory of the eBPF dataplane's C sources."""
    return testbed_dir() / "dataplanes" / "ebpf"


def xdp_dir() -> Path:
    """Directory of the XDP fast path's C sources (testbed/dataplanes/xdp)."""
    return testbed_dir() / "dataplanes" / "xdp"


def pm_dir() -> Path:
    """Directory of the per-flow loss monitor's eBPF C sources (PF-PLM)."""
    return testbed_dir() / "dataplanes" / "pm"


def generator_dir() -> Path:
    """Directory of the local traffic generator's C sources."""
    return _dir("srperf.drivers") / "linux_gen"


def shipped_names(kind: str) -> list[str]:
    """The names of the shipped ``kind`` files (``experiment`` or ``testbed``), sorted:
    what ``srperf run NAME`` / ``--testbed NAME`` take besides a path."""
    base = experiments_dir() if kind == "experiment" else testbed_dir()
    return sorted(p.stem for p in base.glob("*.yaml") if p.is_file())


def find_config(name: str, kind: str) -> Path:
    """Resolve a config name: a path as given, else a shipped file by name.

    ``kind`` is ``"experiment"`` or ``"testbed"``; ``quick`` finds
    ``experiments/quick.yaml``.
    A shipped name is a file: ``kernel-src`` is ``testbed/kernel-src.yaml``, never the
    directory of that name beside it (the kernel tree the testbed builds from).
    """
    path = Path(name)
    if path.is_file():
        return path
    base = experiments_dir() if kind == "experiment" else testbed_dir()
    for candidate in (base / name, base / f"{name}.yaml", base / path.name):
        if candidate.is_file():
            return candidate
    return path
