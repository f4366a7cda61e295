#!/usr/bin/env python3
"""Independent probe (stop 54, issue 44): play another local user (nobody) against every
surface srperf reads as root, and count what is refused cleanly and what is not.

Run as root: .venv/bin/python scripts/probe_read_gate.py [-k SUBSTRING] [-v]
Nothing here boots or builds a kernel: only validate, --dry-run, status/down and
commands that refuse before anything starts (no traffic).  Each case gets its own
directory under a private (0700) temporary directory, removed at the end.  Verdicts:
ok (refused with exit 2, or harmless), HIGH (root would run, boot, install or write
what nobody controls), hang, traceback, leaks content, raw error, accepted (other).
See docs/root-safety.md, "Independent probe (stop 54)".
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

BASE = Path(tempfile.mkdtemp(prefix="p4p-probe-"))   # root's, 0700: nobody plants nothing
NOBODY = 65534
SRPERF = str(Path(sys.executable).with_name("srperf"))
LEAK = "LEAKMARK-7f3a"
PWNED = BASE / "PWNED"
TIMEOUT = 20.0


def nob(path: Path) -> Path:
    os.lchown(path, NOBODY, NOBODY)
    return path


def mkdir(path: Path, mode: int = 0o755, owner: int = 0) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    os.chmod(path, mode)
    os.chown(path, owner, owner)
    return path


def write(path: Path, text: str, mode: int = 0o644, owner: int = 0) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    os.chmod(path, mode)
    os.chown(path, owner, owner)
    return path


def tree(top: Path) -> Path:
    mkdir(top)
    write(top / "Makefile", "all:\n")
    write(top / "Kconfig", "config X\n")
    return top


def kernel_tb(d: Path, build: str = "", extra: str = "", cache: Path | None = None,
              prefix: str = "p4pk") -> Path:
    cache = cache or mkdir(d / "cache", 0o700)
    if not build:
        build = f"  build:\n    source: {tree(d / 'src')}\n"
    return write(d / "tb.yaml", f"""name: p4p-kernel
kind: kernel
prefix: {prefix}
kernel:
{build}  cache_dir: {cache}
{extra}tester:
  driver: linux
  tx: {{name: t0}}
  rx: {{name: t1}}
  line_rate_pps: 200000
  cpu: 0
sut:
  forwarder: linux
  transport: {{kind: console}}
  in: {{name: s0}}
  out: {{name: s1}}
""")


def ssh_tb(d: Path, ssh_extra: str) -> Path:
    return write(d / "ssh.yaml", f"""name: p4p-ssh
kind: ssh
tester:
  driver: linux
  tx: {{name: t0, mac: "02:5e:00:00:01:01"}}
  rx: {{name: t1, mac: "02:5e:00:00:02:01"}}
  line_rate_pps: 1000000
  cpu: 0
