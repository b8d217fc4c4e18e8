"""Small real base images with a known Python, made by the tests, and images run as a runtime runs them.

A base is this machine's pyenv Python (``~/.pyenv/versions/3.X.Y``) laid out as the
official ``python:3.X`` images lay it out: ``/usr/local/bin/python3.X`` (and
``python3``, ``python``), the standard library in ``/usr/local/lib/python3.X``
(without its tests, IDLE, tkinter and caches), ``libpython`` and every shared library
``ldd`` names for the interpreter and its extension modules at their paths here, and
``/usr/bin/env`` (console scripts' ``#!/usr/bin/env python3``). Its config says its
Python as those images do: ``PATH``, ``PYTHON_VERSION``, ``LANG``. One layer, gzip
level 1 (a test base is made once per session: about 40 MB, a second or two).

An image is run as a container runtime runs it: pulled with ``skopeo copy`` into an
OCI layout, unpacked with ``umoci unpack`` (both Debian packages), then the command
runs under ``chroot`` in its root filesystem with the config's ``Env`` and
``WorkingDir``. Without skopeo/umoci the layers are pulled through the registry API
and extracted in order (whiteouts applied); without root there is no ``chroot``:
``can_run()`` says so and the tests check the files instead.
"""
from __future__ import annotations

import gzip
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.registry import ACCEPT, DOCKER_MANIFEST, BaseImage, digest, push_blob, put_manifest

#: Where pyenv keeps its Pythons (PYENV_ROOT as pyenv reads it).
PYENV_VERSIONS = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
#: Standard-library folders a base leaves out (tests, GUIs, bundled wheels, caches): 190 MB → 25 MB.
STDLIB_SKIPPED = frozenset({"test", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3", "pydoc_data",
                            "__pycache__", "site-packages", "distutils", "unittest"})
_LDD_PATH = re.compile(r"(?:=>\s*)?(/\S+)\s+\(0x")


def pyenv_prefix(minor: str) -> Path | None:
    """The newest pyenv Python ``minor`` (``3.10``) with a shared libpython and a standard library, or None."""
    if not PYENV_VERSIONS.is_dir():
        return None
    found = sorted((p for p in PYENV_VERSIONS.iterdir()
                    if re.fullmatch(re.escape(minor) + r"\.\d+", p.name) and (p / "bin" / f"python{minor}").is_file()),
                   key=lambda p: int(p.name.rsplit(".", 1)[1]))
    return found[-1] if found else None


def _libraries(binaries: Sequence[Path]) -> set[Path]:
    """The shared libraries ``ldd`` resolves for ``binaries`` (the loader included), as named here."""
    out: set[Path] = set()
    for binary in binaries:
        proc = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, check=False)
        out.update(Path(m.group(1)) for line in proc.stdout.splitlines() if (m := _LDD_PATH.search(line)))
    return out


def base_files(prefix: Path, minor: str) -> dict[str, Path | str]:
    """Image path (no leading ``/``) → the file here, or a symlink's target (str)."""
    stdlib = prefix / "lib" / f"python{minor}"
    files: dict[str, Path | str] = {f"usr/local/bin/python{minor}": prefix / "bin" / f"python{minor}",
                                    "usr/local/bin/python3": f"python{minor}", "usr/local/bin/python": "python3"}
    for dirpath, dirnames, filenames in os.walk(stdlib):
        dirnames[:] = sorted(d for d in dirnames if d not in STDLIB_SKIPPED and not d.startswith("config-"))
        for name in filenames:
            if not name.endswith((".pyc", ".exe")):
                here = Path(dirpath) / name
                files[f"usr/local/lib/python{minor}/{here.relative_to(stdlib).as_posix()}"] = here
    binaries = [prefix / "bin" / f"python{minor}", Path(shutil.which("env") or "/usr/bin/env"),
                *sorted((stdlib / "lib-dynload").glob("*.so"))]
    for lib in _libraries(binaries):
        # libpython's RUNPATH names the pyenv folder, absent in the image: the loader's system
        # path (/lib/x86_64-linux-gnu) finds it there, as it finds libc.
        where = f"lib/x86_64-linux-gnu/{lib.name}" if str(lib).startswith(str(prefix)) else str(lib).lstrip("/")
        files[where] = lib.resolve()
    files["usr/bin/env"] = Path(shutil.which("env") or "/usr/bin/env").resolve()
    return files


