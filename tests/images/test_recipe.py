"""References and the content-addressed tag: pure, no registry."""
from __future__ import annotations

import tarfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vxtrain.images.image import with_pythonpath
from vxtrain.images.layers import code_files, write_layer
from vxtrain.images.recipe import image_tag
from vxtrain.images.reference import DOCKER_HUB, parse, parse_repository, python_version


@pytest.mark.parametrize(("text", "host", "repository", "tag", "loopback", "google"), [
    ("us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-4.py310:latest", "us-docker.pkg.dev",
     "vertex-ai/training/pytorch-gpu.2-4.py310", "latest", False, True),
    ("gcr.io/p/img", "gcr.io", "p/img", None, False, True),
    ("python:3.11-slim", DOCKER_HUB, "library/python", "3.11-slim", False, False),
    ("docker.io/library/python:3.11", DOCKER_HUB, "library/python", "3.11", False, False),
    ("docker.io/python:3.11", DOCKER_HUB, "library/python", "3.11", False, False),
    ("index.docker.io/pytorch/pytorch:2.4", DOCKER_HUB, "pytorch/pytorch", "2.4", False, False),
    ("127.0.0.1:5000/base/img:v1", "127.0.0.1:5000", "base/img", "v1", True, False),
    ("localhost:5000/x", "localhost:5000", "x", None, True, False),
])
def test_references(text: str, host: str, repository: str, tag: str | None, loopback: bool, google: bool) -> None:
    ref = parse(text)
    assert (ref.host, ref.repository, ref.tag, ref.loopback, ref.google) == (host, repository, tag, loopback, google)


@pytest.mark.parametrize("text", ["Upper/case", "a//b", "x@sha256:short", "host.io/x:bad tag", "https://host.io/x:1"])
def test_bad_references_say_why(text: str) -> None:
    with pytest.raises(ValueError):
        parse(text)


def test_a_repository_has_no_tag() -> None:
    assert parse_repository("us-central1-docker.pkg.dev/p/r/").repository == "p/r"
    with pytest.raises(ValueError):
        parse_repository("us-central1-docker.pkg.dev/p/r:1")
    with pytest.raises(ValueError, match="without a scheme, e.g. us-central1-docker.pkg.dev/p/r$"):
        parse_repository("https://us-central1-docker.pkg.dev/p/r/")


@pytest.mark.parametrize(("text", "python"), [
    ("us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-4.py310:latest", "3.10"),
    ("us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-14.py311:latest", "3.11"),
    ("python:3.12-slim", "3.12"), ("ubuntu:22.04", None), ("gcr.io/x/img:py39", "3.9"),
])
def test_the_python_of_a_base(text: str, python: str | None) -> None:
    assert python_version(parse(text)) == python


def test_every_input_changes_the_tag() -> None:
    tags = {image_tag("b:1", "3.10", b"x==1\n", "d1"), image_tag("b:2", "3.10", b"x==1\n", "d1"),
            image_tag("b:1", "3.11", b"x==1\n", "d1"), image_tag("b:1", "3.10", b"x==2\n", "d1"),
            image_tag("b:1", "3.10", None, "d1"), image_tag("b:1", "3.10", b"x==1\n", "d2")}
    assert len(tags) == 6 and image_tag("b:1", "3.10", None, "d1") == image_tag("b:1", "3.10", None, "d1")


def test_pythonpath_goes_in_front_and_keeps_the_base_s() -> None:
    assert with_pythonpath(["A=1", "PYTHONPATH=/x"], ["/c", "/d"]) == ["A=1", "PYTHONPATH=/c:/d:/x"]
    assert with_pythonpath(["A=1"], ["/c"]) == ["A=1", "PYTHONPATH=/c"]


def test_a_layer_is_the_same_bytes_whatever_the_file_times_and_modes(tmp_path: Path) -> None:
    import os

    for folder in ("a", "b"):
        (tmp_path / folder / "pkg").mkdir(parents=True)
        (tmp_path / folder / "pkg" / "m.py").write_text("x = 1\n")
        (tmp_path / folder / "run.sh").write_text("#!/bin/sh\n")
    os.utime(tmp_path / "b" / "pkg" / "m.py", (5, 5))
    os.chmod(tmp_path / "a" / "run.sh", 0o700)
    os.chmod(tmp_path / "b" / "run.sh", 0o755)
    os.chmod(tmp_path / "b" / "pkg" / "m.py", 0o600)
    one = write_layer(code_files(tmp_path / "a"), tmp_path / "a.tar.gz")
    two = write_layer(code_files(tmp_path / "b"), tmp_path / "b.tar.gz")
    assert (one.digest, one.diff_id, one.size) == (two.digest, two.diff_id, two.size)
    assert (tmp_path / "a.tar.gz").read_bytes() == (tmp_path / "b.tar.gz").read_bytes()
    (tmp_path / "b" / "pkg" / "m.py").write_text("x = 2\n")
    assert write_layer(code_files(tmp_path / "b"), tmp_path / "c.tar.gz").digest != one.digest


