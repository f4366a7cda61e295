#!/usr/bin/env python3
# The second independent read-gate probe (issue 44, i44q): run as root, it plants inputs
# that `nobody` controls under /tmp/q4q-probe and classifies each srperf outcome.
"""Independent probe (i44q): does srperf, as root, take anything `nobody` controls?

Each case plants an input another user (nobody) controls, runs one srperf command with
a 20 s timeout and classifies the outcome:
  ok       exit 2, message names the planted path (or its key), no traceback
  HIGH     exit 0 / went on to use it (accepted what nobody controls)
  hang     timeout
  raw      exit 1 with errno / traceback
  other    anything else (message not naming the file, wrong exit...)
"""
from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

WT = Path(__file__).resolve().parents[2]   # the checkout
SRPERF = str(WT / ".venv/bin/srperf")
BASE = Path("/tmp/q4q-probe")
NOBODY = pwd.getpwnam("nobody").pw_uid
NOGROUP = pwd.getpwnam("nobody").pw_gid

results: list[tuple[str, str, int, str]] = []


def fresh() -> None:
    if BASE.exists():
        shutil.rmtree(BASE)
    BASE.mkdir(mode=0o755)
    os.chmod(BASE, 0o755)
    (BASE / "good").mkdir(mode=0o755)
    nob = BASE / "nob"
    nob.mkdir()
    os.chown(nob, NOBODY, NOGROUP)
    ww = BASE / "ww"
    ww.mkdir()
    os.chmod(ww, 0o777)


def write(path: Path, text: str, owner: int = 0, mode: int = 0o644) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    os.chmod(path, mode)
    os.chown(path, owner, owner and NOGROUP)
    return path


def nob_symlink(link: Path, target: Path) -> Path:
    link.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, link)
    os.lchown(link, NOBODY, NOGROUP)
    return link


def fifo(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)
    return path


def variants(name: str, text: str, exe: bool = False) -> dict[str, Path]:
    """The ways nobody can control a file named NAME with TEXT; all planted fresh."""
    mode = 0o755 if exe else 0o644
    good = write(BASE / "good" / name, text, 0, mode)
    return {
        "nobody-owned": write(BASE / "good" / f"n-{name}", text, NOBODY, mode),
        "in-nobody-dir": write(BASE / "nob" / name, text, 0, mode),
        "world-writable": write(BASE / "good" / f"w-{name}", text, 0, mode | 0o002),
        "group-writable": write(BASE / "good" / f"g-{name}", text, 0, mode | 0o020),
        "in-ww-dir": write(BASE / "ww" / name, text, 0, mode),
        "nobody-symlink": nob_symlink(BASE / "good" / f"l-{name}", good),
        "fifo": fifo(BASE / "good" / f"f-{name}"),
    }


def run(case: str, argv: list[str], env: dict[str, str] | None = None,
        expect_ok_rc: tuple[int, ...] = (2,), needle: str | None = None,
        cwd: str | None = None) -> None:
    e = dict(os.environ)
    e.pop("SRPERF_RESULTS", None)
    e.setdefault("SRPERF_BUILD_DIR", str(WT / "build-cache"))
    if env:
        e.update(env)
    try:
        p = subprocess.Popen([SRPERF, *argv], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True, env=e, cwd=cwd or str(BASE), start_new_session=True)
        out, _ = p.communicate(timeout=20)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, 15)
        out, _ = p.communicate()
        rc = 124
        out = (out or "") + "TIMEOUT"
    if rc == 124:
        cls = "hang"
    elif "Traceback" in out or "Errno" in out:
        cls = "raw"
    elif rc in expect_ok_rc and (needle is None or needle in out):
        cls = "ok"
    elif rc == 0:
        cls = "HIGH?"
    else:
        cls = "other"
    results.append((case, cls, rc, out.strip().replace("\n", " | ")[:400]))
    print(f"{cls:6} rc={rc:3} {case}\n        {out.strip().splitlines()[-1][:300] if out.strip() else ''}",
          flush=True)


