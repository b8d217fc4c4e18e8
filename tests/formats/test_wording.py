"""Each input format's words for what validation asks the user to add (vxtrain/formats/wording.py)."""
from __future__ import annotations

from typing import get_args

from vxtrain.formats.wording import wording
from vxtrain.loading.document import Format


def test_every_format_has_its_words() -> None:
    for fmt in get_args(Format):
        words = wording(fmt)
        assert words.chief_hint and words.code_hint


def test_hints_and_key_names_in_the_format_s_words() -> None:
    assert wording("gcloud").code_hint_for(3).startswith("give workerPoolSpecs[3] ")
    assert wording("native").code_hint_for(3) == wording("native").code_hint  # no index in native words
    assert wording("gcloud").key_name("module") == "pythonModule"
    assert wording("legacy").key_name("display_name") == "jobId"
    assert wording("native").key_name("module") == "module"
    assert wording("gcloud").key_name("machine_type") == "machine_type"  # no other name known
