"""load_text as a whole (vxtrain/loading/loader.py): properties checked with hypothesis, and the exports."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import ROOT
from tests.loading.helpers import SETTINGS
from vxtrain.loading import load_text

# "${" would be a variable reference and "<<" a (refused) merge key: both are
# loader rules tested elsewhere, not round-trip material. NEL (U+0085) is left
# out because PyYAML's emitter folds it into a space (yaml.safe_load does not
# round-trip it either).
texts = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x85")).filter(lambda s: "${" not in s)
keys = texts.filter(lambda s: s != "<<")
scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | texts
def _nest(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.lists(children, max_size=4) | st.dictionaries(keys, children, max_size=4)


trees = st.recursive(scalars, _nest, max_leaves=25)
documents = st.dictionaries(keys, trees, max_size=6)


def key_paths(value: Any, path: tuple[Any, ...] = ()) -> set[tuple[Any, ...]]:
    """Every key path in ``value``, the root included."""
    out = {path}
    if isinstance(value, dict):
        for key, child in value.items():
            out |= key_paths(child, path + (key,))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            out |= key_paths(child, path + (index,))
    return out


@pytest.mark.slow
@SETTINGS
@given(documents, st.sampled_from([None, True, False]))
def test_safe_dump_round_trips_with_a_position_for_every_path(data: dict[str, Any],
                                                             flow: bool | None) -> None:
    text = yaml.safe_dump(data, default_flow_style=flow, allow_unicode=True)
    doc, diags = load_text(text, "p.yaml", environ={})
    assert doc is not None, (text, diags)
    assert diags == []
    assert doc.data == data
    assert set(doc.positions) == key_paths(data)
    lines = text.count("\n") + 1
    assert all(1 <= p.line <= lines and p.column >= 1 and p.file == "p.yaml"
               for p in doc.positions.values())



def node_positions(node: Any, path: tuple[Any, ...] = ()) -> dict[tuple[Any, ...], tuple[int, int]]:
    """(line, column) of every key path, from PyYAML's composed nodes: a key's own
    node, a sequence item's node, the root's node."""
    out = {path: (node.start_mark.line + 1, node.start_mark.column + 1)} if not path else {}
    if isinstance(node, yaml.MappingNode):
        for key, child in node.value:
            here = path + (key.value,)
            out[here] = (key.start_mark.line + 1, key.start_mark.column + 1)
            out.update(node_positions(child, here))
    elif isinstance(node, yaml.SequenceNode):
        for index, child in enumerate(node.value):
            out[path + (index,)] = (child.start_mark.line + 1, child.start_mark.column + 1)
            out.update(node_positions(child, path + (index,)))
    return out


@pytest.mark.slow
@SETTINGS
@given(documents, st.sampled_from([None, True, False]))
def test_positions_are_those_of_pyyaml_s_nodes(data: dict[str, Any], flow: bool | None) -> None:
    # The builder places most events inline (its hot path): each position must still be
    # where PyYAML's own composer puts the node.
    text = yaml.safe_dump(data, default_flow_style=flow, allow_unicode=True)
    doc, _ = load_text(text, "p.yaml", environ={})
    assert doc is not None
    expected = node_positions(yaml.compose(text, Loader=yaml.SafeLoader))
    assert {path: (p.line, p.column) for path, p in doc.positions.items()} == expected


@SETTINGS
@given(st.text() | st.binary() | st.text(alphabet="[]{}:,-&*!|>'\"#%@`?$ \t\n\rab01"))
def test_any_input_gives_a_document_or_an_error(text: str | bytes) -> None:
    doc, diags = load_text(text, "x.yaml", environ={})
    if doc is None:
        assert any(d.severity == "error" for d in diags)
    else:
        assert isinstance(doc.data, dict) and () in doc.positions
        assert not any(d.severity == "error" for d in diags)
    assert not any(d.code == "internal-error" for d in diags), diags


def test_the_package_exports_the_loader_without_importing_yaml_up_front() -> None:
    # every stage imports vxtrain.loading.document; only loading a file needs PyYAML
    code = ("import sys; import vxtrain.loading.document; assert 'yaml' not in sys.modules\n"
            "from vxtrain.loading import load, load_text, loader\n"
            "assert (load, load_text) == (loader.load, loader.load_text) and 'yaml' in sys.modules\n")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, timeout=60)


def test_a_bug_of_ours_reaches_the_one_error_handler_not_a_diagnostic(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """The loader turns bad input into diagnostics, and nothing else: a bug in one of its
    steps propagates to cli.main's handler ("unexpected error", the traceback in a log file)."""
    from vxtrain.cli import main
    from vxtrain.loading import loader

    def buggy(*args: Any, **kwargs: Any) -> Any:
        return 1 / 0

    monkeypatch.setattr(loader, "parse", buggy)
    monkeypatch.setenv("VXTRAIN_LOG_DIR", str(tmp_path))
    code = main(["validate", str(ROOT / "configs" / "examples" / "quickstart.yaml")])
    out, err = capsys.readouterr()
    assert code == 1 and out == ""
    assert err.startswith("vxtrain: unexpected error: ZeroDivisionError: division by zero (details in ")
    (log,) = tmp_path.glob("vxtrain-error-*.log")
    assert f"(details in {log})" in err
    assert "ZeroDivisionError" in log.read_text() and "buggy" in log.read_text()


def test_a_path_no_file_can_have_is_a_diagnostic() -> None:
    from vxtrain.loading import load

    doc, diags = load("spec\0.yaml")
    assert doc is None and [d.code for d in diags] == ["file-unreadable"]