sut:
  forwarder: linux
  in: {{name: s0, mac: "02:5e:00:00:01:02"}}
  out: {{name: s1, mac: "02:5e:00:00:02:02"}}
  transport:
    kind: ssh
    ssh:
      host: 127.0.0.1
      user: root
{{KH}}{ssh_extra}      timeout_s: 5
""".replace("{KH}", "" if "known_hosts" in ssh_extra else
            f"      known_hosts: {write(d / 'default_kh', KNOWN)}\n"))


KNOWN = ("127.0.0.1 ssh-ed25519 "
         "AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n")


@dataclass
class Case:
    name: str
    surface: str
    setup: Callable[[Path], list[str]]
    severity: str = "other"        # the class if it is NOT refused: HIGH / other
    env: dict[str, str] = field(default_factory=dict)
    expect: str = "refuse"   # refuse: exit 2 | noleak / nopwn / nohang: exit 0 or 2 and no
    #                          LEAK marker / no PWNED file / no hang (and no traceback)
    during: Callable[[Path], None] | None = None   # run while the command runs (races)


CASES: list[Case] = []


def case(name: str, surface: str, severity: str = "other", expect: str = "refuse",
         env: dict[str, str] | None = None) -> Callable:
    def deco(fn: Callable[[Path], list[str]]) -> Callable:
        CASES.append(Case(name, surface, fn, severity, env or {}, expect))
        return fn
    return deco


SUDO_NOBODY = {"SUDO_UID": str(NOBODY), "SUDO_GID": str(NOBODY), "SUDO_USER": "nobody"}

# ---- config files: validate / run / nightly / ab ---------------------------------------
EXP = "name: p4p-exp\nbehaviors: [end]\n"


@case("testbed file owned by nobody", "validate")
def _(d):
    return ["validate", str(nob(kernel_tb(d)))]


@case("testbed file mode 0666", "validate")
def _(d):
    p = kernel_tb(d)
    os.chmod(p, 0o666)
    return ["validate", str(p)]


@case("testbed file (root's) in a nobody-owned directory", "validate")
def _(d):
    sub = mkdir(d / "nobdir", owner=NOBODY)
    p = kernel_tb(d)
    shutil.move(str(p), sub / "tb.yaml")
    return ["validate", str(sub / "tb.yaml")]


@case("testbed file through a nobody symlink", "validate")
def _(d):
    p = kernel_tb(d)
    (d / "link.yaml").symlink_to(p)
    nob(d / "link.yaml")
    return ["validate", str(d / "link.yaml")]


@case("testbed file is a FIFO (nobody's)", "validate")
def _(d):
    os.mkfifo(d / "tb.yaml")
    nob(d / "tb.yaml")
    return ["validate", str(d / "tb.yaml")]


@case("testbed file is /dev/zero", "validate")
def _(d):
    return ["validate", "/dev/zero"]


@case("testbed file is /proc/self/environ (SUDO_UID nobody)", "validate", expect="noleak",
      env={**SUDO_NOBODY, "P4P_SECRET": LEAK})
def _(d):
    return ["validate", "/proc/self/environ"]


@case("testbed file is a root-only 0600 file (SUDO_UID nobody)", "validate", expect="noleak",
      env=SUDO_NOBODY)
def _(d):
    p = write(d / "secret.yaml", f"name: x\nkind: kernel\nzzz_{LEAK}: {LEAK}\n", 0o600)
    return ["validate", str(p)]


@case("root-only 0600 non-YAML (SUDO_UID nobody)", "validate", expect="noleak", env=SUDO_NOBODY)
def _(d):
    p = write(d / "secret.txt", f"a: b\n  {LEAK}: [\n", 0o600)
    return ["validate", str(p)]


@case("huge sparse testbed file (64 GiB)", "validate")
def _(d):
    p = d / "big.yaml"
    with open(p, "wb") as f:
        f.truncate(64 << 30)
    return ["validate", str(p)]


@case("experiment file owned by nobody", "run")
def _(d):
    exp = nob(write(d / "exp.yaml", EXP + "zzz_parsed: 1\n"))
    return ["run", str(exp), "--testbed", str(kernel_tb(d))]


@case("experiment's testbed key names a nobody file", "validate")
def _(d):
    tb = nob(kernel_tb(d, extra="zzz_parsed: 1\n"))
    return ["validate", str(write(d / "exp.yaml", EXP + f"testbed: {tb}\n"))]


@case("--testbed names a nobody file (run)", "run")
def _(d):
    return ["run", "quick", "--testbed", str(nob(kernel_tb(d, extra="zzz_parsed: 1\n")))]


@case("nightly suite owned by nobody", "nightly")
def _(d):
    p = nob(write(d / "suite.yaml",
                  f"name: s\nexperiments: [quick]\nresults: {d}/res\nzzz_parsed: 1\n"))
    return ["nightly", str(p)]


@case("ab file owned by nobody (unknown key shows it was parsed)", "ab")
def _(d):
    return ["ab", str(nob(write(d / "ab.yaml", "a: End\nb: End.X\nzzz_parsed: 1\n")))]


@case("ab file in a world-writable dir, mode 0666", "ab")
def _(d):
    sub = mkdir(d / "ww", 0o777)
    return ["ab", str(write(sub / "ab.yaml", "a: End\nb: End.X\nzzz_parsed: 1\n", 0o666))]


@case("ab file is a FIFO (nobody's)", "ab")
def _(d):
    os.mkfifo(d / "ab.yaml")
    nob(d / "ab.yaml")
    return ["ab", str(d / "ab.yaml")]


@case("ab file is /dev/zero", "ab")
def _(d):
    return ["ab", "/dev/zero"]


@case("ab file root-only 0600 non-YAML (SUDO_UID nobody)", "ab", expect="noleak", env=SUDO_NOBODY)
def _(d):
    return ["ab", str(write(d / "s.txt", f"a: b\n  {LEAK}: [\n", 0o600))]


@case("ab file alias bomb", "ab")
def _(d):
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):
        prev = f"*a{i-1}"
        lines.append(f"a{i}: &a{i} [{', '.join([prev] * 10)}]")
    return ["ab", str(write(d / "bomb.yaml", "\n".join(lines) + "\n"))]


@case("--set key_file to a nobody file", "run")
def _(d):
    k = nob(write(d / "id", "x", 0o600))
    return ["run", "quick", "--testbed", str(ssh_tb(d, "")), "--set",
            f"sut.transport.ssh.key_file={k}"]


# ---- kernel build inputs ---------------------------------------------------------------
def build_block(src: Path, extra: str = "") -> str:
    return f"  build:\n    source: {src}\n{extra}"


@case("fragment owned by nobody", "kernel build --dry-run", "HIGH")
def _(d):
    f = nob(write(d / "f.config", "CONFIG_X=y\n"))
    return ["kernel", "build", "--dry-run",
            str(kernel_tb(d, build_block(tree(d / "src"), f"    fragment: [{f}]\n")))]


@case("fragment (root's) in a nobody directory", "kernel build --dry-run", "HIGH")
def _(d):
    f = write(mkdir(d / "nd", owner=NOBODY) / "f.config", "CONFIG_X=y\n")
    return ["kernel", "build", "--dry-run",
            str(kernel_tb(d, build_block(tree(d / "src"), f"    fragment: [{f}]\n")))]


@case("fragment root-only with a bad line (SUDO_UID nobody)", "validate", expect="noleak",
      env=SUDO_NOBODY)
def _(d):
    f = write(d / "f.config", f"{LEAK}\n", 0o600)
    return ["validate", str(kernel_tb(d, build_block(tree(d / "src"), f"    fragment: [{f}]\n")))]


@case("patch is a FIFO (nobody's)", "kernel build --dry-run", "HIGH")
def _(d):
    os.mkfifo(d / "p.patch")
    nob(d / "p.patch")
    return ["kernel", "build", "--dry-run",
            str(kernel_tb(d, build_block(tree(d / "src"), f"    patches: [{d / 'p.patch'}]\n")))]


@case("patch is a huge sparse file (2 TiB)", "kernel build --dry-run")
def _(d):
    p = d / "p.patch"
    with open(p, "wb") as f:
        f.truncate(2 << 40)
    return ["kernel", "build", "--dry-run",
            str(kernel_tb(d, build_block(tree(d / "src"), f"    patches: [{p}]\n")))]


@case("base_config is /proc/self/environ", "kernel build --dry-run")
def _(d):
    return ["kernel", "build", "--dry-run",
            str(kernel_tb(d, build_block(tree(d / "src"),
                                         "    base_config: /proc/self/environ\n")))]


@case("base_config through a root symlink to a nobody file", "kernel build --dry-run", "HIGH")
def _(d):
    t = nob(write(d / "nobody.config", "CONFIG_X=y\n"))
    (d / "base.config").symlink_to(t)
    return ["kernel", "build", "--dry-run",
            str(kernel_tb(d, build_block(tree(d / "src"),
                                         f"    base_config: {d / 'base.config'}\n")))]


@case("source tree with a nobody-owned Makefile", "kernel build --dry-run", "HIGH")
def _(d):
    src = tree(d / "src")
    nob(src / "Makefile")
    return ["kernel", "build", "--dry-run", str(kernel_tb(d, build_block(src)))]


@case("source tree with a nobody-owned subdirectory", "kernel build --dry-run", "HIGH")
def _(d):
    src = tree(d / "src")
    mkdir(src / "scripts", owner=NOBODY)
    return ["kernel", "build", "--dry-run", str(kernel_tb(d, build_block(src)))]


@case("source tree with a root symlink out of the tree", "kernel build --dry-run", "HIGH")
def _(d):
    src = tree(d / "src")
    nob(write(d / "evil.mk", "all:\n"))
    (src / "include.mk").symlink_to(d / "evil.mk")
    return ["kernel", "build", "--dry-run", str(kernel_tb(d, build_block(src)))]


@case("source tree with a FIFO inside", "kernel build --dry-run")
def _(d):
    src = tree(d / "src")
    os.mkfifo(src / "fifo")
    return ["kernel", "build", "--dry-run", str(kernel_tb(d, build_block(src)))]


@case("source tree in a sticky dir under nobody's .git (fsmonitor)", "kernel build --dry-run",
      "HIGH", expect="nopwn")
def _(d):
    sticky = mkdir(d / "sticky", 0o1777)
    git = mkdir(sticky / ".git", owner=NOBODY)
    subprocess.run(["git", "init", "-q", str(sticky)], check=True)
    write(git / "config", "[core]\n\trepositoryformatversion = 0\n\tbare = false\n"
          f"\tfsmonitor = touch {PWNED}\n")
    for p in [git, *git.rglob("*")]:
        os.lchown(p, NOBODY, NOBODY)
    src = tree(sticky / "src")
    return ["kernel", "build", "--dry-run", str(kernel_tb(d, build_block(src)))]


@case("source tree (root's) with its own .git owned by nobody", "kernel build --dry-run", "HIGH",
      expect="nopwn")
def _(d):
    src = tree(d / "src")
    subprocess.run(["git", "init", "-q", str(src)], check=True)
    write(src / ".git" / "config", "[core]\n\trepositoryformatversion = 0\n\tbare = false\n"
          f"\tfsmonitor = touch {PWNED}\n")
    nob(src / ".git" / "config")
    return ["kernel", "build", "--dry-run", str(kernel_tb(d, build_block(src)))]


@case("source tree's top directory is nobody's", "kernel build --dry-run", "HIGH")
def _(d):
    src = tree(d / "src")
    nob(src)
    return ["kernel", "build", "--dry-run", str(kernel_tb(d, build_block(src)))]


# ---- kernel.image / modules_dir -------------------------------------------------------
def image_block(d: Path, img: Path, mods: Path) -> str:
    return f"  image: {img}\n  modules_dir: {mods}\n"


def image_parts(d: Path) -> tuple[Path, Path]:
    img = write(d / "bzImage", "MZ" + "\0" * 600)
    mods = mkdir(d / "mods" / "6.1.0-p4p")
    write(mods / "modules.dep", "")
    return img, mods


@case("kernel.image owned by nobody", "validate", "HIGH")
def _(d):
    img, mods = image_parts(d)
    nob(img)
    return ["validate", str(kernel_tb(d, image_block(d, img, mods)))]


@case("kernel.modules_dir with a nobody-owned module", "validate", "HIGH")
def _(d):
    img, mods = image_parts(d)
    nob(write(mods / "evil.ko", "x"))
    return ["validate", str(kernel_tb(d, image_block(d, img, mods)))]


@case("kernel.modules_dir with a hard link to /etc/shadow", "validate", expect="noleak",
      env=SUDO_NOBODY)
def _(d):
    img, mods = image_parts(d)
    os.link("/etc/shadow", mods / "shadow")
    return ["validate", str(kernel_tb(d, image_block(d, img, mods)))]


@case("kernel.image a FIFO", "testbed status", "other")
def _(d):
    img, mods = image_parts(d)
    img.unlink()
    os.mkfifo(img)
    nob(img)
    return ["testbed", "status", str(kernel_tb(d, image_block(d, img, mods)))]


# ---- kernel.cache_dir and its entries --------------------------------------------------
@case("cache_dir owned by nobody", "validate", "HIGH")
def _(d):
    return ["validate", str(kernel_tb(d, cache=mkdir(d / "c", 0o700, NOBODY)))]


@case("cache_dir root's, mode 1777", "kernel build --dry-run", "HIGH")
def _(d):
    return ["kernel", "build", "--dry-run", str(kernel_tb(d, cache=mkdir(d / "c", 0o1777)))]


@case("cache_dir root's 0700 below a nobody dir", "validate", "HIGH")
def _(d):
    par = mkdir(d / "nd", owner=NOBODY)
    return ["validate", str(kernel_tb(d, cache=mkdir(par / "c", 0o700)))]


@case("cache_dir a nobody symlink to a root dir", "validate", "HIGH")
def _(d):
    real = mkdir(d / "real", 0o700)
    (d / "c").symlink_to(real)
    nob(d / "c")
    return ["validate", str(kernel_tb(d, cache=d / "c"))]


@case("cache .lock is a FIFO (a dry run takes no lock)", "kernel build --dry-run",
      expect="nohang")
def _(d):
    cache = mkdir(d / "c", 0o700)
    os.mkfifo(cache / ".lock")
    return ["kernel", "build", "--dry-run",
            str(kernel_tb(d, "  build:\n    source: linux-source-6.1\n", cache=cache))]


@case("cache built/ manifest a FIFO (status reads none)", "testbed status", expect="nohang")
def _(d):
    cache = mkdir(d / "c", 0o700)
    b = mkdir(cache / "built", 0o700)
    os.mkfifo(b / "x.json")
    return ["testbed", "status", str(kernel_tb(d, cache=cache))]


# ---- ssh keys and known_hosts -----------------------------------------------------------
@case("key_file owned by nobody", "validate", "HIGH")
def _(d):
    k = nob(write(d / "id", "x", 0o600))
    return ["validate", str(ssh_tb(d, f"      key_file: {k}\n"))]


@case("known_hosts owned by nobody", "validate", "HIGH")
def _(d):
    k = nob(write(d / "kh", KNOWN))
    return ["validate", str(ssh_tb(d, f"      known_hosts: {k}\n"))]


@case("known_hosts (root's) in a nobody directory", "validate", "HIGH")
def _(d):
    k = write(mkdir(d / "nd", owner=NOBODY) / "kh", KNOWN)
    return ["validate", str(ssh_tb(d, f"      known_hosts: {k}\n"))]


@case("key_file (root's) in a world-writable non-sticky dir", "validate", "HIGH")
def _(d):
    k = write(mkdir(d / "ww", 0o777) / "id", "x", 0o600)
    return ["validate", str(ssh_tb(d, f"      key_file: {k}\n"))]


@case("known_hosts root-only, bad line (SUDO_UID nobody)", "validate", expect="noleak",
      env=SUDO_NOBODY)
def _(d):
    k = write(d / "kh", f"{LEAK} not a key\n", 0o600)
    return ["validate", str(ssh_tb(d, f"      known_hosts: {k}\n"))]


@case("known_hosts is /dev/zero", "validate")
def _(d):
    return ["validate", str(ssh_tb(d, "      known_hosts: /dev/zero\n"))]


# ---- results store, build dir, log dir -------------------------------------------------
@case("--db in a nobody directory", "runs")
def _(d):
    return ["runs", "--db", str(mkdir(d / "nd", owner=NOBODY) / "s.sqlite")]


@case("--db a FIFO (nobody's)", "runs")
def _(d):
    os.mkfifo(d / "s.sqlite")
    nob(d / "s.sqlite")
    return ["runs", "--db", str(d / "s.sqlite")]


@case("--db a root store in a sticky dir", "runs")
def _(d):
    s = mkdir(d / "st", 0o1777)
    return ["runs", "--db", str(s / "s.sqlite")]


@case("--results a nobody directory", "runs")
def _(d):
    return ["runs", "--results", str(mkdir(d / "nd", owner=NOBODY))]


@case("SRPERF_BUILD_DIR owned by nobody", "build", "HIGH")
def _(d):
    CASES_ENV["SRPERF_BUILD_DIR"] = str(mkdir(d / "b", 0o700, NOBODY))
    return ["build"]


@case("SRPERF_BUILD_DIR root's, mode 1777", "build", "HIGH")
def _(d):
    CASES_ENV["SRPERF_BUILD_DIR"] = str(mkdir(d / "b", 0o1777))
    return ["build"]


@case("SRPERF_LOG_DIR owned by nobody", "validate")
def _(d):
    CASES_ENV["SRPERF_LOG_DIR"] = str(mkdir(d / "l", 0o700, NOBODY))
    return ["validate", str(d / "missing.yaml")]


# ---- /run/srperf ----------------------------------------------------------------------
@case("/run/srperf/kernel-PREFIX owned by nobody (root made it: /run is root's)",
      "testbed down")
def _(d):
    run = Path("/run/srperf/kernel-p4pq")
    mkdir(run, 0o755, NOBODY)
    CLEAN.append(run)
    nob(write(run / "qemu.pid", f"{os.getpid()}\n"))
    nob(write(run / "testbed.json", '{"settings": {}}'))
    return ["testbed", "down", str(kernel_tb(d, prefix="p4pq"))]


# ---- what srperf runs locally: VPP, TRex --------------------------------------------------
def virtual_tb(d: Path, tester: str = "", sut: str = "") -> Path:
    return write(d / "virt.yaml", f"""name: p4p-virt
