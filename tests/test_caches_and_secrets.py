"""Issue 44, findings 3, 4, 5, 7 and 8: root's caches are private and trusted only for what
srperf made in them; a secret is hidden whole by its key's name; an echoed file is
bounded.  The other local user is played by ``nobody`` (uid 65534), as in
tests/test_root_safety.py.  No kernel is compiled: a small fake tree answers the make
targets a build runs, and a small .deb plays the source package."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from srperf.errors import ConfigError
from srperf.kernel import build as kb
from srperf.safety import read_gate
from cli_call import call_main as _call

ROOT = Path(__file__).resolve().parents[1]
NOBODY = 65534
KERNEL_61 = ROOT / "testbed" / "kernel-6.1.yaml"
PACKAGE = "linux-image-6.1.0-99-amd64"
RELEASE = "6.1.0-fake-srperf"

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="plays another user: needs root")



def _sticky(path: Path) -> Path:
    """A directory like /tmp: root's, world-writable, sticky."""
    path.mkdir(parents=True)
    os.chmod(path, 0o1777)
    return path


def _private(path: Path) -> Path:
    path.mkdir(parents=True, mode=0o700)
    os.chmod(path, 0o700)
    return path


def _nobodys(*paths: Path) -> None:
    for p in paths:
        os.lchown(p, NOBODY, NOBODY)


def _kernel_tb(tmp_path: Path, kernel: dict, name: str = "kernel.yaml") -> Path:
    """A kernel testbed like the shipped kernel-6.1 with its own ``kernel:`` block."""
    data = yaml.safe_load(KERNEL_61.read_text())
    data.update(name="r4bk", prefix="r4bk")
    data["kernel"] = kernel
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    return path


MAKEFILE = f"""\
defconfig:
\t@touch {{marker}}
\techo CONFIG_SRPERF_FAKE=y > .config
olddefconfig:
\t@true
bzImage modules:
\tmkdir -p arch/x86/boot && echo image > arch/x86/boot/bzImage && echo map > System.map
modules_install:
\tmkdir -p $(INSTALL_MOD_PATH)/lib/modules/{RELEASE}
\tln -sfn $(CURDIR) $(INSTALL_MOD_PATH)/lib/modules/{RELEASE}/build
kernelrelease:
\t@echo {RELEASE}
"""


