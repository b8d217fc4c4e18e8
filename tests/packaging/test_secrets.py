"""A source folder's secrets never leave the machine (issue 34), for ``python_package.source``:
a link to what the rules leave out is left out too, and a file holding a private key is
refused like a credential file; at validate (at the key's line) and at submit (nothing is
uploaded). tests/images/test_safety.py holds the same for ``build.source``."""
from __future__ import annotations

import gzip
import io
import os
import tarfile
from pathlib import Path
from typing import Any

import pytest

from tests.incli import run
from tests.sources.folders import KEY_BODY, SECRETS, private_key, write_bare, write_leaky_hard_links, write_leaky_links
from vxtrain import api
from vxtrain.packaging.upload import split_gs_uri

EXECUTOR = "us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-14.py310:latest"
SPEC = ("display_name: p\nstaging_bucket: gs://{bucket}/staging\nchief:\n  machine_type: n1-standard-4\n"
        f"  python_package:\n    executor_image: {EXECUTOR}\n    module: trainer.task\n    source: code\n")


def _spec(tmp_path: Path, bucket: str = "my-bucket") -> Path:
    write_bare(tmp_path / "code")
    spec = tmp_path / "job.yaml"
    spec.write_text(SPEC.format(bucket=bucket))
    return spec


def test_links_to_what_the_rules_leave_out_are_a_warning_at_validate(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    links = write_leaky_links(tmp_path / "code")
    diagnostics = api.check_file(spec).diagnostics
    assert [d.code for d in diagnostics if d.severity == "error"] == []
    [warned] = [d for d in diagnostics if d.code == "source-links"]
    assert (warned.severity, warned.path, warned.line) == ("warning", "chief.python_package.source", 8)
    assert "left out of the package" in warned.message
    for name in links[:5]:
        assert f"{name} -> {os.readlink(tmp_path / 'code' / name)} (its target is left out)" in warned.message
    [package] = api.plan(spec).packages
    assert package.source.files == 6  # the four files of trainer/ and the two ignore files


@pytest.mark.slow
def test_an_uploaded_package_carries_no_link_to_what_the_rules_leave_out(tmp_path: Path, gcs: Any,
                                                                        bucket: str) -> None:
    from vxtrain.packaging import sdists

    spec = _spec(tmp_path, bucket)
    links = write_leaky_links(tmp_path / "code")
    (tmp_path / "code" / "trainer" / "settings.yaml").symlink_to("config.yaml")  # to a packaged file: that file
    [package] = api.plan(spec).packages
    [published] = sdists.publish([package], "vxtrain-test")
    uploaded = gzip.decompress(gcs.bucket(bucket).get_blob(split_gs_uri(published.uri)[1]).download_as_bytes())
    with tarfile.open(fileobj=io.BytesIO(uploaded)) as tar:
        names = [name.split("/", 1)[1] for name in tar.getnames() if "/" in name]
    assert "trainer/settings.yaml" in names and not set(links) & set(names)
    assert not any(secret in uploaded for secret in SECRETS)



def test_hard_links_of_what_the_rules_leave_out_are_a_warning_at_validate(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    links = write_leaky_hard_links(tmp_path / "code")
    diagnostics = api.check_file(spec).diagnostics
    assert [d.code for d in diagnostics if d.severity == "error"] == []
    assert [d for d in diagnostics if d.code == "source-hard-links"] == []  # nothing is "outside the folder"
    [warned] = [d for d in diagnostics if d.code == "source-links"]
    assert (warned.severity, warned.path, warned.line) == ("warning", "chief.python_package.source", 8)
    for name, other in links.items():
        assert f"{name} -> {other} (a hard link: the same file as that name, which is left out)" in warned.message
    [package] = api.plan(spec).packages
    assert package.source.files == 6  # the four files of trainer/ and the two ignore files


@pytest.mark.slow
def test_an_uploaded_package_carries_no_hard_link_of_what_the_rules_leave_out(tmp_path: Path, gcs: Any,
                                                                             bucket: str) -> None:
    from vxtrain.packaging import sdists

    spec = _spec(tmp_path, bucket)
    links = write_leaky_hard_links(tmp_path / "code")
    [package] = api.plan(spec).packages
    [published] = sdists.publish([package], "vxtrain-test")
    uploaded = gzip.decompress(gcs.bucket(bucket).get_blob(split_gs_uri(published.uri)[1]).download_as_bytes())
    with tarfile.open(fileobj=io.BytesIO(uploaded)) as tar:
        names = [name.split("/", 1)[1] for name in tar.getnames() if "/" in name]
    assert "trainer/task.py" in names and not set(links) & set(names)
    assert not any(secret in uploaded for secret in SECRETS)

def test_a_private_key_by_content_is_refused_at_validate_unless_ignored(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    (tmp_path / "code" / "trainer" / "server.pem").write_text(private_key("EC PRIVATE KEY"))
    [error] = [d for d in api.check_file(spec).diagnostics if d.severity == "error"]
    assert (error.code, error.path, error.line) == ("source-credentials", "chief.python_package.source", 8)
    assert "trainer/server.pem (a private key" in error.message and KEY_BODY not in error.message
    (tmp_path / "code" / ".gitignore").write_text("*.pem\n")
    assert [d for d in api.check_file(spec).diagnostics if d.severity == "error"] == []


def test_a_private_key_by_content_uploads_nothing(tmp_path: Path, gcs: Any, bucket: str,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    spec = _spec(tmp_path, bucket)
    (tmp_path / "code" / "server.pem").write_text(private_key("OPENSSH PRIVATE KEY"))
    exit_code, out, err = run(capsys, "submit", str(spec), "--endpoint", "127.0.0.1:9")
    assert exit_code == 1 and "[source-credentials]" in err and "server.pem (a private key" in err
    assert KEY_BODY not in out + err and "Traceback" not in err
    assert list(gcs.list_blobs(bucket)) == []
