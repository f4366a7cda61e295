"""Kernel commands: ``srperf provision ... --kernel`` (install a named kernel on an SSH
SUT) and ``srperf kernel build`` (a kernel from source, for kernel targets).

Like every module of :mod:`srperf.cli`, this one prints.  Exit status of the
kernel step of ``provision``: 0 the SUT runs the kernel (``--check``: it does);
1 it does not (``--check``), or installing or booting it failed (the SUT then
still boots its old kernel); 2 bad input.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from srperf.cli.guard import EXIT_FAILED, EXIT_OK

if TYPE_CHECKING:
    from srperf.config.model import TestbedConfig
    from srperf.kernel.build import BuildRecipe
    from srperf.kernel.provision import KernelRequest
    from srperf.testbeds.base import Testbed


def kernel_request(config: "TestbedConfig", args: argparse.Namespace) -> "KernelRequest | None":
    """The kernel ``srperf provision`` installs (``--kernel`` or
    ``provision.kernel.target``); None: none named."""
    if args.kernel is None and not (config.provision or {}).get("kernel"):
        return None
    from srperf.kernel.provision import request

    return request(config, args.kernel)


def provision_kernel(args: argparse.Namespace, req: "KernelRequest", testbed: "Testbed") -> int:
    """The kernel step of ``srperf provision``: dry run, check, or install and reboot."""
    try:
        if args.dry_run:
            return _dry_run(req)
        return _check(req, testbed) if args.check else _install(req, testbed)
    finally:
        testbed.close()


def _dry_run(req: "KernelRequest") -> int:
    from pathlib import Path

    from srperf.kernel import provision as kp

    image = kp.cached(req.target)
    print(f"sut: kernel {req.target.name} from {req.kernel_file} (dry run: nothing is run)")
    if image is None:
        print("  not in the cache yet: fetched (apt-get download) when provisioning runs; "
              "its release and payload are known then")
        return EXIT_OK
    deb = image.version is not None and req.settings.install in ("auto", "deb")
    payload = Path(kp.deb_of(image) or "") if deb else \
        Path(f"srperf-kernel-{image.release}.tar")
    sha = image.sha256 if deb else "<SHA-256 of the tar, computed when it is written>"
    print(f"  release {image.release}, {image.name}, sha256 {image.sha256}")
    plan = kp.plan(req, image, payload, sha, tools=None)
    print(f"  look:    {kp.LOOK}")
    print(f"           (nothing to do when uname -r is {image.release}; install "
          f"{plan.install if req.settings.install != 'auto' else 'deb if the SUT has dpkg, apt-get and a package database, else files'}"
          f", boot {plan.boot if req.settings.boot != 'auto' else 'grub if the SUT has grub-reboot and ' + kp.GRUB_CFG + ', else kexec'})")
    for phase in plan.phases:
        print(f"  - {phase.name}")
        for command in phase.commands:
            print(f"    run:   {command}")
    for boot in (("grub", "kexec") if "|" in plan.boot else (plan.boot,)):
        print(f"  - reboot ({boot}): {kp.reboot_command(boot)}")
    print(f"  - wait until SSH answers with a new boot id (at most "
          f"{req.settings.reboot_timeout_s:g} s, provision.kernel.reboot_timeout_s), then "
          f"check uname -r = {image.release}")
    for command in plan.finish:
        print(f"  - then (grub): {command}")
    return EXIT_OK


def _check(req: "KernelRequest", testbed: "Testbed") -> int:
    from srperf.kernel import package
    from srperf.kernel.provision import look

    image = package.fetch(req.target)
    seen = look(testbed.node("sut"))
    if seen.release == image.release:
        print(f"  sut: kernel {image.release}: as described")
        return EXIT_OK
    print(f"  sut: kernel {image.release}: DIFFERS")
    print(f"    | the SUT runs {seen.release} ({req.kernel_file}: kernel {req.target.name})")
    return EXIT_FAILED


def _install(req: "KernelRequest", testbed: "Testbed") -> int:
    from srperf.kernel import package
    from srperf.kernel.provision import install

    image = package.fetch(req.target)
    node = testbed.node("sut")
    print(f"sut ({node.where}): kernel {image.name} ({image.release}, sha256 "
          f"{image.sha256[:16]}...)")
    claimed = testbed.claim("srperf provision --kernel")
    released = False

    def release() -> None:  # the lock's holder process dies with the old kernel
        nonlocal released
        if claimed and not released:
            testbed.unclaim()
            released = True

    try:
        out = install(req, image, node, lambda line: print(f"  {line}", flush=True),
                      before_reboot=release)
    finally:
        if not released:
            release()
    if out.changed:
        print(f"  sut: kernel {out.after}: done (was {out.before}; install {out.install}, "
              f"boot {out.boot}; SSH back {out.reboot_s:g} s after the reboot)")
    else:
        print(f"  sut: kernel {out.after}: already there")
    return EXIT_OK


def add_parsers(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    p = sub.add_parser("kernel", help="kernels for kernel targets: build one from source")
    ksub = p.add_subparsers(dest="kernel_command", required=True, metavar="SUBCOMMAND")
    b = ksub.add_parser("build", help="build the kernel a kernel testbed's kernel.build "
                        "block names (source, patch series, config fragment) into the "
                        "kernel cache")
    b.add_argument("testbed", metavar="KERNEL_TESTBED", help="a kernel testbed file or name")
    b.add_argument("--dry-run", action="store_true",
                   help="print the recipe's hashes and every command; build nothing")
    b.add_argument("--jobs", type=int, default=None, help="make -j (default: "
                   "kernel.build.jobs, else this host's CPU count)")
    b.add_argument("--keep-tree", action="store_true",
                   help="keep the patched, configured source tree after the build")


def cmd_kernel(args: argparse.Namespace) -> int:
    from srperf.config.loader import resolve_testbed
    from srperf.errors import ConfigError
    from srperf.kernel import build as kb
    from srperf.kernel.target import KernelTarget

    config = resolve_testbed(args.testbed)
    if config.kind != "kernel":
        raise ConfigError(config.source, "kind", config.kind,
                          "srperf kernel build takes a kernel testbed (kind kernel)")
    target = KernelTarget.from_mapping(config.source, config.kernel)
    if target.build is None:
        raise ConfigError(config.source, "kernel.build", None, "this kernel testbed names "
                          f"{target.name}: nothing to build (add a kernel.build block)")
    if args.jobs is not None and not 1 <= args.jobs <= 256:
        raise ConfigError("<command line>", "--jobs", args.jobs, "an integer, 1-256")
    recipe = kb.BuildRecipe.from_mapping(target.source_file, target.build, target.cache_dir)
    if args.dry_run:
        return _build_plan(recipe, args.jobs)
    record = kb.build(recipe, lambda line: print(f"  {line}", flush=True), jobs=args.jobs,
                      keep_tree=args.keep_tree)
    print(f"built {record.release} (build {record.build_id}, {record.build_s:g} s): image "
          f"sha256 {record.image_sha256}, .config sha256 {record.config_sha256}")
    print(f"  {kb.built_dir(recipe, record.build_id)}")
    return EXIT_OK


def _build_plan(recipe: "BuildRecipe", jobs: int | None) -> int:
    from pathlib import Path

    from srperf.kernel import build as kb

    if recipe.is_package:
        found = kb.cached_source(recipe)
        sha, deb = (found[1], str(found[0])) if found else (None, "<the fetched .deb>")
    else:
        sha, deb = kb.tree_hash(Path(recipe.source)), ""
    plan = kb.make_plan(recipe, sha, jobs, deb=deb)
    print(f"kernel build from {recipe.file} (dry run: nothing is built)")
    print(f"  source {recipe.source}" + (f"={recipe.version}" if recipe.version else "")
          + (f", sha256 {sha}" if sha else ": not fetched yet (apt-get download into "
             f"{kb.source_dir(recipe)}; its SHA-256 then completes the build id)"))
    for frag in recipe.fragment:
        print(f"  fragment {frag} sha256 {kb.sha256_file(frag)}")
    for patch in recipe.patches:
        print(f"  patch {patch} sha256 {kb.sha256_file(patch)}")
    print(f"  base config {recipe.base_config}, localversion {recipe.localversion}")
    print(f"  build id {plan.build_id or '(known once the source is fetched)'}: {plan.out}")
    for what, commands in plan.steps:
        print(f"  - {what}")
        for command in commands:
            print(f"    run:   {command}")
    print("  - check: every option the fragments set is set so in the final .config")
    return EXIT_OK


COMMANDS = {"kernel": cmd_kernel}

__all__ = ["COMMANDS", "add_parsers", "kernel_request", "provision_kernel"]