def _fake_tree(path: Path, marker: Path) -> Path:
    """A tree that answers every make target of a build (no compiler runs); its
    ``defconfig`` touches ``marker`` (so a test sees whether its Makefile ran)."""
    (path / "scripts").mkdir(parents=True)
    (path / "Makefile").write_text(MAKEFILE.format(marker=marker))
    (path / "Kconfig").write_text('mainmenu "Linux"\n')
    config = path / "scripts" / "config"
    config.write_text("#!/bin/sh\nexit 0\n")
    config.chmod(0o755)
    return path


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- finding 3 (and the cache itself) ---------------------------------------------------------
def test_a_world_writable_sticky_cache_dir_is_refused_naming_kernel_cache_dir(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cache = _sticky(tmp_path / "shared")
    tb = _kernel_tb(tmp_path, {"package": PACKAGE, "version": "1.0", "cache_dir": str(cache)})
    for argv in (["validate", str(tb)], ["testbed", "up", str(tb)]):
        code, _, err = _call(argv, capsys)
        assert code == 2 and "kernel.cache_dir" in err and str(cache) in err, (argv, err)
        assert "mode 1777" in err and "Errno" not in err, err
    assert list(cache.iterdir()) == []   # nothing made in it


def test_a_cache_dir_of_another_user_is_refused_and_a_new_one_is_private(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    theirs = _private(tmp_path / "theirs")
    _nobodys(theirs)
    tb = _kernel_tb(tmp_path, {"package": PACKAGE, "cache_dir": str(theirs)})
    code, _, err = _call(["validate", str(tb)], capsys)
    assert code == 2 and "kernel.cache_dir" in err and "owner nobody" in err, err
    from srperf.kernel import cache as kcache

    made = kcache.root(tmp_path / "new" / "kernels", str(tb), create=True)
    assert made is not None and os.stat(made).st_mode & 0o777 == 0o700


def _source_deb(work: Path, marker: Path) -> Path:
    """A linux-source-6.1 package whose tarball's Makefile touches ``marker``."""
    tree = _fake_tree(work / "linux-source-6.1", marker)
    pkg = work / "pkg"
    (pkg / "DEBIAN").mkdir(parents=True)
    (pkg / "DEBIAN" / "control").write_text(
        "Package: linux-source-6.1\nVersion: 6.1.99-1\nArchitecture: all\n"
        "Maintainer: nobody <nobody@example.invalid>\nDescription: planted\n")
    (pkg / "usr" / "src").mkdir(parents=True)
    subprocess.run(["tar", "-cJf", str(pkg / "usr" / "src" / "linux-source-6.1.tar.xz"),
                    "-C", str(work), tree.name], check=True)
    deb = work / "linux-source-6.1_6.1.99-1_all.deb"
    subprocess.run(["dpkg-deb", "-Zxz", "--build", str(pkg), str(deb)], check=True,
                   capture_output=True)
    return deb


@pytest.mark.parametrize("cache_kind", ["sticky", "private"])
def test_a_planted_source_package_is_not_unpacked(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], cache_kind: str) -> None:
    """nobody plants ``sources/linux-source-6.1_6.1.99-1.json`` and its .deb: in a sticky
    cache the cache is refused; in a private one (made so after the planting) the
    entry is, as not srperf's.  Either way the planted Makefile never runs."""
    if kb.missing_tools():
        pytest.skip(f"no {kb.missing_tools()} here (scripts/install.sh installs them)")
    marker = tmp_path / "MAKEFILE-RAN"
    deb_src = _source_deb(_private(tmp_path / "work"), marker)
    cache = _sticky(tmp_path / "cache") if cache_kind == "sticky" else \
        _private(tmp_path / "cache")
    sources = cache / "sources"
    sources.mkdir()
    deb = sources / deb_src.name
    deb.write_bytes(deb_src.read_bytes())
    manifest = sources / "linux-source-6.1_6.1.99-1.json"
    manifest.write_text(json.dumps({"deb": str(deb), "sha256": _sha(deb),
                                    "version": "6.1.99-1"}))
    _nobodys(sources, deb, manifest)
    tb = _kernel_tb(tmp_path, {"build": {"source": "linux-source-6.1", "version": "6.1.99-1"},
                               "cache_dir": str(cache)})
    code, out, err = _call(["kernel", "build", str(tb)], capsys)
    assert not marker.exists(), "the planted Makefile ran as root"
    assert code == 2 and "Traceback" not in err, (out, err)
    if cache_kind == "sticky":
        assert "kernel.cache_dir" in err and str(cache) in err, err
    else:
        assert "owner nobody" in err and str(cache) in err, err


# -- finding 4 ----------------------------------------------------------------------------------
def _victim(tmp_path: Path) -> Path:
    victim = _private(tmp_path / "victim") / "victim.conf"
    victim.write_text("root:x:0:0\n")
    os.utime(victim, ns=(1_000_000_000, 1_000_000_000))
    return victim


def test_a_planted_release_symlink_does_not_overwrite_its_victim(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The build id is public (``--dry-run`` prints it): nobody makes ``built/`` and
    ``built/BUILD_ID/release`` -> a victim in a sticky cache before the build."""
    if kb.missing_tools():
        pytest.skip(f"no {kb.missing_tools()} here (scripts/install.sh installs them)")
    victim = _victim(tmp_path)
    before = (victim.read_bytes(), os.stat(victim).st_mtime_ns)
    tree = _fake_tree(tmp_path / "linux", tmp_path / "ran")
    cache = _sticky(tmp_path / "cache")
    recipe = kb.BuildRecipe.from_mapping(str(tmp_path / "tb.yaml"), {"source": str(tree)},
                                         str(cache))
    bid = kb.recipe_hashes(recipe, kb.tree_hash(tree)).build_id
    planted = cache / "built" / bid
    planted.mkdir(parents=True)
    os.symlink(victim, planted / "release")
    _nobodys(cache / "built", planted, planted / "release")
    tb = _kernel_tb(tmp_path, {"build": {"source": str(tree)}, "cache_dir": str(cache)})
    code, _, err = _call(["kernel", "build", str(tb)], capsys)
    assert (victim.read_bytes(), os.stat(victim).st_mtime_ns) == before
    assert code == 2 and "kernel.cache_dir" in err and "Traceback" not in err, err


def test_a_build_is_staged_privately_then_named_by_its_build_id(tmp_path: Path) -> None:
    """In a private cache the build goes to a fresh private work directory and is renamed
    to built/BUILD_ID once complete; an earlier incomplete built/BUILD_ID (no build.json)
    with a release symlink in it is replaced, its link's target untouched."""
    if kb.missing_tools():
        pytest.skip(f"no {kb.missing_tools()} here (scripts/install.sh installs them)")
    victim = _victim(tmp_path)
    tree = _fake_tree(tmp_path / "linux", tmp_path / "ran")
    cache = tmp_path / "cache"
    recipe = kb.BuildRecipe.from_mapping(str(tmp_path / "tb.yaml"), {"source": str(tree)},
                                         str(cache))
    bid = kb.recipe_hashes(recipe, kb.tree_hash(tree)).build_id
    stale = cache / "built" / bid
    stale.mkdir(parents=True)
    os.symlink(victim, stale / "release")
    record = kb.build(recipe, lambda line: None)
    assert victim.read_text() == "root:x:0:0\n"
    out = cache / "built" / bid
    assert record.release == RELEASE and (out / "release").read_text().strip() == RELEASE
    assert not (out / "release").is_symlink() and (out / "build.json").is_file()
    assert os.stat(cache).st_mode & 0o777 == 0o700
    assert kb.built_image(recipe).release == RELEASE
    assert list((cache / "build-work").iterdir()) == []
    # modules_install's build/ link to the (gone) work tree is dropped: a link out of the
    # modules tree would make the read gate refuse the build's own modules
    modules = out / "root" / "lib" / "modules" / RELEASE
    assert not os.path.lexists(modules / "build")
    read_gate.trusted_tree(modules, "tb.yaml", "kernel.modules_dir")


# -- finding 5 ----------------------------------------------------------------------------------
def _plant_entry(cache: Path) -> tuple[Path, str]:
    """A fetched-kernel entry, as srperf lays it out, all of it nobody's."""
    entry = cache / f"{PACKAGE}_1.0"
    boot = entry / "root" / "boot"
    modules = entry / "root" / "lib" / "modules" / RELEASE
    boot.mkdir(parents=True)
    modules.mkdir(parents=True)
    (modules / "modules.dep").write_text("")
    image = boot / f"vmlinuz-{RELEASE}"
    image.write_bytes(b"planted kernel")
    deb = entry / f"{PACKAGE}_1.0_amd64.deb"
    deb.write_bytes(b"planted package")
    sha = _sha(deb)
    manifest = entry / "srperf-kernel.json"
    manifest.write_text(json.dumps({"name": f"{PACKAGE}=1.0", "release": RELEASE,
                                    "image": str(image), "modules_dir": str(modules),
                                    "sha256": sha, "version": "1.0"}))
    for p in [entry, *entry.rglob("*")]:
        _nobodys(p)
    return entry, sha


def _ssh_tb(tmp_path: Path, kernel_tb: Path) -> Path:
    key = tmp_path / "key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)],
                   check=True)
    pub = (tmp_path / "key.pub").read_text().split()
    (tmp_path / "known_hosts").write_text(f"203.0.113.250 {pub[0]} {pub[1]}\n")
    data = {"name": "r4b-lab", "kind": "ssh", "prefix": "r4bl",
            "tester": {"driver": "linux", "tx": {"name": "t0"}, "rx": {"name": "t1"}},
            "sut": {"forwarder": "linux", "in": {"name": "s0"}, "out": {"name": "s1"},
                    "transport": {"kind": "ssh", "ssh": {
                        "host": "203.0.113.250", "key_file": str(key),
                        "known_hosts": str(tmp_path / "known_hosts")}}},
            "provision": {"kernel": {"target": str(kernel_tb)}}}
    path = tmp_path / "lab.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize("cache_kind", ["sticky", "private"])
def test_a_planted_kernel_entry_is_not_booted_nor_planned(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], cache_kind: str) -> None:
    """A manifest, a .deb whose SHA-256 matches it and an image, planted by nobody: what
    ``testbed up`` boots (package.fetch) refuses them, and ``provision --kernel
    --dry-run`` plans nothing with them."""
    from srperf.kernel import package
    from srperf.kernel.target import KernelTarget

    cache = _sticky(tmp_path / "cache") if cache_kind == "sticky" else \
        _private(tmp_path / "cache")
    _, sha = _plant_entry(cache)
    kernel = {"package": PACKAGE, "version": "1.0", "cache_dir": str(cache)}
    kernel_tb = _kernel_tb(tmp_path, kernel)
    if cache_kind == "private":   # the testbed file itself loads; the entry is refused
        target = KernelTarget.from_mapping(str(kernel_tb), kernel)
        with pytest.raises(ConfigError, match="owner nobody"):
            package.fetch(target)
    code, out, err = _call(["provision", str(_ssh_tb(tmp_path, kernel_tb)), "--dry-run"],
                           capsys)
    assert code == 2 and sha not in out and RELEASE not in out and "install (deb)" not in out, \
        (out, err)
    assert ("kernel.cache_dir" if cache_kind == "sticky" else "owner nobody") in err, err
    assert "Traceback" not in err


