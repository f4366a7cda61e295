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

from srperf.safety import bounded_read, read_gate, redact, safe_paths
from srperf.errors import ConfigError, SrperfError
from srperf.kernel import cache as kcache
from srperf.kernel.image import KernelImage, sha256_file

log = logging.getLogger(__name__)

RECIPE_VERSION = 1
"""Changes when the way a recipe becomes a kernel changes (a new BUILD_ID then)."""
BASE_CONFIGS = ("defconfig", "tinyconfig", "allnoconfig")
BUILD_TOOLS = ("make", "gcc", "bc", "bison", "flex", "patch", "xz", "perl")
"""Programs a build needs on this host (Debian: build-essential bc bison flex libelf-dev
libssl-dev xz-utils patch)."""
_SOURCE_PACKAGE = re.compile(r"^linux-source-[0-9]+\.[0-9]+\Z")
_VERSION = re.compile(r"^[0-9][A-Za-z0-9.+~:-]*\Z")
"""A Debian version starts with a digit (an epoch or the upstream version): never an
option (``--allow-unauthenticated``)."""
_LOCALVERSION = re.compile(r"^-[A-Za-z0-9._+]{0,40}\Z")
_FRAGMENT_LINE = re.compile(
    r'^(?:(CONFIG_[A-Za-z0-9_]+)=(y|m|n|"[^"]*"|-?[0-9]+|0x[0-9a-fA-F]+)'
    r'|# (CONFIG_[A-Za-z0-9_]+) is not set|#.*|)\s*\Z')
FRAGMENT_BYTES = 16 << 20
"""A config fragment larger than this is refused (a whole .config is ~200 KB)."""
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
        if isinstance(jobs, float) and jobs.is_integer():
            jobs = int(jobs)   # 2.0 is 2, as every whole number srperf reads
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
    try:
        for line in bounded_read.lines(path, FRAGMENT_BYTES):
            m = None if line.cut else _FRAGMENT_LINE.match(line.text)
            if m is None:
                shown = bounded_read.quote_line(line.text) if bounded_read.may_quote(path) \
                    else "(not quoted: other users may not read the file)"
                raise ConfigError(file, key, f"{path}:{line.number}", "not a Kconfig line"
                                  f"{' (longer than 4096 characters)' if line.cut else ''}: "
                                  f"{shown} (CONFIG_X=y|m|n|\"text\"|number, or "
                                  "'# CONFIG_X is not set')")
            if m.group(1):
                options[m.group(1)] = m.group(2)
            elif m.group(3):
                options[m.group(3)] = "n"
    except bounded_read.TooLarge:
        raise ConfigError(file, key, path, f"larger than {FRAGMENT_BYTES >> 20} MiB: not a "
                          "config fragment") from None
    except OSError as exc:
        raise ConfigError(file, key, path, f"cannot be read: {exc.strerror or exc}") from None
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
    """The cached source ``.deb`` and its recorded SHA-256 (None: not fetched yet); a
    manifest or ``.deb`` srperf did not make is refused (:mod:`srperf.kernel.cache`)."""
    cache = kcache.root(recipe.cache_dir, recipe.file, create=False)
    sources = cache and kcache.subdir(cache, "sources", recipe.file, create=False)
    if sources is None:
        return None
    version = (recipe.version or "*").replace(":", "%3a")
    for manifest in sorted(sources.glob(f"{recipe.source}_{version}.json")):
        found = _source_entry(recipe, manifest)
        if found is not None:
            return found
    return None


def _source_entry(recipe: BuildRecipe, manifest: Path) -> tuple[Path, str] | None:
    """The ``.deb`` the trusted ``manifest`` names (in ``CACHE/sources``), when it is
    srperf's and its SHA-256 the recorded one; None: not there or not matching."""
    data = kcache.read_manifest(manifest, recipe.file, ("deb", "sha256"))
    deb = kcache.inside(data["deb"], manifest.parent, "deb", manifest)
    if deb.parent != manifest.parent or not os.path.lexists(deb):
        return None
    if kcache.sha256_trusted(deb, recipe.file) != data["sha256"]:
        log.warning("%s: its SHA-256 is not the recorded one: fetched again", deb)
        return None
    return deb, data["sha256"]


