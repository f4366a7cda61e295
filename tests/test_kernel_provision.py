"""srperf provision --kernel: the plan, its choices and refusals, the payload, the GRUB
entry finder (run by bash on a Debian-shaped grub.cfg), the dry run, and the SSH
guest's initramfs.  Fast: no namespace, no guest (the guest test is
tests/test_kernel_provision_guest.py)."""

from __future__ import annotations

import subprocess
import tarfile
from pathlib import Path

import pytest
import yaml

from srperf.cli.entry import main
from srperf.config.loader import load_testbed
from srperf.config.provision import KernelInstallSettings
from srperf.errors import ConfigError
from srperf.kernel import provision as kp
from srperf.kernel.package import KernelImage
from srperf.kernel.target import KernelTarget

ROOT = Path(__file__).resolve().parents[1]
REL = "6.12.117+deb12-cloud-amd64"
UUID = "0f3c5d2e-8a4b-4f4e-9d3c-1b2a3c4d5e6f"

GRUB_CFG = f"""\
### BEGIN /etc/grub.d/10_linux ###
menuentry 'Debian GNU/Linux' --class debian --class gnu-linux --class gnu --class os \
$menuentry_id_option 'gnulinux-simple-{UUID}' {{
	linux	/boot/vmlinuz-{REL} root=UUID={UUID} ro quiet
}}
submenu 'Advanced options for Debian GNU/Linux' $menuentry_id_option \
'gnulinux-advanced-{UUID}' {{
	menuentry 'Debian GNU/Linux, with Linux {REL}' --class debian --class gnu-linux \
--class gnu --class os $menuentry_id_option 'gnulinux-{REL}-advanced-{UUID}' {{
		linux	/boot/vmlinuz-{REL} root=UUID={UUID} ro quiet
	}}
	menuentry 'Debian GNU/Linux, with Linux {REL} (recovery mode)' --class debian \
--class gnu-linux --class gnu --class os $menuentry_id_option \
'gnulinux-{REL}-recovery-{UUID}' {{
		linux	/boot/vmlinuz-{REL} root=UUID={UUID} ro single
	}}
	menuentry 'Debian GNU/Linux, with Linux 6.1.0-56-cloud-amd64' --class debian \
--class gnu-linux --class gnu --class os $menuentry_id_option \
'gnulinux-6.1.0-56-cloud-amd64-advanced-{UUID}' {{
		linux	/boot/vmlinuz-6.1.0-56-cloud-amd64 root=UUID={UUID} ro quiet
	}}
}}
"""


def _entry(cfg: Path, release: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", kp.grub_entry_function(str(cfg))
                           + f"grub_entry {release}"], capture_output=True, text=True)


def test_grub_entry_is_the_advanced_entry_of_the_release(tmp_path: Path) -> None:
    cfg = tmp_path / "grub.cfg"
    cfg.write_text(GRUB_CFG)
    res = _entry(cfg, REL)
    assert res.returncode == 0, res.stderr
    # grub-reboot's form for an entry under "Advanced options"; not the recovery entry
    assert res.stdout.strip() == f"gnulinux-advanced-{UUID}>gnulinux-{REL}-advanced-{UUID}"
    assert _entry(cfg, "6.1.0-56-cloud-amd64").stdout.strip().endswith(
        f">gnulinux-6.1.0-56-cloud-amd64-advanced-{UUID}")
    missing = _entry(cfg, "6.18.0-1-amd64")
    assert missing.returncode == 1 and "no GRUB entry for Linux 6.18.0-1-amd64" in \
        missing.stderr


def _image(tmp_path: Path, version: str | None = "6.12.117-1~deb12u1") -> KernelImage:
    """A kernel laid out as the cache (or a build) leaves it, with small files."""
    root = tmp_path / "entry" / "root"
    boot = root / "boot"
    mods = root / "lib" / "modules" / REL
    (mods / "kernel" / "drivers" / "net").mkdir(parents=True)
    boot.mkdir(parents=True)
    (boot / f"vmlinuz-{REL}").write_bytes(b"kernel image")
    (boot / f"config-{REL}").write_text("CONFIG_IPV6_SEG6_LWTUNNEL=y\n")
    (mods / "modules.dep").write_text("kernel/drivers/net/virtio_net.ko.xz:\n")
    (mods / "kernel" / "drivers" / "net" / "virtio_net.ko.xz").write_bytes(b"xz")
    deb = tmp_path / "entry" / "linux-image.deb"
    deb.write_bytes(b"a deb")
    return KernelImage(name="linux-image-x", release=REL, image=str(boot / f"vmlinuz-{REL}"),
                       modules_dir=str(mods), sha256=kp.sha256_of(deb), version=version)