def test_a_damaged_manifest_is_a_clear_refusal(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    cache = _private(tmp_path / "cache")
    entry, _ = _plant_entry(cache)
    for p in [entry, *entry.rglob("*")]:
        os.lchown(p, 0, 0)
    (entry / "srperf-kernel.json").write_text("{not json")
    kernel_tb = _kernel_tb(tmp_path, {"package": PACKAGE, "version": "1.0",
                                      "cache_dir": str(cache)})
    code, _, err = _call(["provision", str(_ssh_tb(tmp_path, kernel_tb)), "--dry-run"], capsys)
    assert code == 2 and "damaged kernel cache manifest" in err and "Traceback" not in err, err


# -- finding 7 ----------------------------------------------------------------------------------
SECRET = "Pw/Zq8-r4b-" + "x7Kd"


@pytest.mark.parametrize("where", ["kernel.apt_password", "db_password", "search.token"])
def test_a_value_under_a_secret_key_is_never_printed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str) -> None:
    """Each is an unknown key (refused): the message names the key, never any part of
    the value (it was shown as its last word, 'x7Kd …(redacted)')."""
    secret = f"{SECRET}-{hashlib.sha256(where.encode()).hexdigest()[:6]}"
    if where == "kernel.apt_password":
        path = _kernel_tb(tmp_path, {"package": PACKAGE, "apt_password": secret})
    else:
        exp = yaml.safe_load((ROOT / "experiments" / "quick.yaml").read_text())
        if where == "db_password":
            exp["db_password"] = secret
        else:
            exp["search"]["token"] = secret
        path = tmp_path / "exp.yaml"
        path.write_text(yaml.safe_dump(exp))
    code, out, err = _call(["validate", str(path)], capsys)
    assert code == 2 and where in err, err
    for part in (secret, *secret.split("/"), *secret.split("-")[-2:]):
        assert part not in out + err, (part, err)


