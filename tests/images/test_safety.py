"""File-level safety of ``build:`` images (issue 30): the exec bit is in the tag, ignore files
are honoured, ``.wh.`` names and credentials are refused before anything is pushed, and
requirements files stay in the project without their neighbours' contents being quoted."""
from __future__ import annotations

import gzip
import os
import subprocess
import sys
import tarfile
from collections.abc import Callable
from pathlib import Path, PurePosixPath

import pytest
import requests

from tests.images.bases import can_run, run_in, unpack
from tests.images.conftest import BaseImage, get_blob, get_manifest, push_base
from tests.incli import run
from tests.sources.folders import KEY_BODY, SECRETS, private_key, write_leaky_hard_links, write_leaky_links
from vxtrain import api
from vxtrain.images.layers import LayerError, code_files, write_layer
from vxtrain.images.publish import publish
from vxtrain.images.recipe import DEPS_DIR
from vxtrain.images.safety import safe_pip_error
from vxtrain.sources.credentials import CREDENTIALS, Credential

BASE = f"us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-4.py310@sha256:{'0' * 64}"
SPEC = """\
display_name: safe
image_repository: {registry}/safe
chief:
  machine_type: n1-standard-4
  build:
    base: {base}
    source: '{source}'
{extra}  command: [python, -m, trainer.task]
"""


def _spec(folder: Path, source: str = "src", base: str = BASE, registry: str = "127.0.0.1:9", extra: str = "") -> Path:
    (folder / "src" / "trainer").mkdir(parents=True, exist_ok=True)
    (folder / "src" / "trainer" / "task.py").write_text("print('ok')\n")
    spec = folder / "job.yaml"
    spec.write_text(SPEC.format(registry=registry, base=base, source=source, extra=extra))
    return spec


def _tag(spec: Path) -> str:
    [image] = api.plan(spec).images
    return image.tag


def _members(layer: Path) -> dict[str, tarfile.TarInfo]:
    with tarfile.open(layer) as tar:
        return {m.name: m for m in tar.getmembers()}


def _codes(spec: Path) -> list[tuple[str, str]]:
    return [(d.code, d.message) for d in api.check_file(spec).diagnostics if d.severity == "error"]


# -- modes in the tag -------------------------------------------------------------------------------------