VIRTUAL = (WT / "testbed/virtual.yaml").read_text().replace("prefix: srp ", "prefix: q4q ")
assert "prefix: q4q" in VIRTUAL
SSH_TB = textwrap.dedent("""\
    name: p2ssh
    kind: ssh
    tester:
      driver: linux
      tx: {name: q4qx0, mac: "02:5e:00:00:01:01"}
      rx: {name: q4qx1, mac: "02:5e:00:00:02:01"}
      line_rate_pps: 100000
      cpu: 0
    sut:
      forwarder: linux
      in: {name: eth0, mac: "02:5e:00:00:01:02"}
      out: {name: eth1, mac: "02:5e:00:00:02:02"}
      transport:
        kind: ssh
        ssh:
          host: 127.0.0.1
          port: 1
          user: root
    %s
          timeout_s: 3
    """)
KH = f"      known_hosts: {BASE}/good/kh"
QUICK = (WT / "experiments/quick.yaml").read_text()


def main() -> None:
    fresh()
    write(BASE / "good/kh", "[127.0.0.1]:1 " + " ".join(
        Path("/tmp/q4q-hostkey.pub").read_text().split()[:2]) + "\n")
    write(BASE / "good/tb.yaml", SSH_TB % KH)
    write(BASE / "good/prov-nobody-owned.yaml", SSH_TB % KH)
    write(BASE / "good/v.yaml", VIRTUAL)
    write(BASE / "nob/tb.yaml", SSH_TB % KH, NOBODY)
    only = sys.argv[1:]

    def want(group: str) -> bool:
        return not only or group in only

    # 1. config files taken by validate / run / ab / nightly / testbed / provision
    if want("config"):
        for kind, text in (("testbed", VIRTUAL), ("experiment", QUICK)):
            for how, path in variants(f"{kind}.yaml", text).items():
                run(f"validate {kind} {how}", ["validate", str(path)], needle=str(path.name))
        tb = variants("tb.yaml", SSH_TB % KH)
        for how, path in tb.items():
            run(f"testbed status {how}", ["testbed", "status", str(path)], needle=path.name)
            run(f"run -t TESTBED {how}", ["run", "quick", "-t", str(path), "--results",
                                          str(BASE / "good/res")], needle=path.name)
            run(f"validate --testbed {how}", ["validate", str(WT / "experiments/quick.yaml"),
                                              "-t", str(path)], needle=path.name)
        for how, path in variants("exp.yaml", QUICK).items():
            run(f"run EXP {how}", ["run", str(path), "-t", str(BASE / "good/tb.yaml"),
                                   "--results", str(BASE / "good/res")], needle=path.name)
            run(f"ab FILE {how}", ["ab", str(path), "-t", str(BASE / "good/tb.yaml"),
                                   "--results", str(BASE / "good/res")], needle=path.name)
        # experiment whose testbed: key names a file nobody controls
        for how, path in tb.items():
            exp = write(BASE / "good" / f"exp-tb-{how}.yaml",
                        QUICK + f"testbed: {path}\n")
            run(f"experiment testbed: key {how}", ["validate", str(exp)], needle=path.name)
        # nightly suites
        for how, path in variants("suite.yaml", "name: s\nexperiments: [quick]\n"
                                  f"testbed: {BASE}/good/tb.yaml\n").items():
            run(f"nightly SUITE {how}", ["nightly", str(path)], needle=path.name)
            run(f"validate SUITE {how}", ["validate", str(path)], needle=path.name)
        for how, path in variants("sexp.yaml", QUICK).items():
            suite = write(BASE / "good" / f"suite-exp-{how}.yaml",
                          f"name: s\nexperiments: [{path}]\ntestbed: {BASE}/good/tb.yaml\n")
            run(f"nightly suite experiment {how}", ["validate", str(suite)], needle=path.name)
            run(f"nightly run suite experiment {how}", ["nightly", str(suite), "--results",
                                                       str(BASE / "good/res")], needle=path.name)
        for how, path in tb.items():
            suite = write(BASE / "good" / f"suite-tb-{how}.yaml",
                          f"name: s\nexperiments: [quick]\ntestbed: {path}\n")
            run(f"nightly suite testbed {how}", ["validate", str(suite)], needle=path.name)
        # shipped names resolved in a cwd nobody controls
        nd = BASE / "nob"
        write(nd / "quick", QUICK, NOBODY)
        write(nd / "virtual", VIRTUAL, NOBODY)
        run("name 'quick' with nobody's ./quick (cwd)", ["validate", "quick"], cwd=str(nd),
            expect_ok_rc=(0, 2))
        run("run -t virtual with nobody's ./virtual (cwd)",
            ["validate", str(WT / "experiments/quick.yaml"), "-t", "virtual"], cwd=str(nd),
            expect_ok_rc=(0, 2))
        # special files as config
        for sp in ("/dev/zero", "/proc/self/environ", "/dev/stdin"):
            run(f"validate {sp}", ["validate", sp], needle=sp)
        big = BASE / "good/huge.yaml"
        with open(big, "w") as f:
            f.truncate(1 << 40)
        run("validate 1TiB sparse", ["validate", str(big)], needle="huge.yaml")
        oneline = write(BASE / "good/oneline.yaml", "name: " + "x" * (8 << 20) + "\n")
        run("validate 8MiB one line", ["validate", str(oneline)], needle="oneline.yaml")
        os.unlink(big)

    # 2. ssh testbed: key_file, known_hosts
    if want("ssh"):
        for key in ("key_file", "known_hosts"):
            for how, path in variants(key, "junk\n").items():
                tbf = write(BASE / "good" / f"ssh-{key}-{how}.yaml",
                            SSH_TB % (f"      {key}: {path}" + ("" if key == "known_hosts" else "\n" + KH)))
                run(f"validate ssh {key} {how}", ["validate", str(tbf)], needle=path.name)
                run(f"testbed status ssh {key} {how}", ["testbed", "status", str(tbf)],
                    needle=path.name)
                run(f"testbed up ssh {key} {how}", ["testbed", "up", str(tbf)],
                    needle=path.name)

    # 3. programs a testbed names
    if want("programs"):
        for how, path in variants("vpp", "#!/bin/sh\ntouch /tmp/q4q-probe/PWNED-vpp\n",
                                  exe=True).items():
            tbf = write(BASE / "good" / f"vpp-{how}.yaml",
                        VIRTUAL.replace("forwarder: linux", f"forwarder: vpp\n  vpp_binary: {path}"))
            run(f"validate sut.vpp_binary {how}", ["validate", str(tbf)], needle=path.name)
            run(f"testbed up vpp_binary {how}", ["testbed", "up", str(tbf)], needle=path.name)
            if results[-1][1] != "ok":
                subprocess.run([SRPERF, "testbed", "down", str(tbf)], capture_output=True, timeout=60)
        # TRex release / client_path trees
        for key in ("release", "client_path"):
            for how in ("nobody-dir", "nobody-file-inside", "ww-dir", "nobody-symlink-inside"):
                d = BASE / "good" / f"trex-{key}-{how}"
                d.mkdir()
                f = write(d / ("t-rex-64" if key == "release" else "trex/__init__.py"),
                          "#!/bin/sh\ntouch /tmp/q4q-probe/PWNED-trex\n", 0, 0o755)
                if how == "nobody-dir":
                    os.chown(d, NOBODY, NOGROUP)
                elif how == "nobody-file-inside":
                    os.chown(f, NOBODY, NOGROUP)
                elif how == "ww-dir":
                    os.chmod(d, 0o777)
                else:
                    nob_symlink(d / "evil", BASE / "nob")
                text = (WT / "testbed/trex.yaml").read_text().replace(
                    "release: /opt/trex/v3.04", f"release: {d}" if key == "release" else
                    "release: /opt/trex/v3.04").replace(
                    "# client_path: /opt/trex/v3.04/automation/trex_control_plane/interactive",
                    f"client_path: {d}" if key == "client_path" else "")
                text = text.replace("tester.example.org", "127.0.0.1").replace(
                    "sut.example.org", "127.0.0.1")
                tbf = write(BASE / "good" / f"trex-{key}-{how}.yaml", text)
                run(f"validate trex {key} {how}", ["validate", str(tbf)], needle=d.name)
                run(f"testbed status trex {key} {how}", ["testbed", "status", str(tbf)],
                    needle=d.name)
                run(f"testbed up trex {key} {how}", ["testbed", "up", str(tbf)], needle=d.name)
        # provision.kernel.target in a testbed's provision block
        ktb = (WT / "testbed/kernel-6.12.yaml").read_text()
        for how, path in variants("ktarget.yaml", ktb).items():
            tbf = write(BASE / "good" / f"prov-{how}.yaml",
                        SSH_TB % KH + f"provision:\n  kernel:\n    target: {path}\n")
            run(f"validate provision.kernel.target {how}", ["validate", str(tbf)],
                needle=path.name)
            run(f"provision --dry-run kernel.target {how}", ["provision", str(tbf), "--dry-run"],
                needle=path.name)
            run(f"provision --kernel FILE --dry-run {how}",
                ["provision", str(BASE / "good" / f"prov-{how}.yaml"), "--kernel", str(path),
                 "--dry-run"], needle=path.name)
            run(f"provision --kernel FILE --check {how}",
                ["provision", str(BASE / "good" / f"prov-{how}.yaml"), "--kernel", str(path),
                 "--check"], needle=path.name)

    # 4. kernel build inputs and cache
    if want("kernel"):
        src = BASE / "good/ksrc"
        (src / "arch").mkdir(parents=True)
        write(src / "Makefile", "all:\n\ttouch /tmp/q4q-probe/PWNED-make\n")
        write(src / "Kconfig", "mainmenu \"x\"\n")
        kdir = BASE / "good/kd"
        patch = write(kdir / "p.patch", "")
        frag = write(kdir / "f.config", "CONFIG_IPV6=y\n")
        base = write(kdir / "base.config", "CONFIG_X=y\n")

        def ktb_text(source: str, p: str, fr: str, bc: str, cache: str | None = None) -> str:
            t = (WT / "testbed/kernel-src.yaml").read_text()
            t = t.replace("source: linux-source-6.1", f"source: {source}")
            t = t.replace("base_config: defconfig", f"base_config: {bc}")
            t = t.replace("fragment: [kernel-src/srv6.config]", f"fragment: [{fr}]")
            t = t.replace("patches: [kernel-src/0001-srperf-localversion.patch]", f"patches: [{p}]")
            if cache:
                t = t.replace("kernel:\n", f"kernel:\n  cache_dir: {cache}\n", 1)
            return t

        cases = {}
        for how, path in variants("p.patch", "").items():
            cases[f"patch {how}"] = ktb_text(str(src), str(path), str(frag), str(base))
        for how, path in variants("f.config", "CONFIG_IPV6=y\n").items():
            cases[f"fragment {how}"] = ktb_text(str(src), str(patch), str(path), str(base))
        for how, path in variants("b.config", "CONFIG_X=y\n").items():
            cases[f"base_config {how}"] = ktb_text(str(src), str(patch), str(frag), str(path))
        # source trees
        for how in ("nobody-dir", "nobody-makefile", "ww-subdir", "nobody-symlink",
                    "root-symlink-out", "fifo-inside", "in-nobody-dir"):
            s = BASE / "good" / f"src-{how}"
            if how == "in-nobody-dir":
                s = BASE / "nob" / "src"
            shutil.copytree(src, s)
            if how == "nobody-dir":
                os.chown(s, NOBODY, NOGROUP)
            elif how == "nobody-makefile":
                os.chown(s / "Makefile", NOBODY, NOGROUP)
            elif how == "ww-subdir":
                os.chmod(s / "arch", 0o777)
            elif how == "nobody-symlink":
                nob_symlink(s / "arch/lnk", s / "Makefile")
            elif how == "root-symlink-out":
                write(BASE / "nob/Evil", "all:\n", NOBODY)
                os.symlink(BASE / "nob/Evil", s / "arch/Makefile")
            elif how == "fifo-inside":
                os.mkfifo(s / "arch/pipe")
            cases[f"source {how}"] = ktb_text(str(s), str(patch), str(frag), str(base))
        # cache dirs
        cd_nob = BASE / "nob/cache"
        cd_ww = BASE / "ww/cache"
        cd_lnk = BASE / "good/cachelink"
        nob_symlink(cd_lnk, BASE / "good")
        cd_nobowned = BASE / "good/nobcache"
        cd_nobowned.mkdir()
        os.chown(cd_nobowned, NOBODY, NOGROUP)
        for how, cd in (("in-nobody-dir", cd_nob), ("in-ww-dir", cd_ww),
                        ("nobody-symlink", cd_lnk), ("nobody-owned", cd_nobowned),
                        ("world-writable-/tmp", Path("/tmp"))):
            cases[f"cache_dir {how}"] = ktb_text(str(src), str(patch), str(frag), str(base),
                                                 str(cd))
        for label, text in cases.items():
            tbf = write(BASE / "good" / f"k-{label.replace(' ', '_')}.yaml", text)
            run(f"validate kernel {label}", ["validate", str(tbf)])
            run(f"kernel build --dry-run {label}", ["kernel", "build", str(tbf), "--dry-run"])
            run(f"testbed up kernel {label}", ["testbed", "up", str(tbf)])
        # kernel.image / modules_dir (a kernel built elsewhere)
        img = write(BASE / "good/vmlinuz", "x" * 4096)
        mods = BASE / "good/mods/6.1.0"
        mods.mkdir(parents=True)
        write(mods / "modules.dep", "")
        kimg = {}
        for how, path in variants("vmlinuz", "x" * 4096).items():
            kimg[f"image {how}"] = (path, mods)
        for how in ("nobody-dir", "nobody-file"):
            m = BASE / "good" / f"mods-{how}/6.1.0"
            m.mkdir(parents=True)
            f = write(m / "modules.dep", "")
            os.chown(m if how == "nobody-dir" else f, NOBODY, NOGROUP)
            kimg[f"modules_dir {how}"] = (img, m)
        for label, (im, md) in kimg.items():
            t = (WT / "testbed/kernel-6.12.yaml").read_text().replace(
                "  package: linux-image-6.12.117+deb12-cloud-amd64-unsigned",
                f"  image: {im}\n  modules_dir: {md}")
            tbf = write(BASE / "good" / f"ki-{label.replace(' ', '_')}.yaml", t)
            run(f"validate kernel {label}", ["validate", str(tbf)])
            run(f"testbed up kernel {label}", ["testbed", "up", str(tbf)])
            run(f"provision --kernel --dry-run {label}",
                ["provision", str(BASE / "good/prov-nobody-owned.yaml"), "--kernel", str(tbf),
                 "--dry-run"])

    # 5. env dirs: SRPERF_BUILD_DIR, SRPERF_LOG_DIR
    if want("env"):
        lnk = BASE / "good/bdlink"
        nob_symlink(lnk, BASE / "good")
        nobowned = BASE / "good/nobdir"
        nobowned.mkdir()
        os.chown(nobowned, NOBODY, NOGROUP)
        fif = fifo(BASE / "good/bdfifo")
        for var in ("SRPERF_BUILD_DIR", "SRPERF_LOG_DIR"):
            for how, d in (("in-nobody-dir", BASE / "nob/b"), ("in-ww-dir", BASE / "ww/b"),
                           ("nobody-symlink", lnk), ("nobody-owned", nobowned),
                           ("fifo", fif), ("/tmp", Path("/tmp")), ("relative", Path("rel/b"))):
                argv = ["build"] if var == "SRPERF_BUILD_DIR" else \
                    ["runs", "--results", "/nonexistent/\x01"]
                run(f"{var} {how} ({argv[0]})", argv, env={var: str(d)})
                if var == "SRPERF_BUILD_DIR":
                    run(f"{var} {how} (run)", ["run", "quick", "-t", str(BASE / "good/tb.yaml"), "--results",
                                               str(BASE / "good/res")], env={var: str(d)})

    # 6. results stores and outputs
    if want("results"):
        for how, path in variants("srperf.sqlite", "").items():
            for cmd in (["runs"], ["report", "last"], ["trend"], ["compare", "a", "b"],
                        ["export", "last"]):
                run(f"{cmd[0]} --db {how}", [*cmd, "--db", str(path)], expect_ok_rc=(2,))
        nres = BASE / "nob/res"
        nres.mkdir()
        os.chown(nres, NOBODY, NOGROUP)
        run("runs --results nobody dir", ["runs", "--results", str(nres)])
        run("runs SRPERF_RESULTS nobody dir", ["runs"], env={"SRPERF_RESULTS": str(nres)})
        run("trend --html into nobody dir", ["trend", "--html", str(BASE / "nob/t.html"),
                                             "--results", str(BASE / "good/res2")])
        run("report -o into nobody dir", ["report", "last", "-o", str(BASE / "nob/r.html"),
                                          "--results", str(BASE / "good/res2")])
        run("export -o nobody symlink", ["export", "last", "-o", str(
            nob_symlink(BASE / "good/exp.csv", Path("/etc/passwdx"))), "--results",
            str(BASE / "good/res2")])


    # 7. TRex with a LOCAL tester (no tester transport), fixed known_hosts; the key as needle
    if want("trex"):
        for key in ("release", "client_path"):
            for how in ("nobody-dir", "nobody-file-inside", "ww-dir", "nobody-symlink-inside",
                        "in-nobody-dir", "missing-in-nobody-dir"):
                d = BASE / "good" / f"ltrex-{key}-{how}"
                if how in ("in-nobody-dir", "missing-in-nobody-dir"):
                    d = BASE / "nob" / f"ltrex-{key}"
                if how != "missing-in-nobody-dir":
                    d.mkdir()
                    f = write(d / ("t-rex-64" if key == "release" else "trex/__init__.py"),
                              "#!/bin/sh\ntouch /tmp/q4q-probe/PWNED-trex\n", 0, 0o755)
                    if key == "release":
                        write(d / "_t-rex-64", "#!/bin/sh\ntouch /tmp/q4q-probe/PWNED-trex\n", 0, 0o755)
                if how == "nobody-dir":
                    os.chown(d, NOBODY, NOGROUP)
                elif how == "nobody-file-inside":
                    os.chown(f, NOBODY, NOGROUP)
                elif how == "ww-dir":
                    os.chmod(d, 0o777)
                elif how == "nobody-symlink-inside":
                    nob_symlink(d / "evil", BASE / "nob")
                text = textwrap.dedent(f"""\
                    name: ltrex
                    kind: ssh
                    tester:
                      driver: trex
                      tx: {{name: trex0, mac: "02:5e:00:00:01:01"}}
                      rx: {{name: trex1, mac: "02:5e:00:00:02:01"}}
                      line_rate_pps: 14880000
                      options:
                        server: 127.0.0.1
                        sync_port: 1
                        async_port: 2
                        {key}: {d}
                        interfaces: ["0000:03:00.0", "0000:03:00.1"]
                    sut:
                      forwarder: linux
                      in: {{name: enp1s0f0, mac: "02:5e:00:00:01:02"}}
                      out: {{name: enp1s0f1, mac: "02:5e:00:00:02:02"}}
                      transport:
                        kind: ssh
                        ssh:
                          host: 127.0.0.1
                          port: 1
                          user: root
                    {KH.strip()}
                          timeout_s: 3
                    """).replace("\nknown_hosts", "\n      known_hosts")
                tbf = write(BASE / "good" / f"ltrex-{key}-{how}.yaml", text)
                nd = f"tester.options.{key}"
                run(f"validate local trex {key} {how}", ["validate", str(tbf)], needle=nd)
                run(f"testbed status local trex {key} {how}", ["testbed", "status", str(tbf)],
                    needle=nd)
                run(f"testbed up local trex {key} {how}", ["testbed", "up", str(tbf)], needle=nd)
                run(f"run local trex {key} {how}", ["run", "quick", "-t", str(tbf), "--results",
                                                     str(BASE / "good/res")], needle=nd)
                if results[-2][1] != "ok":
                    subprocess.run([SRPERF, "testbed", "down", str(tbf)], capture_output=True,
                                   timeout=60)

    # 8. odd config content and other surfaces
    if want("extra"):
        bomb = "a: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(
            f"{chr(98+i)}: &{chr(98+i)} [*{chr(97+i)},*{chr(97+i)},*{chr(97+i)},*{chr(97+i)},"
            f"*{chr(97+i)},*{chr(97+i)},*{chr(97+i)},*{chr(97+i)},*{chr(97+i)}]\n" for i in range(9))
        b = write(BASE / "good/bomb.yaml", "name: bomb\nbehaviors: [ipv6]\n" + bomb)
        run("validate YAML alias bomb", ["validate", str(b)], needle="bomb.yaml")
        b2 = write(BASE / "good/bomb2.yaml", QUICK + "search:\n  x: " + "[" * 50000 + "]" * 50000 + "\n")
        run("validate 50000-deep list", ["validate", str(b2)], needle="bomb2.yaml")
        b3 = write(BASE / "good/tag.yaml", "name: !!python/object/apply:os.system ['touch /tmp/q4q-probe/PWNED-yaml']\n")
        run("validate python tag", ["validate", str(b3)], needle="tag.yaml")
        b4 = write(BASE / "good/bin.yaml", "\xff\xfe\x00garbage")
        run("validate binary", ["validate", str(b4)], needle="bin.yaml")
        b5 = write(BASE / "good/sb.yaml", QUICK + "imix: " + "x" * 100 + "\n")
        run("validate imix word", ["validate", str(b5)], needle="sb.yaml")
        ntb = BASE / "nob/tb.yaml"
        run("run --set testbed=nobody's", ["validate", str(WT / "experiments/quick.yaml")])
        run("run quick --set testbed=nobody file", ["run", "quick", "--set", f"testbed={ntb}",
                                                    "--results", str(BASE / "good/res")],
            needle="tb.yaml")
        # nightly suite dirs
        for what in ("results", "reports"):
            d = BASE / "nob" / f"n-{what}"
            d.mkdir(exist_ok=True)
            os.chown(d, NOBODY, NOGROUP)
            suite = write(BASE / "good" / f"suite-{what}.yaml",
                          f"name: s\nexperiments: [quick]\ntestbed: {BASE}/good/tb.yaml\n{what}: {d}\n")
            run(f"nightly suite {what}: nobody dir", ["nightly", str(suite)], needle=str(d))
            run(f"validate suite {what}: nobody dir", ["validate", str(suite)], needle=str(d),
                expect_ok_rc=(0, 2))
        ndb = write(BASE / "nob/db.sqlite", "", NOBODY)
        run("runs SRPERF_DB nobody sqlite", ["runs"], env={"SRPERF_DB": str(ndb)})
        run("runs SRPERF_DB sqlite:/// nobody", ["runs"], env={"SRPERF_DB": f"sqlite:///{ndb}"})
        run("runs --db sqlite:/// nobody", ["runs", "--db", f"sqlite:///{ndb}"])
        run("runs --db fifo", ["runs", "--db", str(fifo(BASE / "good/db.fifo"))])
        # testbed trust writes known_hosts
        for how in ("nobody-owned", "in-nobody-dir", "nobody-symlink"):
            path = {"nobody-owned": BASE / "good/n-kh2", "in-nobody-dir": BASE / "nob/kh2",
                    "nobody-symlink": BASE / "good/l-kh2"}[how]
            if how == "nobody-symlink":
                nob_symlink(path, Path("/etc/q4q-should-not-exist"))
            else:
                write(path, "", NOBODY if how == "nobody-owned" else 0)
            tbf = write(BASE / "good" / f"trust-{how}.yaml", SSH_TB % f"      known_hosts: {path}")
            run(f"testbed trust known_hosts {how}", ["testbed", "trust", str(tbf)],
                needle=path.name)
            run(f"testbed prepare --dry-run known_hosts {how}",
                ["testbed", "prepare", str(tbf), "--dry-run"], needle=path.name)
        # provision cloudlab -o into nobody's dir / through nobody's symlink
        run("provision cloudlab -o nobody dir", ["provision", "cloudlab", "-o",
                                                 str(BASE / "nob/profile.py")])
        run("provision cloudlab -o nobody symlink", ["provision", "cloudlab", "-o", str(
            nob_symlink(BASE / "good/prof.py", Path("/etc/q4q-x")))])
        # conform / pdr with nobody's testbed
        run("conform -t nobody testbed", ["conform", "-t", str(ntb)], needle="tb.yaml")
        run("pdr -t nobody testbed", ["pdr", "-t", str(ntb)], needle="tb.yaml")
        # vpp_binary root-owned, vppctl beside it nobody's
        vd = BASE / "good/vppdir"
        write(vd / "vpp", "#!/bin/sh\nexit 1\n", 0, 0o755)
        write(vd / "vppctl", "#!/bin/sh\ntouch /tmp/q4q-probe/PWNED-vppctl\n", NOBODY, 0o755)
        tbf = write(BASE / "good/vppctl.yaml",
                    VIRTUAL.replace("forwarder: linux", f"forwarder: vpp\n  vpp_binary: {vd}/vpp"))
        run("validate vppctl beside vpp nobody's", ["validate", str(tbf)], needle="vppctl")
        # options.vppctl in an experiment on the virtual testbed
        exp = write(BASE / "good/vppctl-exp.yaml", QUICK.replace("forwarder: linux", "forwarder: vpp")
                    + f"options:\n  vppctl: {vd}/vppctl\n")
        run("validate options.vppctl nobody's", ["validate", str(exp)], needle="vppctl")
        run("run options.vppctl nobody's", ["run", str(exp), "-t", str(BASE / "good/v.yaml"),
                                            "--results", str(BASE / "good/res")], needle="vppctl")
    print("\nSUMMARY")
    from collections import Counter
    c = Counter(r[1] for r in results)
    print(f"cases {len(results)}: " + ", ".join(f"{k} {v}" for k, v in sorted(c.items())))
    with open(Path("/tmp/read_probe2-results.tsv"), "a") as f:
        for r in results:
            f.write("\t".join(map(str, r)) + "\n")
    pw = list(BASE.glob("PWNED*"))
    print("PWNED files:", pw)


if __name__ == "__main__":
    main()