def test_secret_values_are_not_stored(tmp_path: Path) -> None:
    """A run's environment under secret keys (however short the secret, and a ``--set``
    item of a secret key) never reaches the store's rows."""
    from srperf.results.store import ResultStore

    db = tmp_path / "store.sqlite"
    env = {"kernel": {"apt_password": "Qq9"}, "db_password": f"{SECRET}-db",
           "recipe": {"set": [f"search.token={SECRET}-set"]},
           "nested": [{"api_key": 12345678}]}
    with ResultStore(db) as store:
        run = store.begin_run("r4b", "simulated", "linux", env)
        store.update_environment(run, env)
    conn = sqlite3.connect(db)
    try:
        rows = repr(conn.execute("SELECT * FROM runs").fetchall())
    finally:
        conn.close()
    for secret in ("Qq9", f"{SECRET}-db", f"{SECRET}-set", "12345678", SECRET):
        assert secret not in rows, secret
    assert "search.token=" in rows and "apt_password" in rows


# -- finding 8 ----------------------------------------------------------------------------------
def _fragment_tb(tmp_path: Path, fragment: Path) -> Path:
    return _kernel_tb(tmp_path, {"build": {"source": "linux-source-6.1",
                                           "fragment": [str(fragment)]},
                                 "cache_dir": str(tmp_path / "cache")})


