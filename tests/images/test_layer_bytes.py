"""A layer's bytes are pinned: a new compressor (another ISA-L build, another level) or a
change in how the tar is written is noticed here, not as every user's layers quietly
re-uploading under new digests."""
from __future__ import annotations

import gzip
import hashlib
import os
import platform
import random
import shutil
from pathlib import Path, PurePosixPath

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vxtrain.images.layers import CHUNK, write_code_layer, write_layer
from vxtrain.sources.folder import describe

#: The digests of the layer below, as written with python-isal 1.9.1 (ISA-L's deflate, level 2)
#: on linux/amd64. Change them only with a decision (docs/decisions.md, "Image files and their
#: speed"): every image's layer digests change with them. The tar (PINNED_DIFF_ID) is Python's
#: own tarfile and the same on every CPU (checked: CPython 3.10 to 3.13 write the same bytes);
#: the gzip is ISA-L's, whose Arm build (NEON) is not known to write the same bytes as x86's, so
#: PINNED_DIGEST is checked on x86-64 only: elsewhere it would fail for the machine, not for a change.
PINNED_DIGEST = "sha256:bdc054e27b04ba96b5591781372ad252135a6c75b1be54affb2f500da4270b1f"
PINNED_DIFF_ID = "sha256:558198dee5bec71ed445fc4bf35bd6dcb7921f3a789123e225f872f2712e5c00"
PINNED_ON = ("x86_64", "amd64")


def _tiny(root: Path) -> list[tuple[PurePosixPath, Path]]:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_bytes(b"")
    (root / "pkg" / "run.sh").write_bytes(b"#!/bin/sh\necho hi\n")
    os.chmod(root / "pkg" / "run.sh", 0o755)
    (root / "pkg" / "data.txt").write_bytes(b"x" * 5000 + bytes(range(256)) * 20)
    return [(PurePosixPath("/opt/vxtrain/code") / p.relative_to(root).as_posix(), p)
            for p in sorted(root.rglob("*")) if p.is_file()]


def test_a_tiny_layer_is_the_pinned_tar(tmp_path: Path) -> None:
    """The tar (how entries are named, ordered, normalised): the same on every CPU and Python."""
    layer = write_layer(_tiny(tmp_path / "src"), tmp_path / "layer.tar.gz")
    data = (tmp_path / "layer.tar.gz").read_bytes()
    assert f"sha256:{hashlib.sha256(data).hexdigest()}" == layer.digest
    assert f"sha256:{hashlib.sha256(gzip.decompress(data)).hexdigest()}" == layer.diff_id
    assert layer.diff_id == PINNED_DIFF_ID


@pytest.mark.skipif(platform.machine().lower() not in PINNED_ON,
                    reason="the gzip bytes are pinned for ISA-L's x86-64 build; its Arm build is unverified")
def test_a_tiny_layer_is_the_pinned_gzip(tmp_path: Path) -> None:
    """The compressed bytes: a new ISA-L build or level shows up here, not as re-uploads."""
    layer = write_layer(_tiny(tmp_path / "src"), tmp_path / "layer.tar.gz")
    assert (layer.digest, layer.diff_id) == (PINNED_DIGEST, PINNED_DIFF_ID)


def test_a_layer_past_several_chunks_is_one_valid_gzip_member(tmp_path: Path) -> None:
    """Text and incompressible bytes across the compressor's CHUNK boundaries: Python's own
    gzip reads it back to the tar whose digest is the diff_id, and a second write is the same bytes."""
    root = tmp_path / "src"
    root.mkdir()
    rng = random.Random(7)
    (root / "noise.bin").write_bytes(rng.randbytes(CHUNK + 12_345))
    (root / "text.txt").write_bytes(b"".join(b"line %d of the text\n" % i for i in range(150_000)))
    files = [(PurePosixPath("/opt/vxtrain/code") / p.name, p) for p in sorted(root.iterdir())]
    one = write_layer(files, tmp_path / "one.tar.gz")
    two = write_layer(files, tmp_path / "two.tar.gz")
    tar = gzip.decompress((tmp_path / "one.tar.gz").read_bytes())
    assert f"sha256:{hashlib.sha256(tar).hexdigest()}" == one.diff_id
    assert (tmp_path / "one.tar.gz").read_bytes() == (tmp_path / "two.tar.gz").read_bytes()
    assert one.size < len(tar)  # the text compresses


_NAMES = st.lists(st.sampled_from(["a.py", "a/b.py", "a-b.txt", "a/b/c", "B.md", "é.txt", "a_b/x", "z", "a.b/y"]),
                  min_size=1, max_size=6, unique=True)


@pytest.mark.slow
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(names=_NAMES, data=st.data())
def test_the_code_layer_reads_the_files_the_tag_names(tmp_path: Path, names: list[str], data: st.DataObject) -> None:
    """The code layer feeds the source digest the bytes it writes, so the push compares it with
    the tag's instead of reading the folder again: the two agree whatever the names' order."""
    root = tmp_path / f"src{abs(hash(tuple(names)))}"
    for name in names:
        if any(other.startswith(name + "/") for other in names):
            continue  # a name that is another's folder
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data.draw(st.binary(max_size=300)))
        os.chmod(root / name, data.draw(st.sampled_from([0o644, 0o755, 0o600, 0o700])))
    source = describe(root)
    layer = write_code_layer(source, tmp_path / "layer.tar.gz")
    assert layer.content == source.digest
    shutil.rmtree(root)
