"""The dependency layer: what pip installs, for the image's Python and platform, not this machine's.

``pip install --target`` of wheels only, with pip's documented cross-platform
options (``--platform``, ``--python-version``, ``--implementation cp``,
``--only-binary=:all:``: https://pip.pypa.io/en/stable/cli/pip_install/#cmdoption-platform):
no ``RUN`` step exists without a container runtime, so nothing may be compiled.
pip's own settings apply (``PIP_INDEX_URL``, ``PIP_FIND_LINKS``, ``PIP_NO_INDEX``).

What pip does not do for a target, done here:

- **Markers.** pip picks wheel *tags* for ``--python-version``/``--platform`` but
  judges environment markers (``exceptiongroup; python_version < "3.11"``) against
  the interpreter that runs it (``InstallRequirement.match_markers`` and the
  resolver call ``Marker.evaluate()``, whose environment is
  ``packaging.markers.default_environment()`` of the running Python: pip issues
  https://github.com/pypa/pip/issues/11010, https://github.com/pypa/pip/issues/13296,
  https://github.com/pypa/pip/issues/10050). pip runs here under a launcher that
  makes that function return the image's environment (PEP 508's variables for
  CPython ``X.Y`` on linux/amd64 or arm64), so every marker, in the requirements and
  in each wheel's ``Requires-Dist``, is judged for the image.
- **Local paths** (``./libs/pkg``, ``-e ./libs/pkg``, ``./wh/x.whl``, ``file:``): resolved
  from the spec's folder (vxtrain.sources.requirements.local_requirements); a wheel is used
  as it is, a folder is built into a wheel with pypa ``build`` (vxtrain.packaging.build:
  in this Python when its backend is here, else isolated) and kept only when pure
  Python (an extension module built here is for this machine's Python and libc);
  ``-e`` installs the same way (an image is a snapshot: nothing to edit in place).
  ``direct_url.json`` (PEP 610: it records the path here) is removed.
- **.pth files.** PYTHONPATH folders are not site directories: a ``sitecustomize``
  in SITE_DIR calls ``site.addsitedir(DEPS_DIR)``, then runs the base's own
  ``sitecustomize`` (which it shadows) if there is one.
- **Console scripts** are kept in BIN_DIR (on the image's PATH) with the shebang
  ``#!/usr/bin/env pythonX.Y``: the image's Python by name, not this machine's path.

The layer is cached by a hash of everything it is made from (the requirements, the
files they name, the Python, the platform, this recipe): a change of code alone
runs no pip (``$XDG_CACHE_HOME/vxtrain/layers``, docs/decisions.md). What is cached
goes into images, so the folder must be this user's own 0700 folder and each record
is signed with the folder's own key (vxtrain.private); a layer another user could
have put there is built again.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from vxtrain.errors import VxtrainError
from vxtrain.images.layers import Layer, write_layer
from vxtrain.images.recipe import BIN_DIR, DEPS_DIR, RECIPE_VERSION, SITE_DIR
from vxtrain.images.safety import safe_pip_error
from vxtrain.packaging.build import build_wheel
from vxtrain.private import cache_home, folder_key, mac, open_own, read_own, trusted, verified, write_private
from vxtrain.sources.folder import is_project
from vxtrain.sources.requirements import LocalRequirement, local_requirements, requirement_files, requirements_bytes
from vxtrain.vocab.callbacks import Say

__all__ = ["DependencyError", "PLATFORM_TAGS", "Target", "cache_dir", "dependency_files", "dependency_layer", "install",
           "layer_key", "pip_command"]

#: The wheel platforms pip may take per image platform: manylinux2014 (glibc 2.17) up to glibc
#: 2.28 (Vertex AI's prebuilt images are Debian/Ubuntu with a newer glibc); pip adds the older
#: manylinux tags each implies.
PLATFORM_TAGS = {"linux/amd64": ("manylinux2014_x86_64", "manylinux_2_28_x86_64"),
                 "linux/arm64": ("manylinux2014_aarch64", "manylinux_2_28_aarch64")}
#: ``platform_machine`` (PEP 508: ``platform.machine()``) of each platform's Linux.
_MACHINES = {"linux/amd64": "x86_64", "linux/arm64": "aarch64"}
#: Mixed into the cache key: bump it when the same inputs make another dependency layer.
DEPS_RECIPE = "vxtrain-deps-1"
#: A cached layer no submit has used for this long is deleted when a new one is written (a
#: torch layer is gigabytes; every requirements change writes another).
CACHE_UNUSED_DAYS = 30
#: The fields of a cached layer's record (beside its signature, ``mac``).
_RECORD = ("digest", "diff_id", "size", "files")
#: A partial file older than this is a killed build's leftover (a write takes minutes at most).
_PARTIAL_HOURS = 24
_MISSING = re.compile(r"No matching distribution found for ([^\s]+)")
#: pip run with marker evaluation for the target: argv[1] is the PEP 508 environment (JSON),
#: the rest pip's arguments. ``default_environment`` is read at each ``Marker.evaluate()``.
_LAUNCHER = """\
import json, sys
from pip._vendor.packaging import markers
environment = json.loads(sys.argv[1])
markers.default_environment = lambda: dict(environment)
from pip._internal.cli.main import main
sys.argv = ["pip", *sys.argv[2:]]
sys.exit(main())
"""
#: Options whose value pip reads relative to the requirements file when that path exists
#: (https://pip.pypa.io/en/stable/reference/requirements-file-format/): kept so in the copy.
_PATH_OPTION = re.compile(r"^(\s*(?:-[rcf]|--requirement|--constraint|--find-links)(?:\s*=\s*|\s*))(\S+)(.*)$")
#: The first lines pip (distlib) writes for a console script when the interpreter's path is
#: long or has spaces: a shell line that execs it (``'''exec' "/path/python" "$0" "$@"``).
_SH_LAUNCHER = re.compile(rb"\A#!/bin/sh\n'''exec' [^\n]*\n' '''\n")
_SITECUSTOMIZE = f'''\
"""vxtrain: {DEPS_DIR} as a site directory (its .pth files processed), then the base's own sitecustomize."""
import importlib.machinery
import importlib.util
import os
import site
import sys

