"""The limits (vxtrain/loading/limits.py): hostile files are refused fast and small, < 1 s and < 200 MB peak.

Each case is generated in tmp_path. Time is measured with time.perf_counter
and Python-level memory with tracemalloc in this process; one test reruns
every case in a fresh interpreter and checks its peak RSS, which also covers
libyaml's own (C) allocations.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from vxtrain.loading import events, limits, load, load_text
from vxtrain.loading.variables import substitute

SECONDS = 1.0
PEAK_BYTES = 200 * 1024 * 1024
ROOT = Path(__file__).resolve().parents[2]


def fifty_mb(path: Path) -> None:
    with path.open("wb") as handle:
        handle.write(b"display_name: x\n")
        handle.truncate(50 * 1024 * 1024)


def billion_laughs(path: Path) -> None:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, name in zip("abcdefgh", "bcdefghi"):
        lines.append(f"{name}: &{name} [{', '.join(['*' + prev] * 9)}]")
    path.write_text("\n".join(lines) + "\n")


def deep_lists(path: Path) -> None:
    path.write_text("x: " + "[" * 10_000 + "]" * 10_000 + "\n")


def deep_maps(path: Path) -> None:
    path.write_text("a: " + "{a: " * 10_000 + "1" + "}" * 10_000 + "\n")


def deep_block(path: Path) -> None:
    path.write_text("".join(" " * i + "a:\n" for i in range(2_000)) + " " * 2_000 + "b: 1\n")


def deep_through_alias(path: Path) -> None:
    nest = "{a: " * 40 + "1" + "}" * 40
    path.write_text(f"base: &d {nest}\nuse: {'{a: ' * 40}*d{'}' * 40}\n")


def many_nodes(path: Path) -> None:
    path.write_text("a: [" + "1," * 150_000 + "1]\n")


def wide_alias(path: Path) -> None:
    items = ", ".join(str(i) for i in range(1_000))
    path.write_text(f"w: &w [{items}]\nuse: [{', '.join(['*w'] * 200)}]\n")


CASES: dict[str, tuple[Callable[[Path], None], str]] = {
    "fifty_mb": (fifty_mb, "too-large"),
    "billion_laughs": (billion_laughs, "alias-limit"),
    "deep_lists": (deep_lists, "too-deep"),
    "deep_maps": (deep_maps, "too-deep"),
    "deep_block": (deep_block, "too-deep"),
    "deep_through_alias": (deep_through_alias, "too-deep"),
    "many_nodes": (many_nodes, "too-many-nodes"),
    "wide_alias": (wide_alias, "alias-limit"),
}


def measure(action: Callable[[], object]) -> tuple[object, float, int]:
    """Result and seconds of ``action``, and its tracemalloc peak in a second run.

    tracemalloc slows every allocation down several times, so time is taken
    in a run without it.
    """
    start = time.perf_counter()
    result = action()
    seconds = time.perf_counter() - start
    tracemalloc.start()
    try:
        action()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return result, seconds, peak


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_hostile_file_is_refused_fast_and_small(tmp_path: Path, name: str) -> None:
    make, code = CASES[name]
    path = tmp_path / f"{name}.yaml"
    make(path)
    (doc, diags), seconds, peak = measure(lambda: load(path, environ={}))  # type: ignore[misc]
    assert doc is None
    assert [d.code for d in diags] == [code], diags
    assert str(diags[0].file) == str(path)
    assert seconds < SECONDS and peak < PEAK_BYTES, (seconds, peak)


def test_limits_name_the_size_and_limit(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    fifty_mb(path)
    _, diags = load(path, environ={})
    assert f"{50 * 1024 * 1024:,} bytes" in diags[0].message
    assert f"{limits.MAX_FILE_BYTES:,} bytes" in diags[0].message


def test_hostile_text_is_refused_too() -> None:
    big = "a: " + "x" * (50 * 1024 * 1024)
    for text, code in ((big, "too-large"), (big.encode(), "too-large"),
                       ("x: " + "[" * 10_000, "too-deep")):
        (doc, diags), seconds, peak = measure(lambda: load_text(text, environ={}))  # type: ignore[misc]
        assert doc is None and [d.code for d in diags] == [code]
        assert seconds < SECONDS and peak < PEAK_BYTES


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_endless_device_is_refused_without_a_read() -> None:
    (doc, diags), seconds, _ = measure(lambda: load("/dev/zero", environ={}))  # type: ignore[misc]
    assert doc is None and [d.code for d in diags] == ["file-unreadable"]
    assert "a character device, not a spec file" in diags[0].message
    assert seconds < SECONDS


def test_just_within_limits_still_loads(tmp_path: Path) -> None:
    nest = "{a: " * (limits.MAX_DEPTH - 1) + "1" + "}" * (limits.MAX_DEPTH - 1)
    doc, diags = load_text(f"a: {nest}\n", environ={})
    assert doc is not None and diags == []
    doc, diags = load_text(f"a: {nest[:-1]}{{b: 1}}" + "}" * 0 + "\n", environ={})
    assert doc is None and [d.code for d in diags] in (["too-deep"], ["yaml-syntax"])
    items = ", ".join(["1"] * 99)
    doc, diags = load_text(f"w: &w [{items}]\nuse: [{', '.join(['*w'] * 900)}]\n", environ={})
    assert doc is not None and len(doc.data["use"]) == 900


CHILD = """
import json, resource, sys, time
from vxtrain.loading import load
out = {}
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
for path in sys.argv[1:]:
    start = time.perf_counter()
    doc, diags = load(path, environ={})
    out[path] = [time.perf_counter() - start, [d.code for d in diags]]
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"cases": out, "grew_kib": after - before}))
"""


def test_peak_rss_in_a_fresh_process(tmp_path: Path) -> None:
    paths = []
    for name, (make, _) in sorted(CASES.items()):
        paths.append(tmp_path / f"{name}.yaml")
        make(paths[-1])
    proc = subprocess.run([sys.executable, "-c", CHILD, *map(str, paths)], cwd=ROOT,
                          env={"PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
                          timeout=120, check=True)
    report = json.loads(proc.stdout)
    assert report["grew_kib"] * 1024 < PEAK_BYTES
    for path, (seconds, codes) in report["cases"].items():
        assert seconds < SECONDS and len(codes) == 1, (path, seconds, codes)


def many_anchors(path: Path) -> None:
    path.write_text("".join(f"k{i}: &a{i} {{x: 1}}\n" for i in range(20_000)))


def many_references(path: Path) -> None:
    path.write_text("a: " + "${UNDEFINED}${1}" * 50_000 + "\n")


def many_duplicates(path: Path) -> None:
    path.write_text("a: 1\n" * 200_000)


@pytest.mark.slow
@pytest.mark.parametrize(("make", "code"), [
    (many_anchors, None), (many_references, "undefined-variable"), (many_duplicates, "too-many-errors"),
])
def test_costly_but_small_files_stay_bounded(tmp_path: Path, make: Callable[[Path], None],
                                             code: str | None) -> None:
    path = tmp_path / "costly.yaml"
    make(path)
    (doc, diags), seconds, peak = measure(lambda: load(path, environ={}))  # type: ignore[misc]
    assert seconds < 2 * SECONDS and peak < PEAK_BYTES, (seconds, peak)
    if code is None:
        assert doc is not None and diags == []
    else:
        assert doc is None and code in {d.code for d in diags} and len(diags) <= limits.MAX_ERRORS + 1


# --- a big string repeated: bounded in characters, not only in nodes ------------------------

def test_variable_references_cannot_expand_a_small_file_into_gigabytes() -> None:
    # 4 MB of "${P}" with a 2,000-character P used to build a 2 GB string (5 s, 2 GB RSS):
    # any long variable of the environment (PATH, LS_COLORS) would do.
    text = "a: " + "${P}" * 1_000_000 + "\n"
    (doc, diags), seconds, peak = measure(lambda: load_text(text, "v.yaml", environ={"P": "x" * 2000}))  # type: ignore[misc]
    assert doc is None and [d.code for d in diags] == ["variable-limit"], diags
    assert (diags[0].path, diags[0].line, diags[0].column) == ("a", 1, 4)
    assert f"{limits.MAX_CHARS:,}" in diags[0].message
    assert seconds < SECONDS and peak < PEAK_BYTES, (seconds, peak)


def test_a_long_string_repeated_through_aliases_is_refused() -> None:
    # Few nodes, so MAX_NODES does not stop it; the built document would hold 3 GB of text.
    big = "x" * 1_000_000
    for text in (f"a: &a {big}\nb: [{', '.join(['*a'] * 3000)}]\n",
                 f"a: &k {big}\nb: [{', '.join(['{*k : 1}'] * 3000)}]\n"):
        (doc, diags), seconds, peak = measure(lambda: load_text(text, "s.yaml", environ={}))  # type: ignore[misc]
        assert doc is None and [d.code for d in diags] == ["alias-limit"], diags[0].code
        assert diags[0].line == 2 and diags[0].column is not None
        assert seconds < SECONDS and peak < PEAK_BYTES, (seconds, peak)


def test_substitution_within_the_character_budget_still_works() -> None:
    doc, diags = load_text("a: ${P}${P}\nb: [\"${P}\"]\n", environ={"P": "x" * 1000})
    assert doc is not None and diags == [] and doc.data == {"a": "x" * 2000, "b": ["x" * 1000]}
    assert substitute("${P}${P}", {}, {"P": "xy"}, limit=3)[1][0][0] == "variable-limit"
    assert substitute("${P}${P}", {}, {"P": "xy"}, limit=4) == ("xyxy", [], False)


# --- too-deep whatever PyYAML's own nesting limit ---------------------------------------------
# libyaml 0.2.6 (PyYAML 6.0.4's wheels) stops at 1,000 levels with "exceeded maximum nesting
# depth", and its scanner reads up to 1,024 characters ahead of the events it gives: on one
# line of `[[[[…` it stops before MAX_DEPTH is reached in events. libyaml 0.2.5 (6.0.3) has
# no limit. Either way the loader reports too-deep where MAX_DEPTH is passed.

DEEP_TEXTS: dict[str, tuple[str, tuple[int, int, str]]] = {
    # name: (text, (line, column, path) of the too-deep diagnostic)
    "flow lists": ("x: " + "[" * 10_000 + "]" * 10_000 + "\n", (1, 67, "x" + "[0]" * 63)),
    "unclosed flow lists": ("x: " + "[" * 10_000, (1, 67, "x" + "[0]" * 63)),
    "lists in a flow map": ("a: {b: " + "[" * 3000 + "\n", (1, 70, "a.b" + "[0]" * 62)),
    "lists after items": ("x: [1, " + "[2, " * 3000 + "]", (1, 256, "x" + "[1]" * 63)),
    "flow maps and lists": ("x: " + "[{a: " * 1500, (1, 160, "x" + "[0].a" * 31 + "[0]")),
    "lists in a block list": ("x:\n  - " + "[" * 2000 + "\n", (2, 67, "x" + "[0]" * 63)),
    "flow maps": ("a: " + "{a: " * 10_000 + "1" + "}" * 10_000 + "\n", (1, 256, ".".join(["a"] * 64))),
    "block maps": ("".join(" " * i + "a:\n" for i in range(2_000)) + " " * 2_000 + "b: 1\n",
                   (65, 65, ".".join(["a"] * 64))),
    "compact block lists": ("a:\n" + "- " * 3000 + "x\n", (2, 127, "a" + "[0]" * 63)),
}


@pytest.mark.parametrize("name", sorted(DEEP_TEXTS))
def test_too_deep_is_located_where_max_depth_is_passed(name: str) -> None:
    text, where = DEEP_TEXTS[name]
    doc, diags = load_text(text, "deep.yaml", environ={})
    assert doc is None and [d.code for d in diags] == ["too-deep"], diags
    assert (diags[0].line, diags[0].column, diags[0].path) == where
    assert diags[0].message == (f"nesting deeper than {limits.MAX_DEPTH} levels; a spec needs far fewer: "
                                "flatten the structure")


def test_problems_before_the_nesting_are_kept() -> None:
    # Characters beyond ASCII before the cut: PyYAML's mark counts characters, not bytes.
    text = "é: ü€😀\nb: [1]\ndup: 1\ndup: 2\nx: " + "[" * 5000
    doc, diags = load_text(text, "deep.yaml", environ={})
    assert doc is None
    assert [(d.code, d.line, d.column) for d in diags] == [("duplicate-key", 4, 1), ("too-deep", 5, 67)]


def test_pyyaml_nesting_errors_are_recognised() -> None:
    # The error as PyYAML 6.0.4's C parser raises it, built here so the check runs under any PyYAML.
    mark = yaml.Mark("<unicode string>", 1002, 0, 1002, None, None)
    nesting = yaml.scanner.ScannerError("while increasing flow level", mark,
                                        "exceeded maximum nesting depth", mark)
    assert events.nesting_cut(nesting) == 1002
    other = yaml.scanner.ScannerError("while scanning a quoted scalar", mark,
                                      "found unexpected end of stream", mark)
    assert events.nesting_cut(other) is None
    assert events.nesting_cut(yaml.YAMLError("no marks")) is None


_SET_NEST = getattr(getattr(yaml, "_yaml", None), "_set_max_nest_level", None)


@pytest.mark.skipif(_SET_NEST is None, reason="this PyYAML's libyaml has no nesting limit")
@pytest.mark.parametrize("nest", [65, 66, 67, 100, 500])
def test_too_deep_whatever_libyaml_s_limit(nest: int) -> None:
    # With libyaml's limit just above MAX_DEPTH every deep text stops in libyaml first; at or
    # below it the position is libyaml's (the path may be shorter), the code still too-deep.
    assert _SET_NEST is not None
    get_nest = yaml._yaml._get_max_nest_level  # type: ignore[attr-defined]
    before = get_nest()
    _SET_NEST(nest)
    try:
        for name, (text, where) in DEEP_TEXTS.items():
            doc, diags = load_text(text, "deep.yaml", environ={})
            assert doc is None and [d.code for d in diags] == ["too-deep"], (name, diags)
            if nest > limits.MAX_DEPTH + 1:
                assert (diags[0].line, diags[0].column, diags[0].path) == where, name
    finally:
        _SET_NEST(before)