kind: virtual
prefix: p4pv
tester:
  driver: {'trex' if tester else 'linux'}
  tx: {{name: t0}}
  rx: {{name: t1}}
  line_rate_pps: 100000
  cpu: 0
{tester}sut:
  forwarder: {'vpp' if sut else 'linux'}
  transport: {{kind: netns}}
  in: {{name: s0}}
  out: {{name: s1}}
  cpu: 1
{sut}""")


def exe(path: Path, owner: int = 0, mode: int = 0o755) -> Path:
    return write(path, "#!/bin/sh\nexit 0\n", mode, owner)


@case("sut.vpp_binary owned by nobody", "validate", "HIGH")
def _(d):
    return ["validate", str(virtual_tb(d, sut=f"  vpp_binary: {exe(d / 'vpp', NOBODY)}\n"))]


@case("sut.vpp_binary (root's) in a nobody directory", "validate", "HIGH")
def _(d):
    b = exe(mkdir(d / "nd", owner=NOBODY) / "vpp")
    return ["validate", str(virtual_tb(d, sut=f"  vpp_binary: {b}\n"))]


@case("vppctl beside sut.vpp_binary owned by nobody", "validate", "HIGH")
def _(d):
    b = exe(mkdir(d / "bin") / "vpp")
    exe(d / "bin" / "vppctl", NOBODY)
    return ["validate", str(virtual_tb(d, sut=f"  vpp_binary: {b}\n"))]


def trex_opts(rel: Path) -> str:
    return f"  options: {{release: {rel}, low_end: true}}\n"


@case("TRex release dir owned by nobody (local tester)", "validate", "HIGH")
def _(d):
    rel = mkdir(d / "v3.08", owner=NOBODY)
    exe(rel / "t-rex-64")
    return ["validate", str(virtual_tb(d, tester=trex_opts(rel)))]


@case("TRex t-rex-64 owned by nobody (local tester)", "validate", "HIGH")
def _(d):
    rel = mkdir(d / "v3.08")
    exe(rel / "t-rex-64", NOBODY)
    return ["validate", str(virtual_tb(d, tester=trex_opts(rel)))]


@case("TRex release dir mode 0777 (local tester)", "validate", "HIGH")
def _(d):
    rel = mkdir(d / "v3.08", 0o777)
    exe(rel / "t-rex-64")
    return ["validate", str(virtual_tb(d, tester=trex_opts(rel)))]


@case("TRex release: a nobody-owned library inside", "validate", "HIGH")
def _(d):
    rel = mkdir(d / "v3.08")
    exe(rel / "t-rex-64")
    mkdir(rel / "so")
    nob(write(rel / "so" / "libx.so", "x"))
    return ["validate", str(virtual_tb(d, tester=trex_opts(rel)))]


@case("TRex client_path (Python root imports) owned by nobody", "validate", "HIGH")
def _(d):
    cl = mkdir(d / "client", owner=NOBODY)
    write(cl / "trex" / "__init__.py", f"open({str(PWNED)!r}, 'w')\n")
    opts = "  options: {client_path: %s, low_end: true}\n" % cl
    return ["validate", str(virtual_tb(d, tester=opts))]


@case("experiment forwarder vpp, options.vppctl a program of nobody (virtual SUT)", "validate",
      "HIGH")
def _(d):
    ctl = exe(mkdir(d / "nd", owner=NOBODY) / "vppctl", NOBODY)
    e = write(d / "exp.yaml", f"name: p4pe\nbehaviors: [end]\nforwarder: vpp\n"
              f"options: {{vppctl: {ctl}}}\n")
    return ["validate", str(e), "--testbed", str(virtual_tb(d))]


@case("cache package entry planted by nobody, right name (provision --dry-run)",
      "provision --kernel", "HIGH")
def _(d):
    cache = mkdir(d / "c", 0o700)
    pkg = "linux-image-6.1.0-p4p-amd64"
    e = mkdir(cache / f"{pkg}_6.1.1-1", 0o755, NOBODY)
    nob(write(e / "srperf-kernel.json", '{"name": "%s"}' % pkg))
    k = kernel_tb(d, f"  package: {pkg}\n", cache=cache)
    return ["provision", str(ssh_tb(d, "")), "--kernel", str(k), "--dry-run"]


@case("cache source manifest planted by nobody, right name", "kernel build --dry-run", "HIGH")
def _(d):
    cache = mkdir(d / "c", 0o700)
    src = mkdir(cache / "sources", 0o700)
    nob(write(src / "linux-source-6.1_6.1.1-1.json", '{"package": "linux-source-6.1"}'))
    return ["kernel", "build", "--dry-run",
            str(kernel_tb(d, "  build:\n    source: linux-source-6.1\n", cache=cache))]


@case("cache .lock a FIFO (provision --check)", "provision --kernel")
def _(d):
    cache = mkdir(d / "c", 0o700)
    os.mkfifo(cache / ".lock")
    k = kernel_tb(d, "  package: linux-image-6.1.0-p4p-amd64\n", cache=cache)
    return ["provision", str(ssh_tb(d, "")), "--kernel", str(k), "--check"]


CASES_ENV: dict[str, str] = {}
CLEAN: list[Path] = []


@dataclass
class Outcome:
    case: Case
    rc: int | None
    out: str
    verdict: str
    seconds: float


def classify(c: Case, rc: int | None, out: str) -> str:
    if PWNED.exists():
        return "HIGH (ran what nobody controls)"
    if rc is None:
        return "hang"
    if "Traceback" in out:
        return "traceback"
    if LEAK in out:
        return "leaks content"
    if c.expect in ("noleak", "nopwn", "nohang"):
        return "ok" if rc in (0, 2) else f"raw error (exit {rc})"
    if rc == 0 or "zzz_parsed" in out:   # the file was parsed: taken, not refused
        return c.severity if c.severity == "HIGH" else "accepted (other)"
    if rc == 2:
        return "ok"
    return f"raw error (exit {rc})"


def run_case(c: Case, i: int) -> Outcome:
    d = BASE / f"c{i:02d}"
    shutil.rmtree(d, ignore_errors=True)
    mkdir(d)
    CASES_ENV.clear()
    PWNED.unlink(missing_ok=True)
    argv = c.setup(d)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SUDO_")}
    env.update(c.env)
    env.update(CASES_ENV)
    env.setdefault("SRPERF_BUILD_DIR", str(mkdir(BASE / "build", 0o700)))
    start = time.monotonic()
    proc = subprocess.Popen([SRPERF, *argv], cwd=d, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, errors="replace",
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=TIMEOUT)
        rc: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        out, _ = proc.communicate()
        rc = None
    secs = time.monotonic() - start
    verdict = classify(c, rc, out)
    for p in CLEAN:
        shutil.rmtree(p, ignore_errors=True)
    CLEAN.clear()
    return Outcome(c, rc, out, verdict, secs)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("-k", default="")
    ap.add_argument("-v", action="store_true")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root")
    mkdir(BASE, 0o700)
    results = []
    for i, c in enumerate(CASES):
        if args.k and args.k not in c.name:
            continue
        o = run_case(c, i)
        results.append(o)
        last = [ln for ln in o.out.strip().splitlines() if ln.strip()][-1:] or [""]
        print(f"[{o.verdict:>24}] rc={o.rc} {o.seconds:4.1f}s {c.surface}: {c.name}\n"
              f"      {last[0][:220]}", flush=True)
        if args.v:
            print("      " + o.out.replace("\n", "\n      ")[:3000])
    shutil.rmtree(BASE, ignore_errors=True)
    bad = [o for o in results if o.verdict != "ok"]
    print(f"\ncases {len(results)}, refused cleanly {len(results) - len(bad)}, not {len(bad)}")
    for o in bad:
        print(f"  {o.verdict}: {o.case.surface}: {o.case.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