site.addsitedir("{DEPS_DIR}")
_here = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.machinery.PathFinder.find_spec(
    "sitecustomize", [p for p in sys.path if os.path.abspath(p or ".") != _here])
if _spec is not None and _spec.loader is not None:
    _base = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_base)
'''


class DependencyError(VxtrainError):
    """pip could not install the requirements from wheels for the image's platform and Python,
    or a local requirement cannot be built for it."""


@dataclass(frozen=True)
class Target:
    """The Python and platform the dependency layer is for."""

    python: str  # ``3.10``
    platform: str = "linux/amd64"
    full_version: str | None = None  # ``3.10.13`` when the base says it (PYTHON_VERSION)

    @property
    def words(self) -> str:
        """``linux/amd64 and Python 3.10``, for messages."""
        return f"{self.platform} and Python {self.python}"

    def marker_environment(self) -> dict[str, str]:
        """PEP 508's marker variables for CPython on Linux (the image), not this machine.
        ``platform_release``/``platform_version`` (the kernel) are not known: empty."""
        full = self.full_version or f"{self.python}.0"
        return {"implementation_name": "cpython", "implementation_version": full, "os_name": "posix",
                "platform_machine": _MACHINES[self.platform], "platform_python_implementation": "CPython",
                "platform_release": "", "platform_system": "Linux", "platform_version": "",
                "python_full_version": full, "python_version": self.python, "sys_platform": "linux"}


def pip_command(requirements: Path, target: Target, dest: Path) -> list[str]:
    """``pip install --target dest`` of wheels only, for ``target``, markers judged for it."""
    platforms = [arg for p in PLATFORM_TAGS[target.platform] for arg in ("--platform", p)]
    return [sys.executable, "-c", _LAUNCHER, json.dumps(target.marker_environment()), "install", "--quiet",
            "--disable-pip-version-check", "--no-warn-script-location", "--no-compile", "--target", str(dest),
            *platforms, "--implementation", "cp", "--python-version", target.python, "--only-binary=:all:",
            "--requirement", str(requirements)]


def install(requirements: Path, folders: tuple[Path, ...], target: Target, dest: Path, tmp: Path) -> None:
    """Install ``requirements`` (local paths from ``folders[0]``) into ``dest`` laid out as
    dependency_files reads it; DependencyError naming what has no wheel for ``target``."""
    pkgs = dest / "pkgs"
    written = _prepared(requirements, folders, target, tmp)
    proc = subprocess.run(pip_command(written, target, pkgs), capture_output=True, text=True, check=False,
                          cwd=folders[0] if folders else None)
    if proc.returncode != 0:
        raise _pip_error(proc.stderr, requirements, target)
    _drop_outside_records(pkgs)
    for found in pkgs.glob("*.dist-info/direct_url.json"):
        found.unlink()  # PEP 610: the URL it came from here (a local path, a temporary wheel)
    _retarget_scripts(pkgs / "bin", target)
    (dest / "site").mkdir(parents=True, exist_ok=True)
    (dest / "site" / "sitecustomize.py").write_text(_SITECUSTOMIZE, encoding="utf-8")


def _pip_error(stderr: str, requirements: Path, target: Target) -> DependencyError:
    """pip's failure in vxtrain's words; no line of a requirements file is quoted (safety)."""
    missing = _MISSING.search(stderr)
    if missing:
        return DependencyError(
            f"{requirements}: no wheel of {missing.group(1)} for {target.words} (an image built without a "
            "Docker daemon installs wheels only, nothing is compiled): pin a version that publishes a manylinux "
            "wheel, set build.python to the base image's Python, or use an image that has it")
    tail = "\n".join(safe_pip_error(stderr, requirement_files(requirements)).strip().splitlines()[-5:])
    return DependencyError(f"pip could not install {requirements} for {target.words}: {tail}")


def _prepared(requirements: Path, folders: tuple[Path, ...], target: Target, tmp: Path) -> Path:
    """``requirements`` as pip should read it: each local path line replaced by a wheel (the one
    named, or one built from the folder) by its absolute path, each ``-r``/``-c``/``-f`` by
    the absolute path it names (links left in it) (the copy lives in ``tmp``). The file itself when it
    has no local paths."""
    data = requirements.read_bytes()
    locals_ = {local.line: local for local in local_requirements(requirements, data, folders or (requirements.parent,))}
    if not locals_:
        return requirements
    wheels = tmp / "local-wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    lines = []
    for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
        local = locals_.get(number)
        if local is not None:
            line = f"{_wheel_for(local, wheels, target)}{local.rest}"
        elif (found := _PATH_OPTION.match(line)):
            # absolute, but not resolved: pip reads a file's own -r/-c lines from the folder of the
            # name it was given, as vxtrain.sources.requirements checked them (a link's target's differs)
            named = requirements.absolute().parent / found.group(2)
            line = f"{found.group(1)}{named if named.exists() else found.group(2)}{found.group(3)}"
        lines.append(line)
    out = tmp / "requirements.txt"
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out


def _wheel_for(local: LocalRequirement, wheels: Path, target: Target) -> Path:
    """The wheel pip installs for ``local``: the file itself, or one built from the folder
    (DependencyError when it is not pure Python: built here, it would be for this machine)."""
    if local.wheel:
        return local.path
    if not is_project(local.path):
        raise DependencyError(f"{local.file}:{local.line}: {local.written} is a folder without pyproject.toml or "
                              "setup.py: pip installs projects; name a project folder or a wheel")
    wheel = build_wheel(local.path, Path(tempfile.mkdtemp(prefix="build-", dir=wheels)))
    where = f"{local.file}:{local.line}: {local.written}"
    if not wheel.name.endswith("-none-any.whl"):
        raise DependencyError(
            f"{where}: {wheel.name} has compiled code, built for this machine's Python and libc, not for "
            f"{target.words}: an image built without a container runtime compiles nothing; build a manylinux "
            "wheel for the image (cibuildwheel) and name the .whl file instead, or leave it out")
    return wheel


def _drop_outside_records(pkgs: Path) -> None:
    """Remove RECORD lines of files pip wrote outside the target (``../../bin/…``, console scripts):
    their hashes cover this machine's interpreter path, and the scripts are rewritten."""
    for record in pkgs.glob("*.dist-info/RECORD"):
        lines = record.read_text(encoding="utf-8").splitlines(keepends=True)
        kept = [line for line in lines if not line.startswith("../")]
        if kept != lines:
            record.write_text("".join(kept), encoding="utf-8")


def _retarget_scripts(bin_dir: Path, target: Target) -> None:
    """Console scripts with ``#!/usr/bin/env pythonX.Y`` instead of this machine's interpreter."""
    if not bin_dir.is_dir():
        return
    for script in sorted(bin_dir.iterdir()):
        if not script.is_file():
            continue
        data = script.read_bytes()
        rest = _SH_LAUNCHER.sub(b"", data, count=1)
        if rest == data:
            first, _, after = data.partition(b"\n")
            if not (first.startswith(b"#!") and b"python" in first):
                continue  # a shell script, say: its interpreter is not this machine's Python
            rest = after
        script.write_bytes(f"#!/usr/bin/env python{target.python}\n".encode() + rest)
        script.chmod(0o755)


def dependency_files(dest: Path) -> Iterator[tuple[PurePosixPath, Path]]:
    """What ``install`` wrote under ``dest``: packages under DEPS_DIR, scripts under BIN_DIR, the
    sitecustomize under SITE_DIR."""
    for folder, prefix in ((dest / "pkgs", DEPS_DIR), (dest / "pkgs" / "bin", BIN_DIR), (dest / "site", SITE_DIR)):
        for dirpath, dirnames, filenames in os.walk(folder):
            here = Path(dirpath)
            if here == dest / "pkgs":
                dirnames[:] = [d for d in dirnames if d != "bin"]
            dirnames.sort()
            for name in sorted(filenames):
                if (here / name).is_file():
                    yield prefix / (here / name).relative_to(folder).as_posix(), here / name


def layer_key(requirements: Path, folders: tuple[Path, ...], target: Target) -> str:
    """The hash the dependency layer is cached under: the requirements and every file they name
    (sources.requirements.requirements_bytes), the Python (with its patch release when known), the platform,
    the layout and pip's options (RECIPE_VERSION, DEPS_RECIPE)."""
    h = hashlib.sha256(f"{RECIPE_VERSION}\0{DEPS_RECIPE}\0{target.python}\0{target.full_version or ''}\0"
                       f"{target.platform}\0".encode())
    h.update(requirements_bytes(requirements, folders))
    return h.hexdigest()


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/vxtrain/layers`` (``~/.cache`` when unset, as the XDG base directory spec says)."""
    return cache_home() / "vxtrain" / "layers"


def _signing() -> bytes | None:
    """The cache folder's signing key, when the folder is this user's own private folder
    (vxtrain.private; else the cache is not used, with a warning): what it holds is pushed into
    images, so a file another user could have put there is never reused."""
    folder = cache_dir()
    return folder_key(folder) if trusted(folder, "the dependency-layer cache") else None


def _record_bytes(key: str, fields: dict[str, object]) -> bytes:
    """What a record's signature covers: the layer's key and the record's fields."""
    return f"{key}\0{json.dumps(fields, sort_keys=True)}".encode()


def _cached(key: str, signing: bytes) -> Layer | None:
    """The cached layer ``key``, when its record is signed with ``signing`` and its file (this
    user's own) has the digest the record says."""
    record, path = cache_dir() / f"{key}.json", cache_dir() / f"{key}.tar.gz"
    with contextlib.suppress(OSError):  # a read-only cache is still read
        os.utime(path, follow_symlinks=False)  # used now: first, so another submit's eviction keeps it
    try:
        meta = json.loads(read_own(record) or b"{}")
        fields: dict[str, object] = {name: meta[name] for name in _RECORD}
        signature = bytes.fromhex(meta["mac"])
    except (ValueError, KeyError, TypeError):
        return None
    if not verified(signing, _record_bytes(key, fields), signature):
        return None  # not written by vxtrain for this user: build it again
    opened = open_own(path)
    if opened is None:
        return None
    h = hashlib.sha256()
    try:
        with opened:
            for chunk in iter(lambda: opened.read(1 << 20), b""):
                h.update(chunk)
    except OSError:
        return None
    if f"sha256:{h.hexdigest()}" != fields["digest"]:
        return None  # a truncated or edited file: build it again
    return Layer(path, str(fields["digest"]), str(fields["diff_id"]), int(str(fields["size"])),
                 int(str(fields["files"])))


def _partial(key: str) -> Path | None:
    """Where to write the layer ``key`` so that a rename keeps it (the cache folder: one file
    system), or None when the cache cannot be written (a read-only home)."""
    folder = cache_dir()
    return folder / f".{key}.{os.getpid()}.part" if os.access(folder, os.W_OK) else None


def _keep(key: str, layer: Layer, signing: bytes) -> Layer:
    """The layer written at ``_partial(key)`` renamed into the cache, then its signed record (a
    reader sees both or neither: _cached checks the file against the record)."""
    folder = cache_dir()
    path = folder / f"{key}.tar.gz"
    os.chmod(layer.path, 0o600)  # written under the umask: a file others could write is never read back
    os.replace(layer.path, path)
    fields: dict[str, object] = {"digest": layer.digest, "diff_id": layer.diff_id, "size": layer.size,
                                 "files": layer.files}
    signature = mac(signing, _record_bytes(key, fields)).hex()
    write_private(folder / f"{key}.json", json.dumps({**fields, "mac": signature}).encode())
    _evict(folder, time.time())
    return Layer(path, layer.digest, layer.diff_id, layer.size, layer.files)


def _evict(folder: Path, now: float) -> None:
    """Delete the layers (and records) unused for CACHE_UNUSED_DAYS (a hit touches its file) and
    partial files a killed build left. Best effort: another process may be deleting too."""
    for entry in folder.iterdir():
        if entry.name.endswith(".tar.gz"):
            limit = CACHE_UNUSED_DAYS * 86400
        elif entry.name.endswith(".part"):
            limit = _PARTIAL_HOURS * 3600
        else:
            continue
        try:
            if now - entry.stat().st_mtime > limit:
                entry.unlink()
                if entry.name.endswith(".tar.gz"):
                    (folder / (entry.name[:-len(".tar.gz")] + ".json")).unlink(missing_ok=True)
        except OSError:
            continue


def dependency_layer(requirements: Path, folders: tuple[Path, ...], target: Target, tmp: Path,
                     say: Say, named: str) -> Layer:
    """The dependency layer for ``requirements`` (``named`` as the spec wrote it): from the cache
    when its inputs are unchanged, else pip runs and the layer is written into the cache (which
    then drops the layers unused for CACHE_UNUSED_DAYS)."""
    key = layer_key(requirements, folders, target)
    signing = _signing()
    found = None if signing is None else _cached(key, signing)
    if found is not None:
        say(f"reusing the dependency layer of {named} (it and the files it names are unchanged: pip not run)")
        return found
    say(f"installing {named} (wheels for {target.words})")
    dest = tmp / "deps"
    install(requirements, folders, target, dest, tmp)
    partial = None if signing is None else _partial(key)
    if partial is None or signing is None:
        return write_layer(dependency_files(dest), tmp / "deps.tar.gz")
    try:
        return _keep(key, write_layer(dependency_files(dest), partial), signing)
    finally:
        partial.unlink(missing_ok=True)  # left only when the write failed
