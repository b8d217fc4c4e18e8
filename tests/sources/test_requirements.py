"""A build's requirements files (vxtrain.sources.requirements): one walk of the -r/-c includes
for the three readers (the check that they stay in the project, the bytes the tag covers, the
files whose lines pip's errors must not quote), following includes as pip does."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from vxtrain.sources.requirements import outside_includes, requirement_files, requirements_bytes

SECRET = "root:$6$SECRET-HASH:19000:0:99999:7:::"


def test_the_three_readers_walk_one_graph(tmp_path: Path) -> None:
    """Repeated, circular, URL and missing includes: each local file is read once, in the order
    pip meets them; a URL or a missing file counts by its name in the tag; a file outside is
    named by file and line, never opened."""
    (tmp_path / "outside.txt").write_text(SECRET + "\n")
    project = tmp_path / "project"
    (project / "sub").mkdir(parents=True)
    top = project / "requirements.txt"
    top.write_text("-r more.txt\n-c sub/pins.txt\n-r https://example.com/r.txt\n-r missing.txt\n-r more.txt\n"
                   "-r requirements.txt\nmarker-top\n")
    (project / "more.txt").write_text("--requirement=sub/deep.txt\nmarker-more\n-r ./more.txt\n")
    (project / "sub" / "pins.txt").write_text("marker-pins\n-c ../more.txt\n")
    (project / "sub" / "deep.txt").write_text("-c pins.txt\nmarker-deep\n-r ../../outside.txt\n")
    assert requirement_files(top) == [top, project / "more.txt", project / "sub" / "pins.txt",
                                      project / "sub" / "deep.txt", tmp_path / "outside.txt"]
    [outside] = outside_includes(top, [project])
    assert (outside.file, outside.line, outside.written) == (project / "sub" / "deep.txt", 3, "../../outside.txt")
    covered = requirements_bytes(top, (tmp_path,))  # the outside file is inside tmp_path's project here
    for marker in ("marker-top", "marker-more", "marker-pins", "marker-deep"):
        assert covered.count(marker.encode()) == 1, marker
    assert covered.count(SECRET.encode()) == 1
    named = re.findall(rb"\0include\0([^\0]*)\0(\d+)\0", covered)
    assert [(name.decode(), int(size) > 0) for name, size in named] == [
        ("more.txt", True), ("sub/pins.txt", True), ("https://example.com/r.txt", False),
        ("missing.txt", False), ("sub/deep.txt", True), ("../../outside.txt", True)]


def _pip_reads(requirements: Path, tmp_path: Path) -> list[Path]:
    """The files pip itself names in its error for ``requirements`` (each holding an invalid line)."""
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--no-index",
                           "--disable-pip-version-check", "--target", str(tmp_path / "t"), "-r", str(requirements)],
                          capture_output=True, text=True, check=False)
    return [Path(name).resolve() for name in re.findall(r"\(from line \d+ of (.+?)\)", proc.stderr)]


def test_an_include_is_followed_from_where_pip_names_its_file_not_from_a_link_s_target(tmp_path: Path) -> None:
    """pip reads ``-r ../../x.txt`` in ``sub/more.txt`` from ``sub/`` even when ``sub/more.txt`` is
    a link to ``a/b/more.txt``: the walk does too, so the file outside is named (and no check
    passes a file inside that pip never reads)."""
    project = tmp_path / "project"
    (project / "sub").mkdir(parents=True)
    (project / "a" / "b").mkdir(parents=True)
    top = project / "requirements.txt"
    top.write_text("-r sub/more.txt\n")
    (project / "a" / "b" / "more.txt").write_text("-r ../../x.txt\n")
    (project / "sub" / "more.txt").symlink_to("../a/b/more.txt")
    (project / "x.txt").write_text("not-a-requirement!\n")  # what a walk from the link's target reads
    (tmp_path / "x.txt").write_text(SECRET + "\n")  # what pip reads
    assert _pip_reads(top, tmp_path) == [tmp_path / "x.txt"]
    [outside] = outside_includes(top, [project])
    assert (outside.file, outside.line, outside.resolved) == (project / "sub" / "more.txt", 1, tmp_path / "x.txt")
    assert requirement_files(top)[-1] == tmp_path / "x.txt"  # so pip's error about it is cleaned
    assert SECRET.encode() in requirements_bytes(top, (tmp_path,))


@pytest.mark.parametrize("link", [False, True])
def test_a_file_named_by_two_paths_is_read_from_each(tmp_path: Path, link: bool) -> None:
    """The same file met again through a link in another folder: pip reads its includes from
    there too, so the walk does; without a link it is read once."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "common.txt").write_text("-r pins.txt\n")
    (tmp_path / "a" / "pins.txt").write_text("marker-a\n")
    (tmp_path / "b" / "pins.txt").write_text("marker-b\n")
    if link:
        (tmp_path / "b" / "common.txt").symlink_to("../a/common.txt")
    top = tmp_path / "requirements.txt"
    top.write_text("-r a/common.txt\n" + ("-r b/common.txt\n" if link else ""))
    covered = requirements_bytes(top)
    assert covered.count(b"marker-a") == 1 and covered.count(b"marker-b") == (1 if link else 0)


@pytest.mark.parametrize("option", ["-r", "-c"])
def test_an_include_that_is_a_fifo_is_refused_at_once_not_waited_on(tmp_path: Path, option: str) -> None:
    """Opening a FIFO blocks until a writer comes: ``-r fifo`` hung validate and plan forever.
    Run in a child process with a timeout, so a hang fails the test instead of the suite."""
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "requirements.txt").write_text(f"numpy\n{option} fifo\n")
    code = ("import sys; from pathlib import Path; from vxtrain.sources import requirements as r\n"
            "top = Path(sys.argv[1])\n"
            "print(r.outside_includes(top, [top.parent]))\n"
            "try:\n    r.requirements_bytes(top)\nexcept r.RequirementsError as exc:\n    print(exc)\n")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "requirements.txt")],
                          capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "[]", f"{tmp_path / 'fifo'} (included by requirements.txt) is not a regular file (a FIFO, a socket or a "
              "device), which pip would wait on or refuse: name a requirements file"]