def _tar_gz(files: dict[str, Path | str]) -> tuple[bytes, bytes]:
    """(gzipped at level 1, tar) of ``files`` with their parent folders."""
    names: dict[str, Path | str | None] = dict(files)
    for name in list(files):
        parts = name.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            names.setdefault("/".join(parts[:i]), None)
    names.setdefault("tmp", None)
    names.setdefault(f"usr/local/lib/python{_minor_of(files)}/site-packages", None)
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(names):
            source = names[name]
            info = tarfile.TarInfo(name)
            if source is None:
                info.type, info.mode = tarfile.DIRTYPE, 0o1777 if name == "tmp" else 0o755
                tar.addfile(info)
            elif isinstance(source, str):
                info.type, info.linkname = tarfile.SYMTYPE, source
                tar.addfile(info)
            else:
                data = source.read_bytes()
                info.size, info.mode = len(data), 0o755 if source.stat().st_mode & 0o100 else 0o644
                tar.addfile(info, io.BytesIO(data))
    return gzip.compress(raw.getvalue(), compresslevel=1, mtime=0), raw.getvalue()


def _minor_of(files: dict[str, Path | str]) -> str:
    return next(n.split("python", 1)[1] for n in files if n.startswith("usr/local/bin/python3."))


def push_python_base(host: str, repo: str, tag: str, minor: str, *, arch: str = "amd64",
                     env: Sequence[str] | None = None) -> BaseImage:
    """A base with pyenv's Python ``minor`` pushed as ``host/repo:tag`` (skip when pyenv lacks it)."""
    prefix = pyenv_prefix(minor)
    if prefix is None:
        pytest.skip(f"no pyenv Python {minor} under {PYENV_VERSIONS} to make a base image from")
    layer, raw = _tar_gz(base_files(prefix, minor))
    default_env = ["PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8",
                   f"PYTHON_VERSION={prefix.name}"]
    config = {"architecture": arch, "os": "linux", "created": "2026-01-01T00:00:00Z",
              "config": {"Env": list(env if env is not None else default_env), "Cmd": ["python3"]},
              "rootfs": {"type": "layers", "diff_ids": [digest(raw)]},
              "history": [{"created": "2026-01-01T00:00:00Z", "created_by": f"tests: pyenv Python {prefix.name}"}]}
    config_bytes = json.dumps(config).encode()
    layer_digest = push_blob(host, repo, layer)
    push_blob(host, repo, config_bytes)
    manifest = {"schemaVersion": 2, "mediaType": DOCKER_MANIFEST,
                "config": {"mediaType": "application/vnd.docker.container.image.v1+json",
                           "size": len(config_bytes), "digest": digest(config_bytes)},
                "layers": [{"mediaType": "application/vnd.docker.image.rootfs.diff.tar.gzip",
                            "size": len(layer), "digest": layer_digest}]}
    put_manifest(host, repo, tag, manifest)
    return BaseImage(f"{host}/{repo}:{tag}", manifest, config, layer_digest)


@dataclass(frozen=True)
class Unpacked:
    """An image's root filesystem here, and how its config says to run in it."""

    rootfs: Path
    env: dict[str, str]
    cwd: str
    config: dict[str, Any]

    def path(self, inside: str) -> Path:
        """A path of the image as a path here."""
        return self.rootfs / inside.lstrip("/")


def tools() -> bool:
    """True when skopeo and umoci are installed (else the layers are extracted by hand)."""
    return shutil.which("skopeo") is not None and shutil.which("umoci") is not None


def can_run() -> bool:
    """True when a command can run in an unpacked image (``chroot`` needs root)."""
    return os.geteuid() == 0