def fetch_source(recipe: BuildRecipe) -> tuple[Path, str]:
    """The source package, downloaded once into ``CACHE/sources`` (SHA-256 recorded)."""
    from srperf.kernel.image import _candidate, _run

    found = cached_source(recipe)
    if found is not None and recipe.version is not None:
        return found
    version = recipe.version or _candidate(recipe.source)
    cache = kcache.root(recipe.cache_dir, recipe.file, create=True)
    sources = kcache.subdir(cache, "sources", recipe.file, create=True)
    assert sources is not None
    manifest = sources / f"{recipe.source}_{version.replace(':', '%3a')}.json"
    if os.path.lexists(manifest):
        found = _source_entry(recipe, manifest)
        if found is not None:
            return found
    work = safe_paths.make_temp_dir(".fetch-", sources)
    try:
        _run(["apt-get", "download", f"{recipe.source}={version}"], cwd=work, timeout=3600)
        debs = list(work.glob("*.deb"))
        if len(debs) != 1:
            raise KernelBuildError(f"apt-get download {recipe.source}={version} left "
                                   f"{len(debs)} .deb files")
        deb = sources / debs[0].name
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
              deb: str = "<the fetched .deb>", work: str | None = None) -> BuildPlan:
    """The build's commands (``source_sha256`` None: not fetched yet, no BUILD_ID).
    ``work``: the build's new private directory (made by :func:`build` with an
    unpredictable name); the kernel is installed into ``WORK/out``, which is renamed to
    ``CACHE/built/BUILD_ID`` once complete (so no one can make that name first)."""
    hashes = recipe_hashes(recipe, source_sha256) if source_sha256 else None
    bid = hashes.build_id if hashes else "BUILD_ID"
    out = str(built_dir(recipe, bid))
    work = work or str(Path(recipe.cache_dir) / "build-work" / f"{bid}-XXXXXXXX")
    src = f"{work}/src"
    stage = f"{work}/out"
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
        f"mkdir -p {q(stage)}/root/boot",
        f"{make} modules_install INSTALL_MOD_PATH={q(stage)}/root INSTALL_MOD_STRIP=1",
        f"rel=$({make} -s kernelrelease) && "
        f"cp arch/x86/boot/bzImage {q(stage)}/root/boot/vmlinuz-$rel && "
        f"cp .config {q(stage)}/root/boot/config-$rel && "
        f"cp System.map {q(stage)}/root/boot/System.map-$rel && "
        # modules_install links build/ and source/ to this work tree, which is gone once
        # the build ends: links out of the modules tree are refused by the read gate.
        f"rm -f {q(stage)}/root/lib/modules/$rel/build "
        f"{q(stage)}/root/lib/modules/$rel/source && "
        f"depmod -b {q(stage)}/root $rel && echo \"$rel\" > {q(stage)}/release",
        f"(then {stage} is renamed to {out})"]))
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
    rec = _built_record(recipe, bid)
    if rec is None:
        raise KernelBuildError(f"{recipe.file}: kernel.build: build {bid} of this recipe is "
                               f"not in {built_dir(recipe, bid).parent}: run `srperf kernel "
                               f"build {recipe.file}`")
    root = built_dir(recipe, bid) / "root"
    image = root / "boot" / f"vmlinuz-{rec.release}"
    if not os.path.lexists(image) or kcache.sha256_trusted(image, recipe.file) \
            != rec.image_sha256:
        raise KernelBuildError(f"{image}: its SHA-256 is not the {rec.image_sha256} recorded "
                               "when it was built (remove the build and build again)")
    return KernelImage(name=f"built {bid} ({recipe.source}, {len(recipe.patches)} patches)",
                       release=rec.release, image=str(image),
                       modules_dir=str(root / "lib" / "modules" / rec.release),
                       sha256=rec.image_sha256)


_RELEASE = re.compile(r"^[0-9][A-Za-z0-9._+~-]{0,80}\Z")