def test_validate_and_plan_of_a_build_never_import_the_registry_client() -> None:
    """The cold-start budget: dxf, requests and google-auth are for a submit that pushes."""
    import subprocess
    import sys

    example = Path(__file__).resolve().parents[2] / "configs" / "examples" / "from-laptop-image.yaml"
    code = ("import sys; from vxtrain.cli import main; "
            f"main(['validate', {str(example)!r}]); main(['plan', {str(example)!r}, '--output', 'json']); "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('dxf', 'requests', 'urllib3') "
            "or m.startswith(('google.auth', 'google.cloud.aiplatform'))]; "
            "print(bad, file=sys.stderr); sys.exit(1 if bad else 0)")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    import json

    plan = json.loads(res.stdout[res.stdout.index("{"):])
    [image] = plan["images"]
    assert image["uri"].startswith("us-central1-docker.pkg.dev/my-project/train/laptop:")
    assert (image["pools"], image["base_pinned"], image["python"], image["files"]) == (["chief"], False, "3.10", 2)
    assert plan["custom_job"]["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["imageUri"] == image["uri"]


_NAMES = st.text(alphabet="abcdefghij_-.", min_size=1, max_size=8).filter(lambda n: n not in (".", ".."))


@pytest.mark.slow
@settings(max_examples=25, deadline=None)
@given(st.dictionaries(st.lists(_NAMES, min_size=1, max_size=3).map(tuple), st.binary(max_size=300),
                       min_size=1, max_size=6))
def test_a_layer_holds_exactly_the_files_given(files: dict[tuple[str, ...], bytes]) -> None:
    """Whatever the tree: the tar has each file's bytes at its path, parents first, sorted."""
    import gzip
    import io
    import tarfile
    import tempfile
    from pathlib import PurePosixPath

    paths = {p for p in files if not any(p[:i] in files for i in range(1, len(p)))}  # a file is no folder
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for parts in paths:
            (root / "src").joinpath(*parts).parent.mkdir(parents=True, exist_ok=True)
            (root / "src").joinpath(*parts).write_bytes(files[parts])
        entries = [(PurePosixPath("/app", *parts), root / "src" / Path(*parts)) for parts in paths]
        layer = write_layer(entries, root / "l.tar.gz")
        again = write_layer(list(reversed(entries)), root / "m.tar.gz")
        assert (layer.digest, layer.diff_id) == (again.digest, again.diff_id)
        with tarfile.open(fileobj=io.BytesIO(gzip.decompress((root / "l.tar.gz").read_bytes()))) as tar:
            members = tar.getmembers()
            names = [m.name for m in members]
            got = {tuple(m.name.split("/")[1:]): tar.extractfile(m).read() for m in members if m.isfile()}  # type: ignore[union-attr]
    assert got == {p: files[p] for p in paths}
    assert all("/".join(n.split("/")[:-1]) in names for n in names if "/" in n)  # parents are entries
    assert names.index("app") == 0


def test_the_code_layer_holds_no_file_from_outside_the_folder(tmp_path: Path) -> None:
    (tmp_path / "secret").write_text("key")
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    (tmp_path / "src" / "pkg" / "m.py").write_text("x = 1\n")
    (tmp_path / "src" / "pkg" / "alias.py").symlink_to("m.py")
    (tmp_path / "src" / "key").symlink_to(tmp_path / "secret")
    (tmp_path / "src" / "up").symlink_to(tmp_path)
    layer = write_layer(code_files(tmp_path / "src"), tmp_path / "code.tar.gz")
    with tarfile.open(layer.path) as tar:
        files = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}  # type: ignore[union-attr]
    assert files == {"opt/vxtrain/code/pkg/alias.py": b"x = 1\n", "opt/vxtrain/code/pkg/m.py": b"x = 1\n"}


def test_plan_counts_the_files_of_an_image_in_words(tmp_path: Path) -> None:
    from vxtrain import api
    from vxtrain.render.packaging import image_lines

    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "task.py").write_text("")
    spec = tmp_path / "job.yaml"
    spec.write_text("display_name: t\nchief:\n  machine_type: n1-standard-4\n  build:\n"
                    f"    base: ubuntu@sha256:{'0' * 64}\n    source: src\n")
    assert image_lines(api.plan(spec).images)[0] == "src (1 file) for chief"


def test_files_the_requirements_include_change_the_tag(tmp_path: Path) -> None:
    from vxtrain import api

    (tmp_path / "src").mkdir()
    (tmp_path / "deps").mkdir()
    (tmp_path / "requirements.txt").write_text("-r deps/base.txt\ntinydep\n")
    (tmp_path / "deps" / "base.txt").write_text("-c pins.txt  # relative to base.txt, as pip reads it\n")
    (tmp_path / "deps" / "pins.txt").write_text("tinydep==1.0\n-r ../requirements.txt\n")  # a loop ends
    spec = tmp_path / "job.yaml"
    spec.write_text("display_name: t\nchief:\n  machine_type: n1-standard-4\n  build:\n"
                    f"    base: ubuntu@sha256:{'0' * 64}\n    source: src\n    requirements: requirements.txt\n"
                    "    python: '3.10'\n")
    tags = [api.plan(spec).images[0].tag]
    (tmp_path / "deps" / "pins.txt").write_text("tinydep==2.0\n")
    tags.append(api.plan(spec).images[0].tag)
    (tmp_path / "deps" / "pins.txt").write_text("tinydep==1.0\n-r ../requirements.txt\n")
    tags.append(api.plan(spec).images[0].tag)
    assert tags[0] != tags[1] and tags[0] == tags[2]
