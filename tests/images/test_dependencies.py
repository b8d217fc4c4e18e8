"""The dependency layer as the image's Python sees it: images built on a real base with
Python 3.10 (tests/images/bases.py), pulled, unpacked and run under chroot.

One project covers the cases of issue 30 together (one build, one unpack): a marker
for the image's Python (mistune needs exceptiongroup below 3.11; this machine runs
3.11+), a ``.pth`` file that adds a folder (eigenpy), a console script (torchrun),
a local wheel and a local project folder given with ``-e``, both named from the spec's
folder while the working directory is elsewhere. Every wheel is made here by hand;
pip reads only a local folder (PIP_NO_INDEX).
"""
from __future__ import annotations

import base64
import gzip
import hashlib
import json
import os
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path, PurePosixPath

import pytest
import requests
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.images.bases import can_run, run_in, unpack
from tests.images.conftest import get_blob, get_manifest, write_wheel
from tests.images.test_errors import _submit_and_count
from tests.otheruser import need_another_user, shared_folder, write_as_nobody
from tests.registry import BaseImage, push_base
from vxtrain import api
from vxtrain.errors import ApiError, SpecError
from vxtrain.images.dependencies import (
    CACHE_UNUSED_DAYS, DependencyError, Target, cache_dir, dependency_layer, layer_key, pip_command)
from vxtrain.images.layers import write_layer
from vxtrain.images.publish import publish
from vxtrain.sources.requirements import RequirementsError, local_requirements
from vxtrain.private import KEY_FILE

pytestmark = pytest.mark.slow

SPEC = """\
display_name: deps
image_repository: {registry}/{repository}
chief:
  machine_type: n1-standard-4
  build:
    base: {base}
    source: src
    requirements: requirements.txt
    python: '{python}'
  command: [python, -m, trainer.task]
"""
REQUIREMENTS = """\
mistune==3.0
pthpkg==1.0
-r more-requirements.txt
./wh/localwheel-1.0-py3-none-any.whl
-e ./libs/localpkg
"""
#: A PEP 517 backend in the project folder itself (backend-path): builds offline, no setuptools.
BACKEND = '''\
import base64, hashlib, pathlib, zipfile

def _record(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}\\n"

def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    here = pathlib.Path(".")
    tag = (here / "TAG").read_text().strip() if (here / "TAG").exists() else "py3-none-any"
    files = {p.as_posix(): p.read_bytes() for p in sorted(here.joinpath("localpkg").rglob("*.py"))}
    dist = "localpkg-1.0.dist-info"
    files[dist + "/METADATA"] = b"Metadata-Version: 2.1\\nName: localpkg\\nVersion: 1.0\\n"
    files[dist + "/WHEEL"] = f"Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: {tag}\\n".encode()
    record = "".join(_record(n, d) for n, d in files.items()) + dist + "/RECORD,,\\n"
    name = f"localpkg-1.0-{tag}.whl"
    with zipfile.ZipFile(pathlib.Path(wheel_directory) / name, "w") as z:
        for n, d in {**files, dist + "/RECORD": record.encode()}.items():
            z.writestr(zipfile.ZipInfo(n, (2020, 1, 1, 0, 0, 0)), d)
    return name
'''
PYPROJECT = '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n'


def make_wheel(folder: Path, name: str, version: str, files: dict[str, bytes], *, requires: tuple[str, ...] = (),
               scripts: dict[str, str] | None = None, tag: str = "py3-none-any") -> Path:
    """A wheel written by hand: ``files`` at its root, ``Requires-Dist`` lines, console scripts."""
    folder.mkdir(parents=True, exist_ok=True)
    dist = f"{name}-{version}.dist-info"
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" + "".join(f"Requires-Dist: {r}\n" for r in requires)
    content = {**files, f"{dist}/METADATA": meta.encode(),
               f"{dist}/WHEEL": f"Wheel-Version: 1.0\nGenerator: vxtrain-tests\nRoot-Is-Purelib: true\nTag: {tag}\n".encode()}
    if scripts:
        content[f"{dist}/entry_points.txt"] = ("[console_scripts]\n" + "".join(
            f"{k} = {v}\n" for k, v in scripts.items())).encode()
    record = "".join(f"{n},sha256={base64.urlsafe_b64encode(hashlib.sha256(d).digest()).rstrip(b'=').decode()},{len(d)}\n"
                     for n, d in content.items()) + f"{dist}/RECORD,,\n"
    path = folder / f"{name}-{version}-{tag}.whl"
    with zipfile.ZipFile(path, "w") as z:
        for n, d in {**content, f"{dist}/RECORD": record.encode()}.items():
            z.writestr(zipfile.ZipInfo(n, (2020, 1, 1, 0, 0, 0)), d)
    return path