def _built_record(recipe: BuildRecipe, bid: str) -> BuildRecord | None:
    """``built/BID/build.json`` when the cache has it (None: not built), trusted only
    when srperf made it (:mod:`srperf.kernel.cache`; ConfigError otherwise)."""
    cache = kcache.root(recipe.cache_dir, recipe.file, create=False)
    built = cache and kcache.subdir(cache, "built", recipe.file, create=False)
    entry = built and kcache.subdir(built, bid, recipe.file, create=False)
    if entry is None or not os.path.lexists(entry / "build.json"):
        return None
    data = kcache.read_manifest(entry / "build.json", recipe.file,
                                ("build_id", "release", "image_sha256", "config_sha256"))
    try:
        rec = BuildRecord(**data)
    except TypeError as exc:
        raise ConfigError(str(entry / "build.json"), "", ConfigError.SKIP, "damaged kernel "
                          f"cache manifest ({exc}); remove the build") from None
    if rec.build_id != bid or not _RELEASE.match(rec.release):
        raise ConfigError(str(entry / "build.json"), "", ConfigError.SKIP, "damaged kernel "
                          "cache manifest (another build id, or a release that is no "
                          "release); remove the build")
    return rec


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
    plan_deb = "<the fetched .deb>"
    if recipe.is_package:
        deb, source_sha = fetch_source(recipe)
        say(f"source {deb.name}, sha256 {source_sha}")
        plan_deb = str(deb)
        plan = make_plan(recipe, source_sha, jobs, deb=plan_deb)
    else:
        source_sha = tree_hash(Path(recipe.source))
        plan = make_plan(recipe, source_sha, jobs)
    assert plan.hashes is not None and plan.build_id is not None
    out = Path(plan.out)
    done = _built_record(recipe, plan.build_id)
    if done is not None:
        say(f"build {plan.build_id} is in the cache already ({out})")
        return done
    cache = kcache.root(recipe.cache_dir, recipe.file, create=True)
    assert cache is not None
    built = kcache.subdir(cache, "built", recipe.file, create=True)
    works = kcache.subdir(cache, "build-work", recipe.file, create=True)
    assert built is not None and works is not None
    # a new private directory no one can name first (the build id is public)
    work = safe_paths.make_temp_dir(f"{plan.build_id}-", works)
    plan = make_plan(recipe, plan.hashes.source, jobs, deb=plan_deb, work=str(work))
    stage = work / "out"
    started = time.monotonic()
    try:
        for what, commands in plan.steps:
            step_started = time.monotonic()
            if what == "configure":
                _check_members(recipe, work / "src")
            for command in commands:
                if command.startswith("(then "):
                    continue   # the rename below
                cwd = work / "src" if (work / "src").is_dir() else work
                res = subprocess.run(["bash", "-c", f"set -o pipefail; {command}"], cwd=cwd,
                                     capture_output=True, text=True, check=False)
                if res.returncode != 0:
                    output = redact.redact_quoted((res.stderr or res.stdout).strip()[-1500:])
                    raise KernelBuildError(f"{recipe.file}: kernel.build: {what}: `{command}` "
                                           f"failed (exit {res.returncode}): {output}")
            if what == "configure":
                _made(recipe, work / "src" / ".config", "the configure step (make "
                      f"{recipe.base_config if recipe.base_config in BASE_CONFIGS else 'olddefconfig'})")
                _check_config(recipe, work / "src" / ".config")
            say(f"{what}: done ({time.monotonic() - step_started:.0f} s)")
        by = "the install step (make modules_install, kernelrelease)"
        release = bounded_read.read_text(_made(recipe, stage / "release", by), 256).strip()
        if not _RELEASE.match(release):
            raise KernelBuildError(f"{recipe.file}: kernel.build: the build's release "
                                   f"{bounded_read.quote_line(release)} is no release")
        image = _made(recipe, stage / "root" / "boot" / f"vmlinuz-{release}", by)
        config = _made(recipe, stage / "root" / "boot" / f"config-{release}", by)
        record = BuildRecord(
            build_id=plan.build_id or "", release=release,
            recipe={k: v for k, v in asdict(recipe).items() if k != "cache_dir"},
            hashes=asdict(plan.hashes),
            config_sha256=sha256_file(config),
            image_sha256=sha256_file(image), build_s=round(time.monotonic() - started, 1))
        safe_paths.write_file(stage / "build.json", json.dumps(asdict(record), indent=1,
                                                               sort_keys=True),
                              make_parent=False)
        safe_paths.remove_tree(out)   # an incomplete earlier build (no build.json)
        safe_paths.rename_dir(stage, out)
    finally:
        if not keep_tree:
            safe_paths.remove_tree(work)
    return record


TREE_MEMBERS = ("Makefile", "Kconfig", "scripts/config")
"""What the build runs of a source tree besides make (``scripts/kconfig/merge_config.sh``
too, with fragments)."""


def _not_a_tree(recipe: BuildRecipe, why: str) -> ConfigError:
    return ConfigError(recipe.file, "kernel.build.source", recipe.source,
                       f"{why}: not a Linux source tree srperf can build (it needs "
                       f"{', '.join(TREE_MEMBERS)}, scripts/kconfig/merge_config.sh, and "
                       "make targets that write .config, the image and the modules)")


def _check_members(recipe: BuildRecipe, src: Path) -> None:
    """Every file of the (copied or unpacked) tree the configure step runs is there: a
    tree without one is bad input (exit 2 naming ``kernel.build.source``), not a raw
    errno."""
    members = [*TREE_MEMBERS, *(["scripts/kconfig/merge_config.sh"] if recipe.fragment
                                else [])]
    for member in members:
        if not (src / member).is_file():
            raise _not_a_tree(recipe, f"the tree has no {member}")


def _made(recipe: BuildRecipe, path: Path, by: str) -> Path:
    """``path``, which ``by`` (a step of the build, run by the tree's Makefile) should
    have made; ConfigError naming ``kernel.build.source`` when it did not."""
    if not path.is_file():
        raise _not_a_tree(recipe, f"{by} made no {path.name}")
    return path


def _check_config(recipe: BuildRecipe, config: Path) -> None:
    text = bounded_read.read_text(config, FRAGMENT_BYTES)
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