def test_chmod_plus_x_gives_a_new_tag_and_the_layer_writes_0755(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    script = tmp_path / "src" / "run.sh"
    script.write_text("#!/bin/sh\necho ran\n")
    script.chmod(0o644)
    before = _tag(spec)
    script.chmod(0o744)
    after = _tag(spec)
    assert after != before
    script.chmod(0o755)  # group and other bits differ between checkouts: not in the tag
    assert _tag(spec) == after
    script.chmod(0o600)
    assert _tag(spec) == before
    script.chmod(0o700)
    members = _members(write_layer(code_files(tmp_path / "src"), tmp_path / "code.tar.gz").path)
    assert members["opt/vxtrain/code/run.sh"].mode == 0o755
    assert members["opt/vxtrain/code/trainer/task.py"].mode == 0o644


# -- ignore files -----------------------------------------------------------------------------------------


def test_gitignored_env_is_not_in_the_code_layer_nor_the_tag(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    src = tmp_path / "src"
    (src / ".gitignore").write_text(".env\n*.log\n!keep.log\ndata/\n")
    (src / ".env").write_text("API_KEY=hunter2\n")
    (src / "a.log").write_text("x")
    (src / "keep.log").write_text("x")
    (src / "trainer" / "data").mkdir()
    (src / "trainer" / "data" / "big.bin").write_bytes(b"x")
    (src / "trainer" / ".gitignore").write_text("!a.log\nscratch.py\n")  # nested: decides for its own folder
    (src / "trainer" / "a.log").write_text("x")
    (src / "trainer" / "scratch.py").write_text("x")
    (src / ".vxtrainignore").write_text("!a.log\n")  # after .gitignore: puts back what git leaves out
    assert _codes(spec) == []  # .env is left out, so it is no credential of the image
    tag = _tag(spec)
    (src / ".env").write_text("API_KEY=changed\n")
    assert _tag(spec) == tag
    names = sorted(n for n, m in _members(write_layer(code_files(src), tmp_path / "c.tar.gz").path).items()
                   if m.isfile())
    assert [n.removeprefix("opt/vxtrain/code/") for n in names] == [
        ".gitignore", ".vxtrainignore", "a.log", "keep.log", "trainer/.gitignore", "trainer/a.log", "trainer/task.py"]


def test_local_run_refuses_an_env_file_until_ignored_and_then_still_reads_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """local-run takes only what submit takes; the ignore line that lets submit leave ``.env``
    out costs a local run nothing, since it runs the folder in place (docs/decisions.md)."""
    spec = _spec(tmp_path)
    src = tmp_path / "src"
    (src / ".env").write_text("API_KEY=hunter2\n")
    (src / "trainer" / "task.py").write_text(
        "import pathlib\nprint('read', pathlib.Path('.env').read_text().strip())\n")
    exit_code, _, err = run(capsys, "local-run", str(spec))
    assert exit_code == 1 and "[source-credentials]" in err and "still sees them" in err and "hunter2" not in err
    (src / ".vxtrainignore").write_text(".env\n")
    exit_code, out, err = run(capsys, "local-run", str(spec))
    assert exit_code == 0, err
    assert "read API_KEY=hunter2" in out + err


def test_a_folder_left_out_cannot_be_put_back_as_git_says(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    (tmp_path / "src" / ".gitignore").write_text("out/\n!out/keep.txt\n")
    (tmp_path / "src" / "out").mkdir()
    (tmp_path / "src" / "out" / "keep.txt").write_text("x")
    [image] = api.plan(spec).images
    assert image.source.files == 2  # .gitignore and trainer/task.py


# -- .wh. names -------------------------------------------------------------------------------------------


def test_a_whiteout_name_in_the_source_is_refused_at_validate(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                                               ) -> None:
    spec = _spec(tmp_path)
    (tmp_path / "src" / "trainer" / ".wh.task.py").write_text("x")
    [(code, message)] = _codes(spec)
    assert code == "source-whiteout" and "trainer/.wh.task.py" in message
    exit_code, _, err = run(capsys, "plan", str(spec))
    assert exit_code == 1 and "trainer/.wh.task.py" in err and "Traceback" not in err
    (tmp_path / "src" / ".vxtrainignore").write_text(".wh.*\n")
    assert _codes(spec) == []


def test_a_whiteout_name_in_the_dependency_layer_is_refused(tmp_path: Path) -> None:
    installed = tmp_path / "deps" / "pkg" / ".wh..wh..opq"  # what a wheel could carry into the layer
    installed.parent.mkdir(parents=True)
    installed.write_text("")
    files = [(DEPS_DIR / "pkg" / "__init__.py", installed), (DEPS_DIR / "pkg" / ".wh..wh..opq", installed)]
    with pytest.raises(LayerError, match=r"\.wh\..*deletion in an image layer"):
        write_layer(files, tmp_path / "deps.tar.gz")
    assert not (tmp_path / "deps.tar.gz").exists()


# -- credentials ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("entry", CREDENTIALS, ids=lambda e: "/".join(e.parts))
def test_every_credential_of_the_table_is_refused_unless_ignored(tmp_path: Path, entry: Credential) -> None:
    parts = entry.parts + (("key",) if entry.folder else ())
    rel = PurePosixPath("conf", *parts)
    spec = _spec(tmp_path)
    (tmp_path / "src" / rel).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / "src" / rel).write_text("secret\n")
    [(code, message)] = _codes(spec)
    assert code == "source-credentials" and str(rel) in message and ".vxtrainignore" in message
    (tmp_path / "src" / ".vxtrainignore").write_text(entry.pattern + "\n")
    assert _codes(spec) == []


def test_a_service_account_key_is_found_by_its_content(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    key = tmp_path / "src" / "conf" / "my-project-3f2a.json"
    key.parent.mkdir()
    key.write_text('{\n  "type": "service_account",\n  "project_id": "p",\n  "private_key": "-----BEGIN"\n}\n')
    (tmp_path / "src" / "conf" / "settings.json").write_text('{"type": "model", "layers": 4}')
    [(code, message)] = _codes(spec)
    assert code == "source-credentials" and "conf/my-project-3f2a.json" in message and "settings.json" not in message
    assert "BEGIN" not in message
    (tmp_path / "src" / ".gitignore").write_text("my-project-*.json\n")
    assert _codes(spec) == []


def test_names_that_only_look_like_credentials_are_kept(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    for name in ("env.py", ".env.example", ".env.production", "ssh/config.py", "docs/netrc.md", "gcloud.py",
                 "config/credentials.db", ".docker/daemon.json", "kube/config", "id_rsa.pub"):
        (tmp_path / "src" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "src" / name).write_text("x")
    assert _codes(spec) == []


def test_a_home_folder_with_keys_is_refused_and_nothing_is_pushed(
        tmp_path: Path, registry: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    monkeypatch.setenv("HOME", str(home))
    spec = _spec(tmp_path, source="~", registry=registry)
    exit_code, _, err = run(capsys, "submit", str(spec), "--endpoint", "127.0.0.1:9")
    assert exit_code == 1 and "home folder" in err and "Traceback" not in err
    # A project folder under it with the keys copied in: refused, naming each file.
    project = home / "project"
    (project / ".ssh").mkdir(parents=True)
    (project / ".ssh" / "id_rsa").write_text("key")
    (project / ".config" / "gcloud").mkdir(parents=True)
    (project / ".config" / "gcloud" / "application_default_credentials.json").write_text("{}")
    (project / ".docker").mkdir()
    (project / ".docker" / "config.json").write_text("{}")
    (project / ".netrc").write_text("machine x password y\n")
    spec = _spec(tmp_path, source="~/project", registry=registry)
    exit_code, _, err = run(capsys, "submit", str(spec), "--endpoint", "127.0.0.1:9")
    assert exit_code == 1 and "Traceback" not in err
    for name in (".ssh/id_rsa", ".config/gcloud/application_default_credentials.json", ".docker/config.json",
                 ".netrc"):
        assert name in err
    catalog = requests.get(f"http://{registry}/v2/_catalog", timeout=10).json()["repositories"]
    assert [repo for repo in catalog if repo.startswith("safe/")] == []


def test_a_package_source_with_credentials_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "trainer").mkdir()
    (tmp_path / "trainer" / "task.py").write_text("print('ok')\n")
    (tmp_path / "trainer" / ".aws").mkdir()
    (tmp_path / "trainer" / ".aws" / "credentials").write_text("[default]\n")
    spec = tmp_path / "job.yaml"
    spec.write_text("display_name: p\nstaging_bucket: gs://b\nchief:\n  machine_type: n1-standard-4\n"
                    "  python_package:\n    executor_image: us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-14.py310:latest\n"
                    "    module: trainer.task\n    source: .\n")
    exit_code, out, err = run(capsys, "validate", str(spec))
    assert exit_code == 1 and "trainer/.aws/credentials" in f"{out}{err}" and "AWS access keys" in f"{out}{err}"


# -- links to what the rules leave out, private keys by content (issue 34) ---------------------------------


def _pushed_bytes(registry: str, uri: str) -> bytes:
    """Every layer of the image at ``uri``, uncompressed, one after the other."""
    repo, tag = uri.split("/", 1)[1].rsplit(":", 1)
    manifest, _, _ = get_manifest(registry, repo, tag)
    return b"".join(gzip.decompress(get_blob(registry, repo, layer["digest"])) for layer in manifest["layers"])


def test_links_to_what_the_rules_leave_out_are_a_warning_at_validate(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    links = write_leaky_links(tmp_path / "src")
    diagnostics = api.check_file(spec).diagnostics
    assert [d.code for d in diagnostics if d.severity == "error"] == []
    [warned] = [d for d in diagnostics if d.code == "source-links"]
    assert (warned.severity, warned.path, warned.line) == ("warning", "chief.build.source", 7)
    for name in links[:5]:  # five are named, the rest counted
        assert f"{name} -> {os.readlink(tmp_path / 'src' / name)} (its target is left out)" in warned.message
    assert "and 1 more" in warned.message and not any(s.decode() in warned.message for s in SECRETS)
    [image] = api.plan(spec).images
    assert image.source.files == 3  # trainer/task.py and the two ignore files


@pytest.mark.slow
def test_an_image_carries_no_link_to_what_the_rules_leave_out(tmp_path: Path, registry: str) -> None:
    base = push_base(registry, "base/links", "py310")
    spec = _spec(tmp_path, base=base.ref, registry=registry)
    links = write_leaky_links(tmp_path / "src")
    (tmp_path / "src" / "trainer" / "settings.yaml").symlink_to("task.py")  # to a packaged file: that file
    [pushed] = publish(api.plan(spec).images)
    pushed_bytes = _pushed_bytes(registry, pushed.uri)
    assert b"opt/vxtrain/code/trainer/settings.yaml" in pushed_bytes
    assert not any(f"opt/vxtrain/code/{name}".encode() in pushed_bytes for name in links)
    assert not any(secret in pushed_bytes for secret in SECRETS)



def test_hard_links_of_what_the_rules_leave_out_are_a_warning_at_validate(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    links = write_leaky_hard_links(tmp_path / "src")
    diagnostics = api.check_file(spec).diagnostics
    assert [d.code for d in diagnostics if d.severity == "error"] == []
    assert [d for d in diagnostics if d.code == "source-hard-links"] == []
    [warned] = [d for d in diagnostics if d.code == "source-links"]
    assert (warned.severity, warned.path, warned.line) == ("warning", "chief.build.source", 7)
    for name, other in links.items():
        assert f"{name} -> {other} (a hard link" in warned.message
    [image] = api.plan(spec).images
    assert image.source.files == 3  # trainer/task.py and the two ignore files


@pytest.mark.slow
def test_an_image_carries_no_hard_link_of_what_the_rules_leave_out(tmp_path: Path, registry: str) -> None:
    base = push_base(registry, "base/hardlinks", "py310")
    spec = _spec(tmp_path, base=base.ref, registry=registry)
    links = write_leaky_hard_links(tmp_path / "src")
    [pushed] = publish(api.plan(spec).images)
    pushed_bytes = _pushed_bytes(registry, pushed.uri)
    assert b"opt/vxtrain/code/trainer/task.py" in pushed_bytes
    assert not any(f"opt/vxtrain/code/{name}".encode() in pushed_bytes for name in links)
    assert not any(secret in pushed_bytes for secret in SECRETS)

def test_a_private_key_by_content_is_refused_at_validate_unless_ignored(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    (tmp_path / "src" / "server.pem").write_text(private_key("PRIVATE KEY"))
    (tmp_path / "src" / "deploy").write_text(private_key())
    [error] = [d for d in api.check_file(spec).diagnostics if d.severity == "error"]
    assert (error.code, error.path, error.line) == ("source-credentials", "chief.build.source", 7)
    assert "deploy (a private key" in error.message and "server.pem (a private key" in error.message
    assert "**/deploy **/server.pem" in error.message and KEY_BODY not in error.message
    (tmp_path / "src" / ".vxtrainignore").write_text("server.pem\ndeploy\n")
    assert _codes(spec) == []


def test_a_private_key_by_content_pushes_nothing(tmp_path: Path, registry: str,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    spec = _spec(tmp_path, registry=f"{registry}/pem")  # a repository of its own: the registry is the session's
    (tmp_path / "src" / "server.pem").write_text(private_key("RSA PRIVATE KEY"))
    exit_code, out, err = run(capsys, "submit", str(spec), "--endpoint", "127.0.0.1:9")
    assert exit_code == 1 and "[source-credentials]" in err and "server.pem (a private key" in err
    assert KEY_BODY not in out + err and "Traceback" not in err
    catalog = requests.get(f"http://{registry}/v2/_catalog", timeout=10).json()["repositories"]
    assert [repo for repo in catalog if repo.startswith("pem/")] == []


# -- requirements files stay in the project ---------------------------------------------------------------

SECRET = "root:$6$SECRET-HASH-OF-THE-SHADOW-FILE:19000:0:99999:7:::"


def test_an_include_outside_the_folder_is_refused_without_quoting_it(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "shadow").write_text(SECRET + "\n")
    project = tmp_path / "project"
    spec = _spec(project, extra="    requirements: requirements.txt\n")
    (project / "requirements.txt").write_text("-r more.txt\n")
    (project / "more.txt").write_text("tinydep==1.0\n-c ../elsewhere/shadow\n")
    [(code, message)] = _codes(spec)
    assert code == "build-requirements-outside" and "more.txt:2" in message and "SECRET" not in message
    exit_code, _, err = run(capsys, "plan", str(spec))
    assert exit_code == 1 and "SECRET" not in err and "more.txt:2" in err
    # A link inside the folder to the file outside is followed, and refused the same way.
    (project / "more.txt").write_text("-r linked.txt\n")
    (project / "linked.txt").symlink_to(outside / "shadow")
    [(code, message)] = _codes(spec)
    assert code == "build-requirements-outside" and "SECRET" not in message


def test_an_include_read_through_a_link_is_checked_where_pip_reads_it(tmp_path: Path) -> None:
    """``sub/more.txt`` is a link to ``a/b/more.txt``, whose ``-r ../../x.txt`` pip reads from
    ``sub/``: outside the project, though from the link's target it would be inside."""
    outside = tmp_path / "x.txt"
    outside.write_text(SECRET + "\n")
    project = tmp_path / "project"
    spec = _spec(project, extra="    requirements: requirements.txt\n")
    (project / "requirements.txt").write_text("-r sub/more.txt\n")
    (project / "a" / "b").mkdir(parents=True)
    (project / "a" / "b" / "more.txt").write_text("-r ../../x.txt\n")
    (project / "sub").mkdir()
    (project / "sub" / "more.txt").symlink_to("../a/b/more.txt")
    (project / "x.txt").write_text("tinydep==1.0\n")
    [(code, message)] = _codes(spec)
    assert code == "build-requirements-outside" and "sub/more.txt:1: includes ../../x.txt" in message
    assert str(outside) in message and "SECRET" not in message


def test_local_paths_of_requirements_in_a_subfolder_are_from_the_spec_s_folder_at_validate_too(
        tmp_path: Path) -> None:
    """validate resolves ``./libs/pkg`` as plan and submit do (from the spec's folder), not from
    the requirements file's folder."""
    spec = _spec(tmp_path, extra="    requirements: reqs/requirements.txt\n    python: '3.10'\n")
    (tmp_path / "reqs").mkdir()
    (tmp_path / "reqs" / "requirements.txt").write_text("./libs/pkg\n")
    (tmp_path / "libs" / "pkg").mkdir(parents=True)
    (tmp_path / "libs" / "pkg" / "pyproject.toml").write_text("[project]\nname = 'pkg'\nversion = '1'\n")
    assert _codes(spec) == []
    tag = _tag(spec)
    (tmp_path / "libs" / "pkg" / "pyproject.toml").write_text("[project]\nname = 'pkg'\nversion = '2'\n")
    assert _tag(spec) != tag


def test_requirements_in_the_source_folder_are_inside(tmp_path: Path) -> None:
    spec = _spec(tmp_path / "configs", source="../code", extra="    requirements: ../code/requirements.txt\n")
    (tmp_path / "code" / "trainer").mkdir(parents=True)
    (tmp_path / "code" / "requirements.txt").write_text("-r base.txt\n")
    (tmp_path / "code" / "base.txt").write_text("tinydep==1.0\n")
    assert _codes(spec) == []
    spec.write_text(spec.read_text().replace("../code/requirements.txt", "../requirements.txt"))
    (tmp_path / "requirements.txt").write_text("tinydep==1.0\n")
    [(code, _)] = _codes(spec)
    assert code == "build-requirements-outside"


@pytest.mark.slow
def test_pip_s_error_quotes_no_line_of_the_requirements(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    requirements = tmp_path / "requirements.txt"
    requirements.write_text(f"tinydep==1.0\n{SECRET}\n")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--target",
                           str(tmp_path / "t"), "-r", str(requirements)], capture_output=True, text=True,
                          check=False)
    assert proc.returncode != 0 and "SECRET" in proc.stderr  # what pip itself prints
    shown = safe_pip_error(proc.stderr, [requirements])
    assert "SECRET" not in shown and "<line 2 of requirements.txt>" in shown


# -- all of it in an image run as a runtime runs it -------------------------------------------------------


@pytest.mark.slow
def test_the_image_runs_the_script_and_holds_no_ignored_file(
        tmp_path: Path, registry: str, python_base: Callable[[str], BaseImage]) -> None:
    base = python_base("3.11")
    spec = _spec(tmp_path, base=base.ref, registry=registry)
    src = tmp_path / "src"
    (src / "run.sh").write_text("#!/usr/bin/env python3\nprint('ran-as-script')\n")  # the base has no /bin/sh
    (src / "run.sh").chmod(0o755)
    (src / ".gitignore").write_text(".env\n")
    (src / ".env").write_text("API_KEY=hunter2\n")
    [pushed] = publish(api.plan(spec).images)
    (tmp_path / "unpacked").mkdir()
    image = unpack(pushed.uri, tmp_path / "unpacked")
    assert not image.path("/opt/vxtrain/code/.env").exists()
    assert os.access(image.path("/opt/vxtrain/code/run.sh"), os.X_OK)
    if can_run():
        done = run_in(image, ["./run.sh"])
        assert done.returncode == 0 and done.stdout.strip() == "ran-as-script", done.stderr