def unpack(ref: str, dest: Path) -> Unpacked:
    """Pull ``ref`` (``127.0.0.1:PORT/repo:tag``) and unpack its root filesystem under ``dest``."""
    host, _, rest = ref.partition("/")
    repo, _, tag = rest.rpartition(":")
    config = _config(host, repo, tag)
    if tools():
        layout = dest / "oci"
        dest.mkdir(parents=True, exist_ok=True)
        _tool(["skopeo", "copy", "--quiet", "--src-tls-verify=false", f"docker://{ref}", f"oci:{layout}:img"])
        rootless = [] if os.geteuid() == 0 else ["--rootless"]
        _tool(["umoci", "unpack", *rootless, "--image", f"{layout}:img", str(dest / "bundle")])
        rootfs = dest / "bundle" / "rootfs"
    else:
        rootfs = dest / "rootfs"
        _extract_layers(host, repo, tag, rootfs)
    inner = config.get("config") or {}
    env = dict(item.partition("=")[::2] for item in inner.get("Env") or [])
    return Unpacked(rootfs, env, inner.get("WorkingDir") or "/", config)


def _tool(args: list[str]) -> None:
    proc = subprocess.run(args, capture_output=True, text=True, check=False, timeout=120)
    assert proc.returncode == 0, f"{' '.join(args)}: {proc.stderr}"


def _manifest(host: str, repo: str, ref: str) -> dict[str, Any]:
    r = requests.get(f"http://{host}/v2/{repo}/manifests/{ref}", headers={"Accept": ACCEPT}, timeout=10)
    r.raise_for_status()
    return r.json()  # type: ignore[no-any-return]


def _config(host: str, repo: str, tag: str) -> dict[str, Any]:
    manifest = _manifest(host, repo, tag)
    r = requests.get(f"http://{host}/v2/{repo}/blobs/{manifest['config']['digest']}", timeout=10)
    r.raise_for_status()
    return r.json()  # type: ignore[no-any-return]


def _extract_layers(host: str, repo: str, tag: str, rootfs: Path) -> None:
    """Each layer in order, its whiteouts (``.wh.NAME``) removing what lower layers wrote."""
    rootfs.mkdir(parents=True)
    for layer in _manifest(host, repo, tag)["layers"]:
        blob = requests.get(f"http://{host}/v2/{repo}/blobs/{layer['digest']}", timeout=60).content
        assert digest(blob) == layer["digest"]
        with tarfile.open(fileobj=io.BytesIO(gzip.decompress(blob))) as tar:
            for member in tar.getmembers():
                folder, _, name = member.name.rpartition("/")
                if name.startswith(".wh."):
                    gone = rootfs / folder / name[4:]
                    shutil.rmtree(gone, ignore_errors=True) if gone.is_dir() else gone.unlink(missing_ok=True)
                    continue
                tar.extract(member, rootfs, filter="tar")


def run_in(image: Unpacked, args: Sequence[str], env: dict[str, str] | None = None,
           timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """``args`` run in the image under ``chroot``, with its config's Env (plus ``env``) and WorkingDir."""
    if not can_run():
        pytest.skip("running in an image needs chroot (root)")
    full = {**image.env, **(env or {})}
    # A fresh Python (-I: the image's PYTHON* variables are not its own) enters the chroot and
    # execs the program, looked up on the image's PATH inside it. Not preexec_fn: that makes
    # subprocess fork this process, whose gRPC threads (the emulator tests' channels) then
    # abort the child between fork and exec (SIGABRT, "Epoll1Poller ... epoll_wait error: Bad
    # file descriptor", seen once in a full run).
    enter = ("import os, sys; os.chroot(sys.argv[1]); os.chdir(sys.argv[2]); "
             "os.execvpe(sys.argv[3], sys.argv[3:], os.environ)")
    return subprocess.run([sys.executable, "-I", "-c", enter, str(image.rootfs), image.cwd, *args], env=full,
                          capture_output=True, text=True, timeout=timeout, check=False)


@pytest.fixture(scope="session")
def python_base(registry: str) -> Iterator[Callable[[str], BaseImage]]:
    """``python_base("3.10")``: a base with that Python in the session's registry (made once)."""
    made: dict[str, BaseImage] = {}

    def get(minor: str) -> BaseImage:
        if minor not in made:
            made[minor] = push_python_base(registry, f"bases/python{minor}", "latest", minor)
        return made[minor]

    yield get
