"""A kernel built from source with a patch series and a config fragment, for kernel targets.

A kernel testbed's ``kernel.build`` block names the recipe::

    kernel:
      build:
        source: linux-source-6.1        # Debian's source package, or /path/to/a/tree
        # version: 6.1.192-2            # pin the package's version
        base_config: defconfig          # defconfig | tinyconfig | allnoconfig | a .config file
        fragment: [kernel-src/srv6.config]    # merged in order (merge_config.sh)
        patches: [kernel-src/0001-localversion.patch]   # applied in order, patch -p1
        localversion: -srperf           # appended to the release (uname -r)

``srperf kernel build FILE`` fetches the source once (``apt-get download``, cached
with its SHA-256, like kernel packages), unpacks it, applies the patches in order,
makes the base config, merges the fragments, checks that every option the fragments
set is set in the final ``.config`` (an option whose dependencies are missing is
dropped silently by Kconfig: here it is an error naming the fragment, its line and
the option), builds ``bzImage`` and the modules (``nice -n 19``), installs the modules
and writes ``CACHE/built/BUILD_ID/``: ``root/boot/vmlinuz-RELEASE`` (with its config
and System.map), ``root/lib/modules/RELEASE`` (indexed by depmod) and ``build.json``.

BUILD_ID is a hash of the recipe: the source's SHA-256, the base config, each
fragment's and each patch's SHA-256 (in order), the local version and the recipe
version of this module.  A kernel testbed naming the same recipe boots that build
(:func:`built_image`), and ``srperf provision --kernel`` installs it; ``build.json``
records every hash, the final ``.config``'s SHA-256, the image's, the release and
how long the build took, and goes with every run's environment.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shlex
import shutil
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from srperf.safety import read_gate, safe_paths
from srperf.errors import ConfigError, SrperfError
from srperf.kernel.image import KernelImage, sha256_file

log = logging.getLogger(__name__)

RECIPE_VERSION = 1
"""Changes when the way a recipe becomes a kernel changes (a new BUILD_ID then)."""
BASE_CONFIGS = ("defconfig", "tinyconfig", "allnoconfig")
BUILD_TOOLS = ("make", "gcc", "bc", "bison", "flex", "patch", "xz", "perl")
"""Programs a build needs on this host (Debian: build-essential bc bison flex libelf-dev
libssl-dev xz-utils patch)."""
_SOURCE_PACKAGE = re.compile(r"^linux-source-[0-9]+\.[0-9]+\Z")
_VERSION = re.compile(r"^[A-Za-z0-9.+~:-]+\Z")
_LOCALVERSION = re.compile(r"^-[A-Za-z0-9._+]{0,40}\Z")
_FRAGMENT_LINE = re.compile(
    r'^(?:(CONFIG_[A-Za-z0-9_]+)=(y|m|n|"[^"]*"|-?[0-9]+|0x[0-9a-fA-F]+)'
    r'|# (CONFIG_[A-Za-z0-9_]+) is not set|#.*|)\s*\Z')
KEYS = ("source", "version", "base_config", "fragment", "patches", "localversion", "jobs")


class KernelBuildError(SrperfError):
    """A kernel could not be built from its recipe."""


@dataclass(frozen=True)
class BuildRecipe:
    """What ``kernel.build`` names, paths resolved against the testbed file."""

    file: str
    """The testbed file (errors name it)."""
    source: str
    """``linux-source-X.Y`` (Debian's source package) or an absolute source tree."""
    version: str | None
    base_config: str
    """defconfig, tinyconfig, allnoconfig, or a .config file (absolute path)."""
    fragment: tuple[str, ...]
    patches: tuple[str, ...]
    localversion: str
    jobs: int
    """make -j (0: this host's CPU count)."""
    cache_dir: str

    @property
    def is_package(self) -> bool:
        return not self.source.startswith("/")

    @classmethod
    def from_mapping(cls, file: str, data: Any, cache_dir: str) -> "BuildRecipe":
        """The ``kernel.build`` block of ``file``; ConfigError names the bad key."""
        if not isinstance(data, Mapping):
            raise ConfigError(file, "kernel.build", data, "a mapping (source, base_config, "
                              "fragment, patches, ...)")
        for key in data:
            if key not in KEYS:
                raise ConfigError(file, f"kernel.build.{key}", data[key],
                                  f"unknown key (known: {', '.join(KEYS)})")
        here = Path(file).resolve().parent

        def path_of(key: str, value: Any, is_dir: bool = False) -> str:
            if not isinstance(value, str) or not value:
                raise ConfigError(file, key, value, "a file name")
            p = Path(value) if Path(value).is_absolute() else here / value
            if not os.path.lexists(p):
                raise ConfigError(file, key, value, f"{p}: no such "
                                  f"{'directory' if is_dir else 'file'}")
            # root runs, applies or takes it: another user's is refused (read gate)
            (read_gate.trusted_tree if is_dir else read_gate.trusted_file)(p, file, key)
            return str(p)

        source = data.get("source")
        if isinstance(source, str) and source.startswith("/"):
            path_of("kernel.build.source", source, is_dir=True)
            if not (Path(source) / "Makefile").is_file() or not (Path(source) / "Kconfig").is_file():
                raise ConfigError(file, "kernel.build.source", source,
                                  "not a Linux source tree (no Makefile and Kconfig)")
        elif not isinstance(source, str) or not _SOURCE_PACKAGE.match(source):
            raise ConfigError(file, "kernel.build.source", source,
                              "linux-source-X.Y (Debian's kernel source package) or the "
                              "absolute path of a source tree")
        version = data.get("version")
        if version is not None and (not isinstance(version, str) or not _VERSION.match(version)
                                    or source.startswith("/")):
            raise ConfigError(file, "kernel.build.version", version,
                              "a Debian version string, and only with a source package")
        base = data.get("base_config", "defconfig")
        if base not in BASE_CONFIGS:
            base = path_of("kernel.build.base_config", base)
        fragments = _list(file, "kernel.build.fragment", data.get("fragment", []))
        patches = _list(file, "kernel.build.patches", data.get("patches", []))
        frags = tuple(path_of(f"kernel.build.fragment[{i}]", v) for i, v in enumerate(fragments))
        for i, frag in enumerate(frags):
            check_fragment(file, f"kernel.build.fragment[{i}]", frag)
        pats = tuple(path_of(f"kernel.build.patches[{i}]", v) for i, v in enumerate(patches))
        localversion = data.get("localversion", "-srperf")
        if not isinstance(localversion, str) or not _LOCALVERSION.match(localversion):
            raise ConfigError(file, "kernel.build.localversion", localversion,
                              "'-' then up to 40 letters, digits, '.', '_' or '+'")
        jobs = data.get("jobs", 0)
        if not isinstance(jobs, int) or isinstance(jobs, bool) or not 0 <= jobs <= 256:
            raise ConfigError(file, "kernel.build.jobs", jobs,
                              "make -j, an integer 0-256 (0: this host's CPU count)")
        return cls(file=file, source=source, version=version, base_config=base,
                   fragment=frags, patches=pats, localversion=localversion, jobs=jobs,
                   cache_dir=cache_dir)


def check_inputs(recipe: BuildRecipe) -> None:
    """The recipe's inputs checked by the read gate again, just before root uses them (a
    tree, patch or fragment could have changed since ``validate``): Untrusted (exit 2)
    when another user could change one (:mod:`srperf.safety.read_gate`)."""
    if not recipe.is_package:
        read_gate.trusted_tree(recipe.source, recipe.file, "kernel.build.source")
    if recipe.base_config not in BASE_CONFIGS:
        read_gate.trusted_file(recipe.base_config, recipe.file, "kernel.build.base_config")
    for key, paths in (("fragment", recipe.fragment), ("patches", recipe.patches)):
        for i, path in enumerate(paths):
            read_gate.trusted_file(path, recipe.file, f"kernel.build.{key}[{i}]")


def _list(file: str, key: str, value: Any) -> list[Any]:
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list):
        raise ConfigError(file, key, value, "a file name or a list of them")
    return value


