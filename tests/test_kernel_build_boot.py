"""A kernel built by ``srperf kernel build testbed/kernel-src.yaml`` boots as a kernel target.

The suite never builds a kernel (tens of CPU-minutes): this test boots the build of the
shipped recipe when the kernel cache has it, and is skipped (saying how to make it)
when it does not.  The built kernel must be the patched one (``uname -r`` ends in the
patch's ``-srperfpatch`` and the recipe's ``-srperf``), have what the fragment asked
(a VRF device, seg6's ``ip sr tunsrc`` set by the base setup), and its build record
must hold the hashes of the fragment and the patch as they are now.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from srperf.testbeds import registry as testbeds
from srperf.config.loader import load_testbed
from srperf.kernel import build as kb
from srperf.kernel.target import KernelTarget
from srperf.util.netns import netns_exists

pytestmark = [pytest.mark.netns, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "testbed" / "kernel-src.yaml"


def test_the_built_kernel_boots_as_a_kernel_target(tmp_path: Path) -> None:
    shipped = load_testbed(SHIPPED)
    target = KernelTarget.from_mapping(shipped.source, shipped.kernel)
    recipe = kb.BuildRecipe.from_mapping(target.source_file, target.build, target.cache_dir)
    try:
        image = kb.built_image(recipe)
    except kb.KernelBuildError as exc:
        pytest.skip(f"no build of {SHIPPED.name} in the kernel cache ({exc})")
    assert image.release.endswith("-srperfpatch-srperf"), image.release
    record = json.loads((Path(image.image).parents[2] / "build.json").read_text())
    assert record["hashes"]["patches"] == [kb.sha256_file(p) for p in recipe.patches]
    assert record["hashes"]["fragments"] == [kb.sha256_file(f) for f in recipe.fragment]

    data = yaml.safe_load(SHIPPED.read_text())
    data.update(name="k4b-built", prefix="k4bs")
    # the same recipe, from another directory: its files by absolute path
    data["kernel"]["build"]["fragment"] = [str(p) for p in recipe.fragment]
    data["kernel"]["build"]["patches"] = [str(p) for p in recipe.patches]
    path = tmp_path / "built.yaml"
    path.write_text(yaml.safe_dump(data))
    tb = testbeds.create(load_testbed(path))
    try:
        tb.up()
        sut = tb.node("sut")
        assert sut.check(["uname", "-r"]).stdout.strip() == image.release
        vrf = sut.run(["/sbin/ip", "link", "add", "k4bvrf", "type", "vrf", "table", "100"])
        assert vrf.ok, vrf.stderr   # CONFIG_NET_VRF=y, from the fragment
        env = tb.environment()
        assert env["kernel_target"]["kernel"]["sha256"] == image.sha256
    finally:
        tb.close()
        tb.down()
    assert not netns_exists("k4bs-tester")
