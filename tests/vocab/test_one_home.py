"""Each shared word has one home, vxtrain.vocab: a second copy appearing elsewhere in the
package fails here (issue 26, item 4). The greps read source text, comments included, so a
copy pasted into a docstring is found too: point at the vocab module instead."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from vxtrain.vocab import callbacks, resources, timestamps

PACKAGE = Path(__file__).resolve().parents[2] / "vxtrain"


def sources() -> dict[str, str]:
    """Every .py file of the package by its path relative to vxtrain/."""
    return {str(path.relative_to(PACKAGE)): path.read_text(encoding="utf-8") for path in sorted(PACKAGE.rglob("*.py"))}


def holders(pattern: str) -> list[str]:
    """The package's .py files with a match of ``pattern``."""
    found = re.compile(pattern, re.MULTILINE)
    return [name for name, text in sources().items() if found.search(text)]


def test_the_persistent_resource_id_pattern_is_written_once() -> None:
    # The pattern's text, wherever it is spelt (a regex, a message, a quote of the API).
    assert holders(re.escape("[a-z]([a-z0-9-]{0,61}[a-z0-9])?")) == ["vocab/resources.py"]
    assert resources.PERSISTENT_RESOURCE_ID.fullmatch("my-resource-1")
    assert not resources.PERSISTENT_RESOURCE_ID.fullmatch("projects/p/locations/r/persistentResources/x")
    assert not resources.PERSISTENT_RESOURCE_ID.fullmatch("ends-with-")


@pytest.mark.parametrize(("name", "home"), [("Say", "vocab/callbacks.py"), ("ProgressFn", "submission/events.py")])
def test_each_callback_type_is_defined_once(name: str, home: str) -> None:
    # `Say = ...` or `Say: TypeAlias = ...` at the start of a line defines one; an
    # `import ... as Say` re-export does not.
    assert holders(rf"^{name}\s*(:[^=\n]*)?=") == [home]
    assert name != "Say" or callbacks.Say is not None


def test_rfc_3339_is_parsed_in_one_place() -> None:
    # A parser of RFC 3339 into a datetime needs fromisoformat and a regex for the date and
    # time. (Not caught: submission/create.py's own sort key for createTime, until it uses
    # timestamps.time_key; validation/extra.py's check of protobuf's Timestamp JSON.)
    assert holders(r"fromisoformat\(") == ["vocab/timestamps.py"]
    assert holders(r"\\d\{4\}-\\d\\d-\\d\\dT") == ["vocab/timestamps.py"]


#: Modules that still spell a tuning job's ``trialJobSpec`` themselves (their owners switch
#: them to ``TUNING.spec_key`` / ``kind_of_job``; remove each from here when they do).
KIND_KEY_SPELT = {"api.py", "commands/diff.py"}


def test_the_tuning_job_key_is_spelt_only_in_the_kinds() -> None:
    # "trialJobSpec" as a string in code is how the kind of a job is told: ask vocab.kinds
    # (kind_of_job, TUNING.spec_key, job_spec_of) instead of sniffing the key.
    assert set(holders(r"""^[^#\n]*["']trialJobSpec["']""")) - KIND_KEY_SPELT == {"vocab/kinds.py"}


@pytest.mark.parametrize("module", ["compiler.py", "planning/quota.py", "submission/placement.py",
                                    "submission/views.py", "render/plan.py", "backends/emulator/runs.py"])
def test_these_read_the_spec_keys_from_the_kinds(module: str) -> None:
    assert module not in holders(r"""^[^#\n]*["'](?:trialJobSpec|jobSpec)["']""")


def test_a_timestamp_sorts_by_time() -> None:
    stamps = ["2024-01-01T00:00:05.1Z", "2024-01-01T00:00:05Z", "2024-01-01T00:00:04.999999999Z", ""]
    assert sorted(stamps, key=timestamps.time_key) == ["", "2024-01-01T00:00:04.999999999Z",
                                                       "2024-01-01T00:00:05Z", "2024-01-01T00:00:05.1Z"]
    assert timestamps.time_key("not a time") == ("not a time", "")
    assert timestamps.format_time(timestamps.parse_time("2024-05-01T14:00:00.123456789+02:00")) == \
        "2024-05-01T12:00:00.123456Z"