def test_a_one_line_4_mib_fragment_gives_a_short_message(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    frag = tmp_path / "big.config"
    frag.write_text("CONFIG_" + "A" * (4 << 20))
    os.chmod(frag, 0o644)
    code, _, err = _call(["validate", str(_fragment_tb(tmp_path, frag))], capsys)
    assert code == 2 and "kernel.build.fragment[0]" in err and f"{frag}:1" in err, err[:500]
    assert len(err) < 1000, len(err)


def test_a_line_of_a_file_others_may_not_read_is_not_quoted(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A password-hash file named as a fragment: its line is not a Kconfig line, and
    the message says so without quoting it."""
    frag = tmp_path / "shadow"
    frag.write_text("root:$6$r4bsalt$HASHHASHHASH:19000:0:99999:7:::\n")
    os.chmod(frag, 0o600)
    code, _, err = _call(["validate", str(_fragment_tb(tmp_path, frag))], capsys)
    assert code == 2 and f"{frag}:1" in err and "not a Kconfig line" in err, err
    assert "HASHHASH" not in err and "r4bsalt" not in err, err


def test_a_sparse_128_mib_fragment_is_quick_and_small(tmp_path: Path) -> None:
    """Checked in a fresh process: its peak memory and its message stay small."""
    frag = tmp_path / "sparse.config"
    with open(frag, "wb") as f:
        f.truncate(128 << 20)
    os.chmod(frag, 0o644)
    tb = _fragment_tb(tmp_path, frag)
    probe = ("import resource, subprocess, sys\n"
             "res = subprocess.run([sys.executable, '-m', 'srperf.cli', 'validate', sys.argv[1]],"
             " capture_output=True, text=True)\n"
             "print(res.returncode, len(res.stderr),"
             " resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
    started = time.monotonic()
    res = subprocess.run([sys.executable, "-c", probe, str(tb)], capture_output=True,
                         text=True, check=True, cwd=ROOT)
    took = time.monotonic() - started
    code, err_chars, peak_kib = map(int, res.stdout.split())
    assert code == 2 and err_chars < 1000, res.stdout
    assert peak_kib < 300 * 1024, f"peak {peak_kib} KiB"
    assert took < 30, took


def test_a_kernel_build_target_dry_run_is_no_internal_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """provision --dry-run naming a kernel.build target looks the build up in the cache
    (was: an AssertionError, exit 1)."""
    code, out, err = _call(["provision", str(_ssh_tb(tmp_path, ROOT / "testbed" /
                                                     "kernel-src.yaml")), "--dry-run"], capsys)
    assert code == 0 and "kernel built from linux-source-6.1" in out, (out, err)