def index_wheels(folder: Path) -> None:
    """The packages the project asks the index for (the test's find-links folder)."""
    make_wheel(folder, "mistune", "3.0", {"mistune/__init__.py": (
        b"import sys\nif sys.version_info < (3, 11):\n    from exceptiongroup import ExceptionGroup\n"
        b"else:\n    ExceptionGroup = ExceptionGroup\nVERSION = '3.0'\n")},
        # the second exists nowhere: pip fails if it judges this marker for this machine's 3.11+
        requires=('exceptiongroup>=1.0; python_version < "3.11"', 'not-for-the-image; python_version >= "3.11"'))
    make_wheel(folder, "exceptiongroup", "1.0", {"exceptiongroup/__init__.py": b"class ExceptionGroup(Exception):\n    pass\n"})
    make_wheel(folder, "pthpkg", "1.0", {"pthpkg.pth": b"pthpkg_lib\n",  # eigenpy's layout: a .pth adds its folder
                                         "pthpkg_lib/pthmod.py": b"FROM = 'the .pth folder'\n"})
    make_wheel(folder, "clitool", "1.0", {"clitool/__init__.py": (
        b"import sys\n\ndef main():\n    print('CLI', sys.version_info[:2], sys.argv[1:])\n")},
        scripts={"clitool": "clitool:main"})


def write_project(folder: Path, base: str, registry: str, repository: str, python: str = "3.10") -> Path:
    """The spec, its code, its requirements with a local wheel and a local project folder."""
    (folder / "src" / "trainer").mkdir(parents=True)
    (folder / "src" / "trainer" / "__init__.py").write_bytes(b"")
    (folder / "src" / "trainer" / "task.py").write_bytes(b"print('task')\n")
    (folder / "src" / "sitecustomize.py").write_bytes(b"import builtins\nbuiltins.CODE_SITE = 'ran'\n")  # chained
    make_wheel(folder / "wh", "localwheel", "1.0", {"localwheel.py": b"WHO = 'local wheel 1'\n"})
    pkg = folder / "libs" / "localpkg"
    (pkg / "localpkg").mkdir(parents=True)
    (pkg / "localpkg" / "__init__.py").write_bytes(b"WHO = 'local folder'\n")
    (pkg / "backend.py").write_text(BACKEND)
    (pkg / "pyproject.toml").write_text(PYPROJECT)
    (folder / "requirements.txt").write_text(REQUIREMENTS)
    (folder / "more-requirements.txt").write_text("clitool==1.0\n")  # an include, beside the file that names it
    spec = folder / "job.yaml"
    spec.write_text(SPEC.format(registry=registry, repository=repository, base=base, python=python))
    return spec


@pytest.fixture
def index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """pip's only source: a local folder; the layer cache: the test's own; the working directory
    elsewhere than the spec (local paths must not be taken from it)."""
    folder = tmp_path / "index"
    index_wheels(folder)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(folder))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    return folder