def check_fragment(file: str, key: str, path: str) -> dict[str, str]:
    """The options a fragment sets (``CONFIG_X`` -> value, ``n`` for "is not set");
    ConfigError names the fragment's line that is no Kconfig line."""
    options: dict[str, str] = {}
    for number, line in enumerate(Path(path).read_text().splitlines(), 1):
        m = _FRAGMENT_LINE.match(line)
        if m is None:
            raise ConfigError(file, key, f"{path}:{number}", f"not a Kconfig line: {line!r} "
                              "(CONFIG_X=y|m|n|\"text\"|number, or '# CONFIG_X is not set')")
        if m.group(1):
            options[m.group(1)] = m.group(2)
        elif m.group(3):
            options[m.group(3)] = "n"
    return options


# -- hashes and the build's identity --------------------------------------------------------

@dataclass(frozen=True)
class RecipeHashes:
    """SHA-256 of every input of a build (what makes its BUILD_ID)."""

    source: str
    """Source package: the .deb's SHA-256; a git tree: ``git:COMMIT`` (+ the SHA-256
    of ``git diff HEAD`` when it has changes); another tree: the SHA-256 of its file
    list with sizes and modification times."""
    base_config: str
    """``defconfig`` etc., or ``sha256:...`` of the .config file."""
    fragments: tuple[str, ...]
    patches: tuple[str, ...]
    localversion: str
    recipe_version: int = RECIPE_VERSION

    @property
    def build_id(self) -> str:
        text = json.dumps(asdict(self), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def recipe_hashes(recipe: BuildRecipe, source_sha256: str) -> RecipeHashes:
    base = recipe.base_config if recipe.base_config in BASE_CONFIGS else \
        f"sha256:{sha256_file(recipe.base_config)}"
    return RecipeHashes(source=source_sha256, base_config=base,
                        fragments=tuple(sha256_file(f) for f in recipe.fragment),
                        patches=tuple(sha256_file(p) for p in recipe.patches),
                        localversion=recipe.localversion)


def tree_hash(tree: Path) -> str:
    """What identifies a source tree (see :attr:`RecipeHashes.source`)."""
    git = subprocess.run(["git", "-C", str(tree), "rev-parse", "HEAD"], capture_output=True,
                         text=True, check=False)
    if git.returncode == 0:
        diff = subprocess.run(["git", "-C", str(tree), "diff", "HEAD"], capture_output=True,
                              check=False).stdout
        return f"git:{git.stdout.strip()}" + (
            f"+diff:{hashlib.sha256(diff).hexdigest()}" if diff else "")
    h = hashlib.sha256()
    for root, dirs, files in sorted(os.walk(tree)):
        dirs.sort()
        for name in sorted(files):
            st = os.lstat(os.path.join(root, name))
            rel = os.path.relpath(os.path.join(root, name), tree)
            h.update(f"{rel} {st.st_size} {st.st_mtime_ns}\n".encode())
    return f"files:{h.hexdigest()}"


# -- the source ------------------------------------------------------------------------------

def source_dir(recipe: BuildRecipe) -> Path:
    return Path(recipe.cache_dir) / "sources"


def cached_source(recipe: BuildRecipe) -> tuple[Path, str] | None:
    """The cached source ``.deb`` and its recorded SHA-256 (None: not fetched yet)."""
    version = (recipe.version or "*").replace(":", "%3a")
    for manifest in sorted(source_dir(recipe).glob(f"{recipe.source}_{version}.json")):
        # never blocks (a FIFO planted as the manifest is refused), bounded
        data = json.loads(read_gate.read_trusted_file(manifest, recipe.file,
                                                      "kernel.cache_dir", 1 << 20))
        deb = Path(data["deb"])
        if deb.is_file() and sha256_file(deb) == data["sha256"]:
            return deb, data["sha256"]
    return None


def fetch_source(recipe: BuildRecipe) -> tuple[Path, str]:
    """The source package, downloaded once into ``CACHE/sources`` (SHA-256 recorded)."""
    from srperf.kernel.image import _candidate, _run

    found = cached_source(recipe)
    if found is not None and recipe.version is not None:
        return found
    version = recipe.version or _candidate(recipe.source)
    manifest = source_dir(recipe) / f"{recipe.source}_{version.replace(':', '%3a')}.json"
    if manifest.is_file():
        data = json.loads(read_gate.read_trusted_file(manifest, recipe.file,
                                                      "kernel.cache_dir", 1 << 20))
        if Path(data["deb"]).is_file() and sha256_file(data["deb"]) == data["sha256"]:
            return Path(data["deb"]), data["sha256"]
    safe_paths.make_dirs(source_dir(recipe))
    work = safe_paths.make_temp_dir(".fetch-", source_dir(recipe))
    try:
        _run(["apt-get", "download", f"{recipe.source}={version}"], cwd=work, timeout=3600)
        debs = list(work.glob("*.deb"))
        if len(debs) != 1:
            raise KernelBuildError(f"apt-get download {recipe.source}={version} left "
                                   f"{len(debs)} .deb files")
        deb = source_dir(recipe) / debs[0].name
        safe_paths.replace(debs[0], deb)
    finally:
        safe_paths.remove_tree(work)
    digest = sha256_file(deb)
    safe_paths.write_file(manifest, json.dumps({"deb": str(deb), "sha256": digest,
                                                "version": version}, indent=1))
    return deb, digest


# -- the plan ---------------------------------------------------------------------------------

@dataclass
class BuildPlan:
    """Where a build happens and the commands it runs, in order."""

    recipe: BuildRecipe
    hashes: RecipeHashes | None
    """None while the source package is not fetched (its SHA-256 unknown)."""
    work: str
    out: str
    steps: list[tuple[str, list[str]]] = field(default_factory=list)
    """(what, shell commands run in the source tree ``work/src``)."""

    @property
    def build_id(self) -> str | None:
        return self.hashes.build_id if self.hashes else None


def built_dir(recipe: BuildRecipe, build_id: str) -> Path:
    return Path(recipe.cache_dir) / "built" / build_id


def make_plan(recipe: BuildRecipe, source_sha256: str | None, jobs: int | None = None,
              deb: str = "<the fetched .deb>") -> BuildPlan:
    """The build's commands (``source_sha256`` None: not fetched yet, no BUILD_ID)."""
    hashes = recipe_hashes(recipe, source_sha256) if source_sha256 else None
    bid = hashes.build_id if hashes else "BUILD_ID"
    out = str(built_dir(recipe, bid))
    work = str(Path(recipe.cache_dir) / "build-work" / bid)
    src = f"{work}/src"
    q = shlex.quote
    j = jobs or recipe.jobs or os.cpu_count() or 1
    make = f"make ARCH=x86_64 KBUILD_BUILD_USER=srperf KBUILD_BUILD_HOST=srperf -j{j}"
    plan = BuildPlan(recipe=recipe, hashes=hashes, work=work, out=out)
    if recipe.is_package:
        tarball = f"usr/src/{recipe.source}.tar.xz"
        plan.steps.append(("unpack the source", [
            f"mkdir -p {q(src)}",
            f"dpkg-deb --fsys-tarfile {q(deb)} | tar -xO --wildcards {q('*' + tarball)} | "
            f"tar -xJ -C {q(src)} --strip-components=1"]))
    else:
        plan.steps.append(("copy the source tree", [
            f"mkdir -p {q(src)}",
            f"tar -C {q(recipe.source)} --exclude=.git -c . | tar -x -C {q(src)}"]))
    if recipe.patches:
        plan.steps.append(("apply the patch series", [
            f"patch -p1 --forward --batch -i {q(p)}" for p in recipe.patches]))
    if recipe.base_config in BASE_CONFIGS:
        base = [f"{make} {recipe.base_config}"]
    else:
        base = [f"cp {q(recipe.base_config)} .config", f"{make} olddefconfig"]
    frag = [f"scripts/kconfig/merge_config.sh -m .config {' '.join(map(q, recipe.fragment))}"
            ] if recipe.fragment else []
    plan.steps.append(("configure", [
        *base, *frag,
        f"scripts/config --set-str LOCALVERSION {q(recipe.localversion)} "
        "--disable LOCALVERSION_AUTO",
        f"{make} olddefconfig"]))
    plan.steps.append(("build (nice -n 19)", [f"nice -n 19 {make} bzImage modules"]))
    plan.steps.append(("install into the cache", [
        f"mkdir -p {q(out)}/root/boot",
        f"{make} modules_install INSTALL_MOD_PATH={q(out)}/root INSTALL_MOD_STRIP=1",
        f"rel=$({make} -s kernelrelease) && "
        f"cp arch/x86/boot/bzImage {q(out)}/root/boot/vmlinuz-$rel && "
        f"cp .config {q(out)}/root/boot/config-$rel && "
        f"cp System.map {q(out)}/root/boot/System.map-$rel && "
        f"depmod -b {q(out)}/root $rel && echo \"$rel\" > {q(out)}/release"]))
    return plan


def unmet_options(fragments: Mapping[str, str], config_text: str) -> dict[str, str]:
    """Fragment options the final ``.config`` does not have as asked: name -> what it has
    (``not set`` / its value)."""
    have: dict[str, str] = {}
    for line in config_text.splitlines():
        m = re.match(r"^(CONFIG_[A-Za-z0-9_]+)=(.*)$", line)
        if m:
            have[m.group(1)] = m.group(2)
        else:
            m = re.match(r"^# (CONFIG_[A-Za-z0-9_]+) is not set$", line)
            if m:
                have[m.group(1)] = "n"
    out = {}
    for name, want in fragments.items():
        got = have.get(name, "n")
        if got != want:
            out[name] = "not set" if got == "n" else got
    return out


# -- running it ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class BuildRecord:
    """``build.json``: what was built from what."""

    build_id: str
    release: str
    recipe: dict[str, Any]
    hashes: dict[str, Any]
    config_sha256: str
    image_sha256: str
    build_s: float


def built_image(recipe: BuildRecipe) -> KernelImage:
    """The kernel this recipe built (KernelBuildError when it was not built yet)."""
    found = cached_source(recipe) if recipe.is_package else None
    source_sha = found[1] if found else (None if recipe.is_package else tree_hash(
        Path(recipe.source)))
    if source_sha is None:
        raise KernelBuildError(f"{recipe.file}: kernel.build: not built yet (its source "
                               f"{recipe.source} is not even fetched): run `srperf kernel "
                               f"build {recipe.file}`")
    bid = recipe_hashes(recipe, source_sha).build_id
    record = built_dir(recipe, bid) / "build.json"
    if not record.is_file():
        raise KernelBuildError(f"{recipe.file}: kernel.build: build {bid} of this recipe is "
                               f"not in {built_dir(recipe, bid).parent}: run `srperf kernel "
                               f"build {recipe.file}`")
    rec = BuildRecord(**json.loads(record.read_text()))
    root = built_dir(recipe, bid) / "root"
    image = root / "boot" / f"vmlinuz-{rec.release}"
    if sha256_file(image) != rec.image_sha256:
        raise KernelBuildError(f"{image}: its SHA-256 is not the {rec.image_sha256} recorded "
                               "when it was built (remove the build and build again)")
    return KernelImage(name=f"built {bid} ({recipe.source}, {len(recipe.patches)} patches)",
                       release=rec.release, image=str(image),
                       modules_dir=str(root / "lib" / "modules" / rec.release),
                       sha256=rec.image_sha256)


def missing_tools() -> list[str]:
    return [t for t in BUILD_TOOLS if shutil.which(t) is None]


def build(recipe: BuildRecipe, say: Callable[[str], None], jobs: int | None = None,
          keep_tree: bool = False) -> BuildRecord:
    """Fetch, patch, configure, build and install the recipe's kernel into the cache."""
    missing = missing_tools()
    if missing:
        raise KernelBuildError(f"building a kernel needs {', '.join(missing)} on this host "
                               "(apt-get install build-essential bc bison flex libelf-dev "
                               "libssl-dev xz-utils patch)")
    check_inputs(recipe)   # again at use: the tree or a patch may have changed since
    if recipe.is_package:
        deb, source_sha = fetch_source(recipe)
        say(f"source {deb.name}, sha256 {source_sha}")
        plan = make_plan(recipe, source_sha, jobs, deb=str(deb))
    else:
        source_sha = tree_hash(Path(recipe.source))
        plan = make_plan(recipe, source_sha, jobs)
    assert plan.hashes is not None
    out = Path(plan.out)
    if (out / "build.json").is_file():
        say(f"build {plan.build_id} is in the cache already ({out})")
        return BuildRecord(**json.loads((out / "build.json").read_text()))
    work = Path(plan.work)
    for stale in (work, out):
        safe_paths.remove_tree(stale)
    safe_paths.make_dirs(work.parent)
    safe_paths.make_dirs(work, 0o700)
    started = time.monotonic()
    try:
        for what, commands in plan.steps:
            step_started = time.monotonic()
            for command in commands:
                cwd = work / "src" if (work / "src").is_dir() else work
                res = subprocess.run(["bash", "-c", f"set -o pipefail; {command}"], cwd=cwd,
                                     capture_output=True, text=True, check=False)
                if res.returncode != 0:
                    raise KernelBuildError(f"{recipe.file}: kernel.build: {what}: `{command}` "
                                           f"failed (exit {res.returncode}): "
                                           f"{(res.stderr or res.stdout).strip()[-1500:]}")
            if what == "configure":
                _check_config(recipe, work / "src" / ".config")
            say(f"{what}: done ({time.monotonic() - step_started:.0f} s)")
        release = (out / "release").read_text().strip()
        image = out / "root" / "boot" / f"vmlinuz-{release}"
        record = BuildRecord(
            build_id=plan.build_id or "", release=release,
            recipe={k: v for k, v in asdict(recipe).items() if k != "cache_dir"},
            hashes=asdict(plan.hashes),
            config_sha256=sha256_file(out / "root" / "boot" / f"config-{release}"),
            image_sha256=sha256_file(image), build_s=round(time.monotonic() - started, 1))
        safe_paths.write_file(out / "build.json", json.dumps(asdict(record), indent=1,
                                                             sort_keys=True))
    except BaseException:
        safe_paths.remove_tree(out)
        raise
    finally:
        if not keep_tree:
            safe_paths.remove_tree(work)
    return record


def _check_config(recipe: BuildRecipe, config: Path) -> None:
    text = config.read_text()
    for i, frag in enumerate(recipe.fragment):
        unmet = unmet_options(check_fragment(recipe.file, f"kernel.build.fragment[{i}]", frag),
                              text)
        if unmet:
            name, got = next(iter(unmet.items()))
            raise ConfigError(recipe.file, f"kernel.build.fragment[{i}]", frag,
                              f"{name} is {got} in the final .config, not as the fragment "
                              f"asks (a dependency is missing?); also unmet: "
                              f"{', '.join(list(unmet)[1:]) or 'none'}")


__all__ = ["BuildRecipe", "BuildPlan", "BuildRecord", "RecipeHashes", "KernelBuildError",
           "build", "built_image", "check_fragment", "make_plan", "recipe_hashes",
           "tree_hash", "unmet_options"]
