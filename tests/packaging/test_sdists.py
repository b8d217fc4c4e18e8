"""Where a source folder's sdist goes (vxtrain.packaging.sdists): a content-addressed URI under
the staging bucket, one per folder however many pools run it."""
from __future__ import annotations

from pathlib import Path

from tests.sources.folders import write_bare
from vxtrain import api
from vxtrain.packaging.sdists import package_uri
from vxtrain.sources.folder import describe


def test_uri_is_content_addressed_under_the_staging_bucket(bare_source: Path) -> None:
    src = describe(bare_source)
    assert package_uri("gs://b/some/prefix/", src.name, src.digest) == \
        f"gs://b/some/prefix/vxtrain-packages/src_bare-{src.digest}.tar.gz"
    assert package_uri("gs://b", "trainer", "abc") == "gs://b/vxtrain-packages/trainer-abc.tar.gz"


def test_pools_of_one_folder_share_one_package(tmp_path: Path) -> None:
    write_bare(tmp_path / "code")
    spec = tmp_path / "job.yaml"
    spec.write_text("display_name: t\nstaging_bucket: gs://my-bucket\ndefaults:\n  python_package:\n"
                    "    executor_image: us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-14.py310:latest\n"
                    "    module: trainer.task\n    source: code\nchief:\n  machine_type: n1-standard-4\n"
                    "workers:\n  replicas: 2\n  machine_type: n1-standard-4\n")
    [package] = api.plan(spec).packages
    src = describe(tmp_path / "code")
    assert package.roles == ["chief", "workers"]
    assert package.uri == package_uri("gs://my-bucket", src.name, src.digest)