def test_an_image_with_python_3_10_gets_its_markers_pth_scripts_and_local_packages(
        tmp_path: Path, registry: str, python_base: Callable[[str], BaseImage], index: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    base = python_base("3.10")
    spec = write_project(tmp_path / "proj", base.ref, registry, "deps")
    [image] = api.plan(spec).images
    [pushed] = publish([image])
    repo = image.uri.split("/", 1)[1].rsplit(":", 1)[0]
    manifest = get_manifest(registry, repo, image.tag)[0]
    layers = [get_blob(registry, repo, layer["digest"]) for layer in manifest["layers"][1:]]
    for blob in layers:  # no path of this machine in any layer we made (direct_url.json, finders, shebangs)
        assert str(tmp_path).encode() not in gzip.decompress(blob)
    root = unpack(image.uri, tmp_path / "unpacked")
    deps = root.path("/opt/vxtrain/deps")
    assert (deps / "exceptiongroup" / "__init__.py").is_file()  # judged for 3.10, not this machine
    assert not list(deps.glob("*.dist-info/direct_url.json"))
    script = root.path("/opt/vxtrain/bin/clitool").read_text()
    assert script.startswith("#!/usr/bin/env python3.10\n") and "clitool" in script
    if not can_run():
        return  # no chroot without root: the files and tags above are the check
    probe = ("import mistune, pthmod, localwheel, localpkg, sys; print(sys.version_info[:2], "
             "mistune.ExceptionGroup.__module__, pthmod.FROM, localwheel.WHO, localpkg.WHO, CODE_SITE)")
    ran = run_in(root, ["python", "-c", probe])
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "(3, 10) exceptiongroup the .pth folder local wheel 1 local folder ran"
    cli = run_in(root, ["clitool", "--nproc", "2"])  # on PATH, run by the image's Python
    assert cli.returncode == 0 and cli.stdout.strip() == "CLI (3, 10) ['--nproc', '2']", cli.stderr

    # A code change alone: no pip (it would fail: nothing to install from), only the code layer is new.
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path / "empty"))
    (tmp_path / "proj" / "src" / "trainer" / "task.py").write_bytes(b"print('task, edited')\n")
    [again] = api.plan(spec).images
    assert again.tag != image.tag
    [repushed] = publish([again])
    new_manifest = get_manifest(registry, repo, again.tag)[0]
    assert new_manifest["layers"][:-1] == manifest["layers"][:-1]  # base and dependency layers: the same
    assert repushed.blobs == [new_manifest["layers"][-1]["digest"], new_manifest["config"]["digest"]]
    assert pushed.pushed and repushed.pushed


def test_local_requirements_are_in_the_tag_and_stay_in_the_project(tmp_path: Path, index: Path) -> None:
    spec = write_project(tmp_path / "proj", "127.0.0.1:1/base/x:py310", "127.0.0.1:1", "tags")
    first = api.plan(spec).images[0].tag
    make_wheel(tmp_path / "proj" / "wh", "localwheel", "1.0", {"localwheel.py": b"WHO = 'local wheel 2'\n"})
    second = api.plan(spec).images[0].tag
    (tmp_path / "proj" / "libs" / "localpkg" / "localpkg" / "__init__.py").write_bytes(b"WHO = 'edited'\n")
    third = api.plan(spec).images[0].tag
    assert len({first, second, third}) == 3  # an edited wheel, an edited folder: each a new image
    (tmp_path / "proj" / "requirements.txt").write_text("../outside.whl\n")
    (tmp_path / "outside.whl").write_bytes(b"x")
    result = api.check_file(spec)
    assert any("outside the spec's folder" in d.message for d in result.diagnostics if d.severity == "error")
    with pytest.raises(SpecError):  # plan refuses it too: nothing outside is read
        api.plan(spec)


def test_a_local_folder_with_compiled_code_is_refused(tmp_path: Path, registry: str, index: Path) -> None:
    base = push_base(registry, "base/compiled", "py310")
    spec = write_project(tmp_path / "proj", base.ref, registry, "compiled")
    (tmp_path / "proj" / "libs" / "localpkg" / "TAG").write_text("cp311-cp311-linux_x86_64\n")  # as a C extension's
    [image] = api.plan(spec).images
    with pytest.raises(DependencyError, match="compiled code") as err:
        publish([image])
    assert "requirements.txt:5: ./libs/localpkg" in str(err.value)  # file and line
    assert get_manifest(registry, "compiled/src", image.tag)[2].status_code == 404


