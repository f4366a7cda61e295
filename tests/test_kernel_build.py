"""srperf kernel build: the recipe's checks (file, key, value), its hashes and build id, the
plan, the fragment check against a final .config, and the build itself up to a patch that
does not apply (on a small source tree made here: no kernel is compiled in the suite)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from srperf.cli.entry import main
from srperf.errors import ConfigError
from srperf.kernel import build as kb
from srperf.kernel.target import KernelTarget

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "testbed" / "kernel-src.yaml"
PATCH = ROOT / "testbed" / "kernel-src" / "0001-srperf-localversion.patch"
FRAGMENT = ROOT / "testbed" / "kernel-src" / "srv6.config"


def _recipe(tmp_path: Path, **block: object) -> kb.BuildRecipe:
    data = {"source": "linux-source-6.1", "fragment": [str(FRAGMENT)],
            "patches": [str(PATCH)], **block}
    return kb.BuildRecipe.from_mapping(str(tmp_path / "tb.yaml"), data, str(tmp_path / "c"))


def _tree(tmp_path: Path) -> Path:
    tree = tmp_path / "linux"
    tree.mkdir()
    (tree / "Makefile").write_text("VERSION = 6\n")
    (tree / "Kconfig").write_text("mainmenu \"Linux\"\n")
    return tree


@pytest.mark.parametrize("block, key", [
    ({"source": "linux-6.1"}, "kernel.build.source"),
    ({"source": "/nonexistent/linux"}, "kernel.build.source"),
    ({"version": "6.1 192"}, "kernel.build.version"),
    ({"base_config": "mydefconfig"}, "kernel.build.base_config"),
    ({"fragment": ["missing.config"]}, "kernel.build.fragment[0]"),
    ({"patches": {"a": 1}}, "kernel.build.patches"),
    ({"patches": [str(PATCH), "0002-missing.patch"]}, "kernel.build.patches[1]"),
    ({"localversion": "srperf"}, "kernel.build.localversion"),
    ({"jobs": -1}, "kernel.build.jobs"),
    ({"flavour": "cloud"}, "kernel.build.flavour"),
])
def test_a_bad_recipe_is_refused_naming_the_key(tmp_path: Path, block, key) -> None:
    with pytest.raises(ConfigError) as err:
        _recipe(tmp_path, **block)
    assert err.value.key == key and str(tmp_path / "tb.yaml") in str(err.value)


def test_a_fragment_line_that_is_no_kconfig_is_named_by_file_and_line(tmp_path: Path) -> None:
    frag = tmp_path / "bad.config"
    frag.write_text("CONFIG_IPV6=y\nIPV6_SEG6_LWTUNNEL=y\n")
    with pytest.raises(ConfigError) as err:
        _recipe(tmp_path, fragment=[str(frag)])
    assert err.value.key == "kernel.build.fragment[0]" and err.value.value == f"{frag}:2"


def test_a_kernel_block_names_one_kernel(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="exactly one of package"):
        KernelTarget.from_mapping(str(tmp_path / "tb.yaml"), {
            "package": "linux-image-6.1.0-56-cloud-amd64-unsigned",
            "build": {"source": "linux-source-6.1"}})
    target = KernelTarget.from_mapping(str(SHIPPED), {"build": {"source": "linux-source-6.1"}})
    assert target.name == "built from linux-source-6.1"


def test_the_build_id_changes_with_every_input(tmp_path: Path) -> None:
    r = _recipe(tmp_path)
    base = kb.recipe_hashes(r, "aa" * 32)
    assert kb.recipe_hashes(_recipe(tmp_path), "aa" * 32).build_id == base.build_id
    assert kb.recipe_hashes(r, "bb" * 32).build_id != base.build_id          # source
    assert kb.recipe_hashes(_recipe(tmp_path, localversion="-x"), "aa" * 32).build_id \
        != base.build_id
    assert kb.recipe_hashes(_recipe(tmp_path, base_config="tinyconfig"), "aa" * 32).build_id \
        != base.build_id
    patch = tmp_path / "p.patch"
    patch.write_bytes(PATCH.read_bytes())
    frag = tmp_path / "f.config"
    frag.write_bytes(FRAGMENT.read_bytes())
    same = kb.recipe_hashes(_recipe(tmp_path, patches=[str(patch)], fragment=[str(frag)]),
                            "aa" * 32)
    assert same.build_id == base.build_id            # content, not the file's name
    patch.write_bytes(PATCH.read_bytes().replace(b"-srperfpatch", b"-srperfpatck"))
    assert kb.recipe_hashes(_recipe(tmp_path, patches=[str(patch)], fragment=[str(frag)]),
                            "aa" * 32).build_id != base.build_id
    two = kb.recipe_hashes(_recipe(tmp_path, patches=[str(PATCH), str(patch)]), "aa" * 32)
    swapped = kb.recipe_hashes(_recipe(tmp_path, patches=[str(patch), str(PATCH)]), "aa" * 32)
    assert two.build_id != swapped.build_id          # a series is ordered
    frag.write_text("CONFIG_NET_VRF=m\n")
    assert kb.recipe_hashes(_recipe(tmp_path, fragment=[str(frag)]), "aa" * 32).build_id \
        != base.build_id


def test_tree_hash_is_the_commit_and_any_change(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    assert kb.tree_hash(tree).startswith("files:")
    git = ["git", "-C", str(tree), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "base"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    assert kb.tree_hash(tree) == f"git:{head}"
    (tree / "Makefile").write_text("VERSION = 7\n")
    assert kb.tree_hash(tree).startswith(f"git:{head}+diff:")


def test_unmet_options_are_the_ones_kconfig_dropped() -> None:
    config = "CONFIG_IPV6=y\nCONFIG_NET_VRF=m\n# CONFIG_VETH is not set\nCONFIG_HZ=250\n"
    asked = {"CONFIG_IPV6": "y", "CONFIG_NET_VRF": "y", "CONFIG_VETH": "y", "CONFIG_HZ": "250",
             "CONFIG_KEXEC": "n", "CONFIG_LWTUNNEL": "y"}
    assert kb.unmet_options(asked, config) == {"CONFIG_NET_VRF": "m", "CONFIG_VETH": "not set",
                                               "CONFIG_LWTUNNEL": "not set"}


def test_the_plan_applies_the_series_in_order_then_configures(tmp_path: Path) -> None:
    other = tmp_path / "0002.patch"
    other.write_text(PATCH.read_text())
    plan = kb.make_plan(_recipe(tmp_path, patches=[str(PATCH), str(other)]), "aa" * 32, jobs=2,
                        deb="/c/linux-source-6.1.deb")
    assert [what for what, _ in plan.steps] == ["unpack the source", "apply the patch series",
                                                "configure", "build (nice -n 19)",
                                                "install into the cache"]
    patches = dict(plan.steps)["apply the patch series"]
    assert patches == [f"patch -p1 --forward --batch -i {PATCH}",
                       f"patch -p1 --forward --batch -i {other}"]
    configure = dict(plan.steps)["configure"]
    assert configure[0].endswith("-j2 defconfig") and "merge_config.sh -m .config" in configure[1]
    assert plan.out.endswith(f"/built/{plan.build_id}") and len(plan.build_id or "") == 16


def test_kernel_build_dry_run_and_refusals(capsys) -> None:
    assert main(["kernel", "build", str(SHIPPED), "--dry-run"]) == 0
    out = capsys.readouterr().out
    for text in ("apply the patch series", "0001-srperf-localversion.patch sha256 ",
                 "merge_config.sh", "nice -n 19 make", "modules_install"):
        assert text in out, text
    assert main(["kernel", "build", "kernel-6.1", "--dry-run"]) == 2
    assert "kernel.build" in capsys.readouterr().err
    assert main(["kernel", "build", "virtual"]) == 2
    assert "kind = 'virtual'" in capsys.readouterr().err


def test_a_recipe_not_built_yet_says_how_to_build_it(tmp_path: Path) -> None:
    with pytest.raises(kb.KernelBuildError, match="srperf kernel build"):
        kb.built_image(_recipe(tmp_path))
    tree = _tree(tmp_path)
    with pytest.raises(kb.KernelBuildError, match="not in .*srperf kernel build"):
        kb.built_image(_recipe(tmp_path, source=str(tree)))


def test_a_patch_that_does_not_apply_stops_the_build_naming_it(tmp_path: Path) -> None:
    if kb.missing_tools():
        pytest.skip(f"no {kb.missing_tools()} here (scripts/install.sh installs them)")
    tree = _tree(tmp_path)
    (tree / "localversion-srperf").write_text("-already\n")   # the patch creates this file
    recipe = _recipe(tmp_path, source=str(tree))
    with pytest.raises(kb.KernelBuildError) as err:
        kb.build(recipe, lambda line: None)
    text = str(err.value)
    assert "apply the patch series" in text and str(PATCH) in text
    # nothing half-built is left in the cache: no build, no work tree
    assert not list((tmp_path / "c" / "built").glob("*"))
    assert not list((tmp_path / "c" / "build-work").glob("*"))