def _request(**settings: object) -> kp.KernelRequest:
    return kp.KernelRequest(testbed_file="lab.yaml", kernel_file="kernel-6.12.yaml",
                            key="--kernel", target=KernelTarget(package="linux-image-x"),
                            settings=KernelInstallSettings(**settings))  # type: ignore[arg-type]


def test_payload_holds_image_config_and_modules_owned_by_root(tmp_path: Path) -> None:
    image = _image(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    tar = kp.write_payload(image, out)
    with tarfile.open(tar) as t:
        names = set(t.getnames())
        assert {f"boot/vmlinuz-{REL}", f"boot/config-{REL}", f"lib/modules/{REL}/modules.dep",
                f"lib/modules/{REL}/kernel/drivers/net/virtio_net.ko.xz"} <= names
        assert all(m.uid == 0 and m.gid == 0 for m in t.getmembers())
    assert kp.deb_of(image) == tmp_path / "entry" / "linux-image.deb"


def test_a_damaged_cached_deb_is_refused(tmp_path: Path) -> None:
    image = _image(tmp_path)
    (tmp_path / "entry" / "linux-image.deb").write_bytes(b"another deb")
    with pytest.raises(kp.KernelInstallError, match="is not the .* recorded"):
        kp.deb_of(image)


def test_files_and_kexec_plan(tmp_path: Path) -> None:
    image = _image(tmp_path)
    tools = {"dpkg", "apt-get", "kexec", "depmod", "update-initramfs"}
    p = kp.plan(_request(install="files"), image, Path("/x/p.tar"), "ab" * 32, tools)
    assert (p.install, p.boot) == ("files", "kexec")    # auto: no grub-reboot here
    text = "\n".join(c for ph in p.phases for c in ph.commands)
    assert f"echo {'ab' * 32}'  '$WORKDIR/p.tar | sha256sum -c -" in text
    assert f"depmod {kp.shlex.quote(REL)}" in text and "update-initramfs -c -k" in text
    assert "undo" in text                                # unpacked files go on failure
    assert "kexec -l /boot/vmlinuz-" in text and "--reuse-cmdline" in text
    assert "grub" not in text and p.finish == ()
    assert [ph.name for ph in p.phases] == ["copy", "install (files)", "remove the payload",
                                            "arm: load it (kexec)"]


def test_deb_and_grub_plan_pins_the_old_kernel_first(tmp_path: Path) -> None:
    image = _image(tmp_path)
    tools = {"dpkg", "apt-get", "dpkg-database", "grub-reboot", "grub-set-default",
             "update-grub", "grub.cfg"}
    p = kp.plan(_request(), image, Path("/x/k.deb"), image.sha256, tools)
    assert (p.install, p.boot) == ("deb", "grub")
    names = [ph.name for ph in p.phases]
    assert names.index("pin the running kernel as the boot default (grub)") < \
        names.index("install (deb)") < names.index("arm: boot it once (grub)")
    pin = next(ph for ph in p.phases if ph.name.startswith("pin"))
    assert "GRUB_DEFAULT=saved" in pin.commands[0] and '"$(uname -r)"' in pin.commands[2]
    arm = next(ph for ph in p.phases if ph.name.startswith("arm"))
    assert "grub-reboot" in arm.commands[-1] and "grub-set-default" in p.finish[0]
    assert "apt-get install -y --no-install-recommends $WORKDIR/k.deb" in \
        "\n".join(next(ph for ph in p.phases if ph.name == "install (deb)").commands)


def test_a_sut_without_the_boot_method_is_refused_before_anything(tmp_path: Path) -> None:
    image = _image(tmp_path)
    with pytest.raises(kp.KernelInstallError) as err:
        kp.choose(_request(boot="grub"), image, {"kexec", "dpkg", "apt-get"})
    assert "lab.yaml: provision.kernel.boot = 'grub'" in str(err.value)
    assert "grub-reboot" in str(err.value) and "nothing was installed" in str(err.value)
    with pytest.raises(kp.KernelInstallError, match="provision.kernel.install"):
        kp.choose(_request(install="files"), image, {"kexec"})   # no depmod
    # busybox's dpkg applet on a system with no package database: files, not deb
    assert kp.choose(_request(), image, {"dpkg", "kexec", "depmod", "update-initramfs"}) \
        == ("files", "kexec")
    with pytest.raises(ConfigError) as cerr:    # a built kernel is no package
        kp.choose(_request(install="deb"), _image(tmp_path / "b", version=None), None)
    assert cerr.value.key == "provision.kernel.install" and cerr.value.value == "deb"


def test_reboot_command_returns_before_the_reboot() -> None:
    # no nohup (busybox has none): the shell ignores SIGHUP itself
    cmd = kp.reboot_command("kexec")
    assert cmd.startswith("sh -c 'trap ") and "HUP; sleep 1; " in cmd and "nohup" not in cmd
    assert "kexec -e" in kp.reboot_command("kexec") and "systemctl kexec" in \
        kp.reboot_command("kexec")
    assert "reboot" in kp.reboot_command("grub") and kp.reboot_command("grub").endswith("&")


# --- the testbed file and the command line --------------------------------------------

def _ssh_tb(tmp_path: Path, kernel: dict | None = None) -> Path:
    key = tmp_path / "key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)],
                   check=True)
    pub = (tmp_path / "key.pub").read_text().split()
    (tmp_path / "known_hosts").write_text(f"203.0.113.250 {pub[0]} {pub[1]}\n")
    data = {"name": "k4b-lab", "kind": "ssh", "prefix": "k4bl",
            "tester": {"driver": "linux", "tx": {"name": "t0"}, "rx": {"name": "t1"}},
            "sut": {"forwarder": "linux", "in": {"name": "s0"}, "out": {"name": "s1"},
                    "transport": {"kind": "ssh", "ssh": {
                        "host": "203.0.113.250", "key_file": str(key),
                        "known_hosts": str(tmp_path / "known_hosts")}}}}
    if kernel is not None:
        data["provision"] = {"kernel": kernel}
    path = tmp_path / "lab.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_bad_kernel_names_are_refused_naming_file_key_value(tmp_path: Path, capsys) -> None:
    tb = _ssh_tb(tmp_path)
    assert main(["provision", str(tb), "--kernel", "no-such-kernel", "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "--kernel" in err and "no-such-kernel" in err and "file not found" in err
    assert main(["provision", str(tb), "--kernel", str(tb), "--dry-run"]) == 2
    assert "a testbed of kind 'ssh': name a kernel testbed" in capsys.readouterr().err
    sub = tmp_path / "b"
    sub.mkdir()
    tb2 = _ssh_tb(sub, {"target": "missing.yaml"})
    assert main(["provision", str(tb2), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert str(tb2) in err and "provision.kernel.target" in err and "missing.yaml" in err


def test_a_bad_boot_method_is_refused_at_load(tmp_path: Path) -> None:
    tb = _ssh_tb(tmp_path, {"target": "kernel-6.12", "boot": "lilo"})
    with pytest.raises(ConfigError) as err:
        load_testbed(tb)
    assert "provision.kernel.boot" in str(err.value) and "lilo" in str(err.value)


def test_dry_run_prints_every_phase_and_touches_nothing(tmp_path: Path, capsys) -> None:
    """203.0.113.250 is nobody's address: a dry run must not even try to reach it."""
    tb = _ssh_tb(tmp_path, {"target": str(ROOT / "testbed" / "kernel-6.12.yaml")})
    assert main(["provision", str(tb), "--role", "sut", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "sut: kernel linux-image-6.12.117+deb12-cloud-amd64-unsigned" in out
    target = KernelTarget.from_mapping("k", load_testbed(ROOT / "testbed" /
                                                         "kernel-6.12.yaml").kernel)
    if kp.cached(target) is None:
        assert "not in the cache yet" in out
        return
    for line in ("- copy", "sha256sum -c -", "- install (deb)", "- pin the running kernel",
                 "- arm: boot it once (grub)", "- arm: load it (kexec)", "kexec -l /boot/",
                 "grub-reboot", "reboot (kexec)", "reboot (grub)",
                 "provision.kernel.reboot_timeout_s", "then (grub):"):
        assert line in out, line