def test_build_python_other_than_the_bases_is_refused_before_any_push(
        tmp_path: Path, registry: str, python_base: Callable[[str], BaseImage], index: Path) -> None:
    base = python_base("3.11")
    spec = write_project(tmp_path / "proj", base.ref, registry, "mismatch", python="3.10")
    warnings = [d.code for d in api.check_file(spec).diagnostics if d.severity == "warning"]
    assert "build-python-unchecked" in warnings  # plan cannot know: the base's name says no Python
    error, jobs = _submit_and_count(spec)
    # A mistake of the spec found at push time: exit 1, at build.python's line (issue 34, item 3).
    assert isinstance(error, SpecError) and error.exit_code == 1 and jobs == 0
    assert "Python 3.11" in str(error) and "build.python says 3.10" in str(error)
    [d] = error.diagnostics
    assert (d.code, d.path, d.file, d.line) == ("build-python-mismatch", "chief.build.python", str(spec), 9)
    listing = requests.get(f"http://{registry}/v2/mismatch/src/tags/list", timeout=10)
    assert listing.status_code == 404 or not listing.json().get("tags")  # nothing pushed


def test_a_base_name_that_says_another_python_is_an_error_offline(tmp_path: Path, index: Path) -> None:
    spec = write_project(tmp_path / "proj", "127.0.0.1:1/base/x:py311", "127.0.0.1:1", "named", python="3.10")
    codes = [(d.severity, d.code) for d in api.check_file(spec).diagnostics]
    assert ("error", "build-python-base") in codes


def test_pip_is_told_the_image_environment(tmp_path: Path) -> None:
    command = pip_command(tmp_path / "r.txt", Target("3.9", "linux/arm64", "3.9.18"), tmp_path / "t")
    env = command[command.index("-c") + 2]
    assert '"python_version": "3.9"' in env and '"platform_machine": "aarch64"' in env
    assert '"python_full_version": "3.9.18"' in env
    assert command.count("--platform") == 2 and "manylinux2014_aarch64" in command


_NAME = st.from_regex(r"[A-Za-z0-9]([A-Za-z0-9._-]{0,10}[A-Za-z0-9])?", fullmatch=True)
_SEGMENT = st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,8}", fullmatch=True).filter(
    lambda s: s not in (".", "..") and not s.endswith((".whl", ".zip", ".tar", ".gz", ".tgz", ".bz2", ".tbz", ".xz",
                                                       ".txz")))  # an archive's name: a file, not a folder


@settings(max_examples=200, deadline=None)
@given(name=_NAME, extras=st.sampled_from(["", "[gpu]", "[a,b]"]),
       spec=st.sampled_from(["", "==1.0", ">=2,<3", "~=1.4"]),
       marker=st.sampled_from(["", '; python_version < "3.11"', "; platform_machine == 'aarch64'"]),
       editable=st.booleans())
def test_index_requirements_are_never_taken_for_paths(name: str, extras: str, spec: str, marker: str,
                                                      editable: bool) -> None:
    line = f"{'-e ' if editable else ''}{name}{extras}{spec}{marker}"
    assert local_requirements(Path("/nowhere/r.txt"), f"{line}\n# ./commented\n".encode(), [Path("/nowhere")]) == []


@settings(max_examples=50, deadline=None)
@given(parts=st.lists(_SEGMENT, min_size=1, max_size=3), editable=st.booleans(),
       marker=st.sampled_from(["", '; python_version < "3.11"']), dot=st.booleans())
def test_local_paths_resolve_from_the_spec_folder(parts: list[str], editable: bool, marker: str, dot: bool) -> None:
    """``./libs/pkg`` and ``libs/pkg`` alike (pip takes a name with a slash for a path), and a
    folder named alone after ``-e`` (pip's editable is a path or a VCS URL)."""
    if not dot and len(parts) == 1 and not editable:
        parts = [*parts, "pkg"]  # a bare name without a slash is an index requirement (the test above)
    with tempfile.TemporaryDirectory() as tmp:
        spec_folder = Path(tmp) / "proj"
        folder = spec_folder.joinpath(*parts)
        folder.mkdir(parents=True)
        written = ("./" if dot else "") + "/".join(parts)
        data = f"{'-e ' if editable else ''}{written}{marker}\n".encode()
        [local] = local_requirements(spec_folder / "sub" / "requirements.txt", data, [spec_folder])
        assert (local.path, local.editable, local.written, local.rest) == (folder.resolve(), editable, written, marker)


