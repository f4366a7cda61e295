"""The read gate (issue 44, findings 1, 2, 5 and 6): what root runs, applies, boots or
installs must not be something another local user can change, and no input open blocks.

``nobody`` (uid 65534) plays the other local user, as in ``tests/test_root_safety.py``.
Each test of a finding failed before the gate: a tree of nobody's had its Makefile run
as root, patches, fragments and a base .config of nobody's were accepted, an image and
modules of nobody's were booted and installed, and a FIFO as a manifest or as the
cache's lock hung ``kernel build --dry-run`` and ``provision --kernel --check``.
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest
import yaml

from srperf.errors import ConfigError
from srperf.kernel import build as kb
from srperf.safety import read_gate
from cli_call import call_main as _call

NOBODY = 65534
ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="plays another user: needs root")



@pytest.fixture(autouse=True)
def _no_sudo(monkeypatch: pytest.MonkeyPatch) -> None:
    """Root trusts root only here (an outer sudo must not make nobody trusted)."""
    monkeypatch.delenv("SUDO_UID", raising=False)


def _nobodys(path: Path) -> Path:
    os.lchown(path, NOBODY, NOBODY)
    return path


def _tree(tmp_path: Path, mark: Path) -> Path:
    """A tiny "Linux tree" whose defconfig rule creates ``mark`` (proof it ran)."""
    tree = tmp_path / "linux"
    tree.mkdir()
    (tree / "Makefile").write_text(f"defconfig:\n\ttouch {mark}\n%:\n\ttouch {mark}\n")
    (tree / "Kconfig").write_text("mainmenu \"Linux\"\n")
    return tree


def _kernel_tb(tmp_path: Path, kernel: dict, name: str = "kt.yaml") -> Path:
    data = {"name": "r4a-kt", "kind": "kernel", "prefix": "r4akt", "kernel": {
        "cache_dir": str(tmp_path / "cache"), **kernel},
        "tester": {"driver": "linux", "tx": {"name": "t0"}, "rx": {"name": "t1"}},
        "sut": {"forwarder": "linux", "transport": {"kind": "console"},
                "in": {"name": "s0"}, "out": {"name": "s1"}}}
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    return path


# -- finding 1: a source tree of another user ----------------------------------------------------
@pytest.mark.parametrize("whose", ["top", "makefile", "subdir-mode"])
def test_a_tree_of_another_user_is_refused_by_validate(tmp_path: Path, whose: str) -> None:
    tree = _tree(tmp_path, tmp_path / "ran")
    if whose == "top":
        _nobodys(tree)
    elif whose == "makefile":
        _nobodys(tree / "Makefile")
    else:
        (tree / "scripts").mkdir()
        os.chmod(tree / "scripts", 0o777)
    with pytest.raises(ConfigError) as err:
        kb.BuildRecipe.from_mapping(str(tmp_path / "tb.yaml"), {"source": str(tree)},
                                    str(tmp_path / "cache"))
    assert err.value.key == "kernel.build.source" and str(tmp_path / "tb.yaml") in str(err.value)
    assert ("owned by uid 65534 (nobody)" if whose != "subdir-mode"
            else "writable by others") in str(err.value)


def test_kernel_build_never_runs_the_makefile_of_another_users_tree(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mark = tmp_path / "ran"
    tree = _nobodys(_tree(tmp_path, mark))
    tb = _kernel_tb(tmp_path, {"build": {"source": str(tree)}})
    code, _, err = _call(["kernel", "build", str(tb)], capsys)
    assert code == 2 and "kernel.build.source" in err and "nobody" in err, err
    assert not mark.exists()


def test_the_tree_is_checked_again_when_the_build_starts(tmp_path: Path) -> None:
    """validate passed, then the tree changed hands: the build refuses before any step."""
    mark = tmp_path / "ran"
    tree = _tree(tmp_path, mark)
    recipe = kb.BuildRecipe.from_mapping(str(tmp_path / "tb.yaml"), {"source": str(tree)},
                                         str(tmp_path / "cache"))
    (tree / "arch").mkdir()
    (tree / "arch" / "evil.mk").write_text("x\n")
    _nobodys(tree / "arch" / "evil.mk")
    with pytest.raises(ConfigError, match="evil.mk is owned by uid 65534"):
        kb.build(recipe, lambda line: None)
    assert not mark.exists() and not (tmp_path / "cache" / "build-work").exists()


# -- finding 2: patches, fragments, a base .config ---------------------------------------------
def _inputs(tmp_path: Path) -> dict[str, Path]:
    files = {"patch": tmp_path / "0001.patch", "fragment": tmp_path / "srv6.config",
             "base": tmp_path / "base.config"}
    files["patch"].write_text("--- a/Makefile\n+++ b/Makefile\n@@ -1 +1 @@\n-a\n+b\n")
    files["fragment"].write_text("CONFIG_IPV6=y\n")
    files["base"].write_text("CONFIG_IPV6=y\n")
    for f in files.values():
        os.chmod(f, 0o644)
    return files


_KEYS = {"patch": ("patches", "kernel.build.patches[0]"),
         "fragment": ("fragment", "kernel.build.fragment[0]"),
         "base": ("base_config", "kernel.build.base_config")}


@pytest.mark.parametrize("what", ["patch", "fragment", "base"])
@pytest.mark.parametrize("how", ["owner", "mode", "symlink"])
def test_a_recipe_input_another_user_can_change_is_refused(tmp_path: Path, what: str,
                                                           how: str) -> None:
    files = _inputs(tmp_path)
    path = files[what]
    if how == "owner":
        _nobodys(path)
        reason = "owned by uid 65534 (nobody)"
    elif how == "mode":
        os.chmod(path, 0o666)
        reason = "writable by others (mode 0666)"
    else:
        shared = tmp_path / "shared"
        shared.mkdir()
        os.chmod(shared, 0o1777)
        link = shared / path.name
        os.symlink(path, link)
        _nobodys(link)
        path = link
        reason = "(a symlink) is owned by uid 65534 (nobody)"
    key, name = _KEYS[what]
    value = str(path) if what == "base" else [str(path)]
    with pytest.raises(ConfigError) as err:
        kb.BuildRecipe.from_mapping(str(tmp_path / "tb.yaml"),
                                    {"source": "linux-source-6.1", key: value},
                                    str(tmp_path / "cache"))
    assert err.value.key == name and reason in str(err.value), str(err.value)
    assert str(path) in str(err.value)


def test_a_patch_changing_hands_after_validate_is_refused_at_build(tmp_path: Path) -> None:
    mark = tmp_path / "ran"
    tree = _tree(tmp_path, mark)
    files = _inputs(tmp_path)
    recipe = kb.BuildRecipe.from_mapping(str(tmp_path / "tb.yaml"), {
        "source": str(tree), "patches": [str(files["patch"])]}, str(tmp_path / "cache"))
    os.chmod(files["patch"], 0o666)
    with pytest.raises(ConfigError) as err:
        kb.build(recipe, lambda line: None)
    assert err.value.key == "kernel.build.patches[0]" and "mode 0666" in str(err.value)
    assert not mark.exists()


# -- finding 5 (image and modules): provision --kernel and testbed up ---------------------------
def _built_kernel(tmp_path: Path) -> tuple[Path, Path]:
    image = tmp_path / "k" / "vmlinuz-6.1.0-r4a"
    modules = tmp_path / "k" / "lib" / "modules" / "6.1.0-r4a"
    (modules / "kernel").mkdir(parents=True)
    image.write_bytes(b"MZ not a kernel")
    (modules / "modules.dep").write_text("")
    (modules / "kernel" / "x.ko").write_bytes(b"ko")
    return image, modules


def _ssh_tb(tmp_path: Path) -> Path:
    key = tmp_path / "key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    pub = (tmp_path / "key.pub").read_text().split()
    (tmp_path / "known_hosts").write_text(f"203.0.113.250 {pub[0]} {pub[1]}\n")
    data = {"name": "r4a-lab", "kind": "ssh", "prefix": "r4al",
            "tester": {"driver": "linux", "tx": {"name": "t0"}, "rx": {"name": "t1"}},
            "sut": {"forwarder": "linux", "in": {"name": "s0"}, "out": {"name": "s1"},
                    "transport": {"kind": "ssh", "ssh": {
                        "host": "203.0.113.250", "key_file": str(key),
                        "known_hosts": str(tmp_path / "known_hosts")}}}}
    path = tmp_path / "lab.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize("whose", ["image", "modules", "module-file"])
@pytest.mark.parametrize("command", ["provision", "testbed-up"])
def test_an_image_or_modules_of_another_user_are_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], whose: str, command: str) -> None:
    image, modules = _built_kernel(tmp_path)
    target = {"image": image, "modules": modules,
              "module-file": modules / "kernel" / "x.ko"}[whose]
    _nobodys(target)
    ktb = _kernel_tb(tmp_path, {"image": str(image), "modules_dir": str(modules)})
    if command == "provision":
        argv = ["provision", str(_ssh_tb(tmp_path)), "--kernel", str(ktb), "--dry-run"]
    else:
        argv = ["testbed", "up", str(ktb)]
    code, _, err = _call(argv, capsys)
    key = "kernel.image" if whose == "image" else "kernel.modules_dir"
    assert code == 2 and key in err and "owned by uid 65534 (nobody)" in err, err
    assert str(ktb) in err


def test_an_image_changing_hands_after_validate_is_not_booted(tmp_path: Path) -> None:
    """What ``testbed up`` and ``provision --kernel`` fetch is checked again at use."""
    from srperf.kernel import package, provision
    from srperf.kernel.target import KernelTarget

    image, modules = _built_kernel(tmp_path)
    target = KernelTarget.from_mapping(str(tmp_path / "kt.yaml"), {
        "image": str(image), "modules_dir": str(modules), "cache_dir": str(tmp_path / "c")})
    got = package.fetch(target)
    _nobodys(image)
    with pytest.raises(ConfigError, match="owned by uid 65534"):
        package.fetch(target)
    out = tmp_path / "payload"
    out.mkdir()
    with pytest.raises(ConfigError, match="owned by uid 65534"):
        provision.write_payload(got, out)
    assert list(out.iterdir()) == []


# -- finding 6: a FIFO never hangs a command ------------------------------------------------------
def _run_cli(argv: list[str], timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    """``srperf ARGV`` in a child, killed (the test fails) when it does not end in time."""
    proc = subprocess.Popen([PY, "-c", "import sys; from srperf.cli.entry import main; "
                             "sys.exit(main(sys.argv[1:]))", *argv], text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={k: v for k, v in os.environ.items() if k != "SUDO_UID"},
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"srperf {' '.join(argv)} hung (killed after {timeout:g} s)")
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def test_a_fifo_as_the_source_manifest_does_not_hang_a_dry_run(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    (cache / "sources").mkdir(parents=True, mode=0o700)
    os.chmod(cache, 0o700)
    os.mkfifo(cache / "sources" / "linux-source-6.1_6.1.1-1.json")
    tb = _kernel_tb(tmp_path, {"build": {"source": "linux-source-6.1"}})
    res = _run_cli(["kernel", "build", str(tb), "--dry-run"])
    assert res.returncode == 2 and "FIFO" in res.stderr, res.stderr


@pytest.mark.parametrize("planted", ["fifo", "fifo-with-reader"])
def test_a_fifo_as_the_cache_lock_does_not_hang_provision_check(tmp_path: Path,
                                                                planted: str) -> None:
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    os.mkfifo(cache / ".lock")
    reader = None
    if planted == "fifo-with-reader":   # someone holds it open: the open would succeed
        reader = os.open(cache / ".lock", os.O_RDONLY | os.O_NONBLOCK)
    try:
        tb = _kernel_tb(tmp_path, {"package": "linux-image-6.1.0-56-cloud-amd64-unsigned"})
        res = _run_cli(["provision", str(_ssh_tb(tmp_path)), "--kernel", str(tb), "--check"])
    finally:
        if reader is not None:
            os.close(reader)
    assert res.returncode == 2 and "kernel.cache_dir" in res.stderr and "FIFO" in res.stderr, \
        res.stderr
    assert stat.S_ISFIFO(os.lstat(cache / ".lock").st_mode)


# -- the gate itself -----------------------------------------------------------------------------
# -- an independent probe's findings: root-owned links out of a tree; inputs too large to read ----
@pytest.mark.parametrize("what", ["makefile", "scripts-dir"])
def test_a_root_link_out_of_the_tree_to_another_users_file_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], what: str) -> None:
    """A root-owned symlink in a root-owned tree pointing at nobody's Makefile (or a
    directory of nobody's scripts): make follows it, so the link's owner is not enough."""
    mark = tmp_path / "ran"
    theirs = tmp_path / "theirs"
    (tmp_path / "n").mkdir()
    nobodys_tree = _tree(tmp_path / "n", mark)
    for entry in [nobodys_tree, *nobodys_tree.iterdir()]:
        _nobodys(entry)
    _nobodys(tmp_path / "n")
    os.symlink(nobodys_tree, theirs)
    tree = tmp_path / "t"
    tree.mkdir()
    (tree / "Kconfig").write_text("mainmenu \"Linux\"\n")
    if what == "makefile":
        os.symlink(nobodys_tree / "Makefile", tree / "Makefile")
    else:
        (tree / "Makefile").write_text("defconfig:\n\ttrue\n")
        os.symlink(nobodys_tree, tree / "scripts")
    tb = _kernel_tb(tmp_path, {"build": {"source": str(tree)}})
    for argv in (["validate", str(tb)], ["kernel", "build", str(tb)]):
        code, _, err = _call(argv, capsys)
        assert code == 2 and "kernel.build.source" in err and "outside the tree" in err, err
    assert not mark.exists()


@pytest.mark.parametrize("command", ["provision", "testbed-up"])
def test_a_root_link_in_modules_to_another_users_module_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str) -> None:
    image, modules = _built_kernel(tmp_path)
    evil = tmp_path / "evil.ko"
    evil.write_bytes(b"not yours")
    _nobodys(evil)
    (modules / "kernel" / "x.ko").unlink()
    os.symlink(evil, modules / "kernel" / "x.ko")
    ktb = _kernel_tb(tmp_path, {"image": str(image), "modules_dir": str(modules)})
    argv = (["provision", str(_ssh_tb(tmp_path)), "--kernel", str(ktb), "--dry-run"]
            if command == "provision" else ["testbed", "up", str(ktb)])
    code, _, err = _call(argv, capsys)
    assert code == 2 and "kernel.modules_dir" in err and "outside the tree" in err, err


@pytest.mark.parametrize("what", ["patch", "base", "image"])
def test_an_input_too_large_to_read_is_refused_before_it_is_read(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], what: str) -> None:
    """A sparse 1 TiB patch, base .config or image kept `kernel build --dry-run` and
    `provision --dry-run` hashing for ever; now refused by size, at validate."""
    big = tmp_path / "big"
    with open(big, "wb") as f:
        f.truncate(1 << 40)
    if what == "image":
        _, modules = _built_kernel(tmp_path)
        kernel = {"image": str(big), "modules_dir": str(modules)}
        key = "kernel.image"
    else:
        tree = _tree(tmp_path, tmp_path / "ran")
        kernel = {"build": {"source": str(tree),
                            **({"patches": [str(big)]} if what == "patch"
                               else {"base_config": str(big)})}}
        key = "kernel.build.patches[0]" if what == "patch" else "kernel.build.base_config"
    tb = _kernel_tb(tmp_path, kernel)
    code, _, err = _call(["validate", str(tb)], capsys)
    assert code == 2 and key in err and "MiB an input may be" in err, err


def _refused(path: Path | str, check=read_gate.trusted_file) -> str:
    with pytest.raises(ConfigError) as err:
        check(path, "tb.yaml", "kernel.x")
    text = str(err.value)
    assert text.startswith(f"tb.yaml: kernel.x = {str(path)!r}: "), text
    return text


def test_gate_accepts_root_files_and_trusted_symlinks(tmp_path: Path) -> None:
    f = tmp_path / "f"
    f.write_text("data\n")
    os.chmod(f, 0o644)
    os.symlink(f, tmp_path / "link")
    assert read_gate.trusted_file(tmp_path / "link", "tb.yaml", "k") == str(f)
    assert read_gate.read_trusted_file(f, "tb.yaml", "k") == b"data\n"
    assert read_gate.trusted_dir(tmp_path, "tb.yaml", "k") == str(tmp_path)
    assert read_gate.trusted_tree(tmp_path, "tb.yaml", "k") == str(tmp_path)


def test_gate_refuses_owner_modes_symlinks_kinds(tmp_path: Path) -> None:
    f = tmp_path / "f"
    f.write_text("x")
    os.chmod(f, 0o644)
    _nobodys(f)
    assert "owned by uid 65534 (nobody)" in _refused(f)
    os.chown(f, 0, 0)
    for mode, who in ((0o646, "others"), (0o664, "its group")):
        os.chmod(f, mode)
        assert f"writable by {who} (mode {mode:04o})" in _refused(f)
    os.chmod(f, 0o644)
    link = tmp_path / "link"
    os.symlink(f, link)
    _nobodys(link)
    assert "(a symlink) is owned by uid 65534 (nobody)" in _refused(link)
    assert "not followed" in _refused(link)
    os.mkfifo(tmp_path / "fifo")
    assert "is a FIFO" in _refused(tmp_path / "fifo")
    assert "is a character device" in _refused("/dev/null")
    assert "kernel interface" in _refused("/proc/self/status")
    assert "is a directory, not a regular file" in _refused(tmp_path)
    assert "no such file" in _refused(tmp_path / "missing")
    assert "is a regular file, not a directory" in _refused(f, read_gate.trusted_dir)


def test_gate_checks_every_directory_on_the_way(tmp_path: Path) -> None:
    open_dir = tmp_path / "open"
    (open_dir / "deep").mkdir(parents=True)
    f = open_dir / "deep" / "f"
    f.write_text("x")
    os.chmod(open_dir, 0o777)
    assert f"the directory {open_dir} is writable by others (mode 0777)" in _refused(f)
    os.chmod(open_dir, 0o755)
    _nobodys(open_dir)
    assert f"the directory {open_dir} is owned by uid 65534" in _refused(f)
    # a sticky world-writable directory (/tmp) on the way is fine when the entries in it
    # are a trusted user's; the entry itself is never accepted so
    os.chown(open_dir, 0, 0)
    os.chmod(open_dir, 0o1777)
    assert read_gate.trusted_file(f, "tb.yaml", "k") == str(f)
    assert "writable by others" in _refused(open_dir, read_gate.trusted_dir)


def test_gate_tree_refuses_what_is_inside(tmp_path: Path) -> None:
    tree = tmp_path / "t"
    (tree / "a").mkdir(parents=True)
    (tree / "a" / "f").write_text("x")
    os.mkfifo(tree / "a" / "p")
    assert "is a FIFO" in _refused(tree, read_gate.trusted_tree)
    os.unlink(tree / "a" / "p")
    os.symlink("/etc/shadow", tree / "a" / "l")
    _nobodys(tree / "a" / "l")
    assert f"{tree}/a/l is owned by uid 65534" in _refused(tree, read_gate.trusted_tree)


def test_gate_trusts_the_user_who_ran_sudo(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "f"
    f.write_text("x")
    os.chmod(f, 0o644)
    _nobodys(f)
    monkeypatch.setenv("SUDO_UID", str(NOBODY))
    assert read_gate.trusted_file(f, "tb.yaml", "k") == str(f)
    monkeypatch.setenv("SUDO_UID", "1234")
    assert "owned by uid 65534" in _refused(f)


def test_gate_read_is_bounded(tmp_path: Path) -> None:
    f = tmp_path / "big"
    with open(f, "wb") as out:
        out.truncate(64 << 20)   # sparse
    os.chmod(f, 0o644)
    with pytest.raises(ConfigError, match="larger than 1024 bytes"):
        read_gate.read_trusted_file(f, "tb.yaml", "k", limit=1024)


def test_gate_opens_never_block(tmp_path: Path) -> None:
    """Even with a FIFO swapped in after the kind check, the open itself cannot block:
    the flags hold O_NONBLOCK."""
    assert read_gate._FILE_FLAGS & os.O_NONBLOCK and read_gate._FILE_FLAGS & os.O_NOFOLLOW


@pytest.fixture(autouse=True)
def _no_leftover_namespace() -> Iterator[None]:
    yield
    names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True,
                           check=False).stdout
    assert "r4akt" not in names, "a refused testbed up left a namespace"