def test_the_cached_layer_is_checked_before_it_is_reused(tmp_path: Path, index: Path) -> None:
    (tmp_path / "requirements.txt").write_text("pthpkg==1.0\n")
    said: list[str] = []
    target = Target("3.10")
    first = dependency_layer(tmp_path / "requirements.txt", (tmp_path,), target, tmp_path, said.append, "r.txt")
    again = dependency_layer(tmp_path / "requirements.txt", (tmp_path,), target, tmp_path, said.append, "r.txt")
    assert (again.digest, again.path) == (first.digest, first.path) and first.path.parent == cache_dir()
    first.path.write_bytes(first.path.read_bytes()[:-10])  # a truncated cache file: built again
    rebuilt = dependency_layer(tmp_path / "requirements.txt", (tmp_path,), target, tmp_path, said.append, "r.txt")
    assert rebuilt.digest == first.digest  # the same bytes from the same wheels
    assert [m.split()[0] for m in said] == ["installing", "reusing", "installing"]
    assert _cached(cache_dir()) == sorted([first.path.name, first.path.name[:-7] + ".json"])


def _cached(folder: Path) -> list[str]:
    """The cache's layers and records (not its signing key)."""
    return sorted(p.name for p in folder.iterdir() if p.name != KEY_FILE)


def _forged_layer(work: Path) -> tuple[bytes, bytes]:
    """A layer of another's making (a sitecustomize.py that would run in every job) and its
    record, stating its true digest but unsigned: a cache entry's two files, as bytes."""
    (work / "forged").mkdir()
    (work / "forged" / "sitecustomize.py").write_text("print('forged')\n")
    layer = write_layer(iter([(PurePosixPath("deps/sitecustomize.py"), work / "forged" / "sitecustomize.py")]),
                        work / "forged.tar.gz")
    record = {"digest": layer.digest, "diff_id": layer.diff_id, "size": layer.size, "files": layer.files}
    return layer.path.read_bytes(), json.dumps(record).encode()


def test_a_layer_whose_record_is_not_signed_is_built_again(tmp_path: Path, index: Path) -> None:
    (tmp_path / "requirements.txt").write_text("pthpkg==1.0\n")
    target, said = Target("3.10"), list[str]()
    first = dependency_layer(tmp_path / "requirements.txt", (tmp_path,), target, tmp_path, said.append, "r.txt")
    key = first.path.name[:-len(".tar.gz")]
    blob, record = _forged_layer(tmp_path)
    first.path.write_bytes(blob)
    (cache_dir() / f"{key}.json").write_bytes(record)  # its digest is right; it is not signed
    again = dependency_layer(tmp_path / "requirements.txt", (tmp_path,), target, tmp_path, said.append, "r.txt")
    assert again.digest == first.digest and [m.split()[0] for m in said] == ["installing", "installing"]


def test_a_layer_cache_others_can_write_is_not_used_and_said(tmp_path: Path, index: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "requirements.txt").write_text("pthpkg==1.0\n")
    target, said = Target("3.10"), list[str]()
    dependency_layer(tmp_path / "requirements.txt", (tmp_path,), target, tmp_path, said.append, "r.txt")
    cache_dir().chmod(0o777)
    for _ in range(2):
        layer = dependency_layer(tmp_path / "requirements.txt", (tmp_path,), target, tmp_path, said.append, "r.txt")
        assert layer.path.parent == tmp_path  # built in the job's own folder, not kept
    assert [m.split()[0] for m in said] == ["installing"] * 3
    err = capsys.readouterr().err
    assert err.count("warning: the dependency-layer cache in") == 1 and "(mode 0777)" in err, err


def test_a_layer_another_user_put_in_an_open_cache_is_never_pushed(tmp_path: Path, index: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """nobody (a real second user) writes a layer and its record, with the right digest, into a
    cache folder others can write: it is built again, never reused."""
    need_another_user()
    (tmp_path / "requirements.txt").write_text("pthpkg==1.0\n")
    target, said = Target("3.10"), list[str]()
    key = layer_key(tmp_path / "requirements.txt", (tmp_path,), target)
    with shared_folder() as base:
        monkeypatch.setenv("XDG_CACHE_HOME", str(base / "xdg"))
        cache_dir().mkdir(parents=True)
        for folder in (base / "xdg", base / "xdg" / "vxtrain", cache_dir()):
            folder.chmod(0o777)  # as vxtrain under `umask 000` made them
        blob, record = _forged_layer(tmp_path)
        for name, data in ((f"{key}.tar.gz", blob), (f"{key}.json", record)):
            put = write_as_nobody(cache_dir() / name, data)
            assert put.returncode == 0, put.stderr
        layer = dependency_layer(tmp_path / "requirements.txt", (tmp_path,), target, tmp_path, said.append, "r.txt")
        assert said[0].startswith("installing") and layer.path.read_bytes() != blob


def test_layers_unused_for_a_month_and_a_killed_build_s_leftover_are_evicted(tmp_path: Path, index: Path) -> None:
    """A new layer clears the cache of layers no submit used for CACHE_UNUSED_DAYS; a hit marks
    its layer used, so an old but used layer stays."""
    folder = cache_dir()
    folder.mkdir(parents=True)
    old = time.time() - (CACHE_UNUSED_DAYS + 1) * 86400
    for name in ("a" * 64 + ".tar.gz", "a" * 64 + ".json", f".{'b' * 64}.123.part"):
        (folder / name).write_bytes(b"x")
        os.utime(folder / name, (old, old))
    (tmp_path / "requirements.txt").write_text("pthpkg==1.0\n")
    target = Target("3.10")
    first = dependency_layer(tmp_path / "requirements.txt", (tmp_path,), target, tmp_path, lambda _: None, "r.txt")
    assert _cached(folder) == sorted([first.path.name, first.path.name[:-7] + ".json"])
    os.utime(first.path, (old, old))
    said: list[str] = []
    dependency_layer(tmp_path / "requirements.txt", (tmp_path,), target, tmp_path, said.append, "r.txt")
    assert said[0].startswith("reusing") and time.time() - first.path.stat().st_mtime < 60
    (tmp_path / "requirements.txt").write_text("clitool==1.0\n")  # another layer: eviction runs again
    dependency_layer(tmp_path / "requirements.txt", (tmp_path,), target, tmp_path, lambda _: None, "r.txt")
    assert first.path.is_file() and len(list(folder.glob("*.tar.gz"))) == 2


@pytest.mark.parametrize("line, written", [
    ("libs/pkg", "libs/pkg"), ("-e libs/pkg", "libs/pkg"), ("-e pkg", "pkg"), ("--editable=pkg[x]", "pkg"),
    ("pkg @ libs/pkg", "libs/pkg"), ("tinydep-1.0-py3-none-any.whl", "tinydep-1.0-py3-none-any.whl"),
    ("wh/tinydep-1.0-py3-none-any.whl ; python_version > '3'", "wh/tinydep-1.0-py3-none-any.whl")])
def test_every_line_pip_reads_as_a_local_path_is_one(tmp_path: Path, line: str, written: str) -> None:
    """pip installs these from the working directory (built on this machine, an editable finder
    pointing here, none in the tag): each is a local requirement, from the spec's folder."""
    (tmp_path / "libs" / "pkg").mkdir(parents=True)
    (tmp_path / "pkg").mkdir()
    write_wheel(tmp_path)
    write_wheel(tmp_path / "wh")
    [local] = local_requirements(tmp_path / "r.txt", f"{line}\n".encode(), [tmp_path])
    assert (local.written, local.path) == (written, (tmp_path / written).resolve())


@pytest.mark.parametrize("line", ["https://example.com/x/y-1.0-py3-none-any.whl", "x @ https://h/p/x.whl",
                                  "-e git+https://github.com/o/r.git#egg=r", "--find-links wh/more",
                                  "-f wh/more", "--index-url=https://h/simple", "-e nothere", "torch==2.0",
                                  "-r sub/more.txt"])
def test_urls_options_and_missing_editables_are_not_local_paths(tmp_path: Path, line: str) -> None:
    assert local_requirements(tmp_path / "r.txt", f"{line}\n".encode(), [tmp_path]) == []


def test_an_editable_named_alone_pointing_outside_is_refused(tmp_path: Path) -> None:
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "lnk").symlink_to(tmp_path)
    with pytest.raises(RequirementsError, match="outside the spec's folder"):
        local_requirements(tmp_path / "proj" / "r.txt", b"-e lnk\n", [tmp_path / "proj"])
