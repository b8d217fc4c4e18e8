"""Project and region: which one a command uses, and where it came from.

The first of these that is set wins, for each of the two on its own:

1. ``--project``/``--region``, the spec's ``project:``/``region:``, then
   ``GOOGLE_CLOUD_PROJECT``/``CLOUD_ML_REGION``;
2. gcloud's own environment variables, ``CLOUDSDK_CORE_PROJECT``/``CLOUDSDK_AI_REGION``
   (gcloud reads a property ``section/name`` from ``CLOUDSDK_SECTION_NAME``:
   https://cloud.google.com/sdk/docs/properties#setting_properties_using_environment_variables);
3. the active gcloud configuration's ``core/project`` and ``ai/region``: the file
   ``configurations/config_NAME`` (INI) under gcloud's configuration folder
   (``$CLOUDSDK_CONFIG``, else ``~/.config/gcloud``; ``%APPDATA%\\gcloud`` on Windows),
   NAME from ``$CLOUDSDK_ACTIVE_CONFIG_NAME``, else the file ``active_config``, else
   ``default`` (https://cloud.google.com/sdk/docs/configurations). It is read as a
   file: running gcloud would cost a second and more on every command;
4. the project of Application Default Credentials (``google.auth.default()``), on
   submit's path only (:func:`adc_project`): validate and plan never import google.

The emulator's stand-in project and region (``local-project``, ``us-central1``) are
used only when none of these gives one. Pure but for the file reader it is given:
tests hand it a folder of their own.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Literal, NamedTuple

Key = Literal["project", "region"]
#: The keys this module resolves, in the order messages name them.
KEYS: tuple[Key, ...] = ("project", "region")
#: Each key's flag.
FLAGS: Mapping[Key, str] = {"project": "--project", "region": "--region"}
#: Each key's environment variables, vxtrain's (tier 1) then gcloud's (tier 2).
ENVIRONMENT: Mapping[Key, tuple[str, str]] = {
    "project": ("GOOGLE_CLOUD_PROJECT", "CLOUDSDK_CORE_PROJECT"),
    "region": ("CLOUD_ML_REGION", "CLOUDSDK_AI_REGION"),
}
#: Each key's gcloud property: (section, name) in a configuration file.
PROPERTIES: Mapping[Key, tuple[str, str]] = {"project": ("core", "project"), "region": ("ai", "region")}
#: The source of a value the spec gives.
SPEC = "the spec"
#: The source of ADC's project.
ADC = "Application Default Credentials"
#: The source of the emulator's stand-ins.
STAND_IN = "the emulator's stand-in"

#: Reads a file's text; None when it cannot be read (missing, a folder, not UTF-8).
Reader = Callable[[Path], "str | None"]


class Setting(NamedTuple):
    """A project or region, and where it came from.

    ``source``: in words, for the line ``plan`` prints (``--project``, ``the spec``,
    ``$CLOUDSDK_CORE_PROJECT``, ``gcloud configuration "dev", PATH:LINE``…); ``file``, ``line`` and
    ``column``: where a diagnostic about the value points (the flag, ``$NAME``, or the
    configuration file's line and column).
    """

    value: str
    source: str
    file: str
    line: int = 1
    column: int = 1

    # A NamedTuple, not a dataclass: this module is on validate's path, and a dataclass costs
    # about 0.4 ms more to define (measured with -X importtime).
    def describe(self) -> str:
        """``my-proj (gcloud configuration "dev", /home/me/.config/gcloud/configurations/config_dev:2)``."""
        return f"{self.value} ({self.source})"


def read_text(path: Path) -> str | None:
    """``path``'s text, None when it cannot be read (gcloud has no configuration there)."""
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def config_folder(environ: Mapping[str, str]) -> Path | None:
    """gcloud's configuration folder: ``$CLOUDSDK_CONFIG``, else its per-user default; None
    for a user without a home (a container's user with no ``HOME`` and no passwd entry)."""
    if environ.get("CLOUDSDK_CONFIG"):
        return Path(environ["CLOUDSDK_CONFIG"]).expanduser()
    if os.name == "nt" and environ.get("APPDATA"):
        return Path(environ["APPDATA"]) / "gcloud"
    # Not Path.home(): it raises there (RuntimeError), and a missing home is no configuration.
    home = environ.get("HOME") or os.path.expanduser("~")
    return None if home.startswith("~") else Path(home) / ".config" / "gcloud"


def active_configuration(environ: Mapping[str, str], read: Reader = read_text) -> str:
    """The active configuration's name: ``$CLOUDSDK_ACTIVE_CONFIG_NAME``, else the
    ``active_config`` file (what ``gcloud config configurations activate`` writes), else
    ``default``."""
    named = environ.get("CLOUDSDK_ACTIVE_CONFIG_NAME", "").strip()
    if named:
        return named
    folder = config_folder(environ)
    text = read(folder / "active_config") if folder is not None else None
    return (text or "").strip() or "default"


def configuration_file(environ: Mapping[str, str], read: Reader = read_text) -> Path | None:
    """The active configuration's INI file (None without a configuration folder)."""
    folder = config_folder(environ)
    return None if folder is None else folder / "configurations" / f"config_{active_configuration(environ, read)}"


def ini_values(text: str) -> dict[tuple[str, str], tuple[str, int, int]]:
    """``(section, name) → (value, line, column)`` of an INI file as Python's configparser
    (which gcloud writes it with) reads one: ``[section]``, ``name = value`` or ``name: value``,
    names folded to lower case, ``#``/``;`` comment lines; the last of a repeated name wins.
    An empty value is unset (what ``gcloud config unset`` leaves)."""
    out: dict[tuple[str, str], tuple[str, int, int]] = {}
    section = ""
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip()
            continue
        cut = min((i for i in (raw.find("="), raw.find(":")) if i >= 0), default=-1)
        if cut < 0 or raw[:1].isspace():  # not a setting (a continuation line: no property of ours has one)
            continue
        name, value = raw[:cut].strip().lower(), raw[cut + 1:]
        stripped = value.strip()
        column = cut + 2 + (len(value) - len(value.lstrip()))
        if stripped:
            out[(section, name)] = (stripped, number, column)
        else:
            out.pop((section, name), None)
    return out


def from_gcloud(environ: Mapping[str, str], read: Reader = read_text) -> dict[Key, Setting]:
    """Tier 3: the active gcloud configuration's project and region (those it sets)."""
    path = configuration_file(environ, read)
    text = read(path) if path is not None else None
    if path is None or text is None:
        return {}
    values = ini_values(text)
    name = path.name.removeprefix("config_")
    out: dict[Key, Setting] = {}
    for key in KEYS:
        found = values.get(PROPERTIES[key])
        if found is not None:
            value, line, column = found
            out[key] = Setting(value, f'gcloud configuration "{name}", {path}:{line}', str(path), line, column)
    return out


def from_environment(key: Key, environ: Mapping[str, str], read: Reader = read_text) -> Setting | None:
    """What the environment gives ``key`` when neither a flag nor the spec does: tier 1's
    variable, tier 2's (gcloud's), then the active gcloud configuration (tier 3)."""
    found = _variable(key, environ)
    return found if found is not None else from_gcloud(environ, read).get(key)


def resolve(key: Key, *, flag: str | None = None, spec: object = None,
            environ: Mapping[str, str], read: Reader = read_text) -> Setting | None:
    """``key`` from the first tier that sets it (tiers 1 to 3); None when none does."""
    found = _given(key, flag, spec, environ)
    return found if found is not None else from_gcloud(environ, read).get(key)


def resolve_both(flags: Mapping[Key, str | None], spec: Mapping[str, object], environ: Mapping[str, str],
                 read: Reader = read_text) -> dict[Key, Setting | None]:
    """Project and region, each as :func:`resolve` gives it, with gcloud's configuration
    read and parsed once, and only when a flag, the spec or a variable left one unset."""
    found = {key: _given(key, flags.get(key), spec.get(key), environ) for key in KEYS}
    if any(setting is None for setting in found.values()):
        configured = from_gcloud(environ, read)
        found = {key: setting if setting is not None else configured.get(key) for key, setting in found.items()}
    return found


def _given(key: Key, flag: str | None, spec: object, environ: Mapping[str, str]) -> Setting | None:
    """Tiers 1 and 2 for ``key``: its flag, the spec, then the environment's variables."""
    if flag:
        return Setting(flag, FLAGS[key], FLAGS[key])
    if spec:
        return Setting(str(spec), SPEC, SPEC)
    return _variable(key, environ)


def _variable(key: Key, environ: Mapping[str, str]) -> Setting | None:
    """The first of ``key``'s environment variables that is set (tier 1's, then gcloud's)."""
    for name in ENVIRONMENT[key]:
        value = environ.get(name, "").strip()
        if value:
            return Setting(value, f"${name}", f"${name}")
    return None


def adc_project() -> Setting | None:
    """Tier 4: the project of Application Default Credentials, None when they name none (or
    there are none). Submit's path only: it imports google.auth, and on a machine that is no
    Google Compute Engine VM, google.auth probes the metadata server before it gives up."""
    # lazy: google.auth (+80 ms) on submit's path alone; validate and plan never call this
    import google.auth
    from google.auth.exceptions import DefaultCredentialsError

    try:
        _, project = google.auth.default()
    except DefaultCredentialsError:
        return None
    return Setting(str(project), ADC, ADC) if project else None


def stand_in(key: Key, value: str) -> Setting:
    """The emulator's stand-in ``value`` for ``key``, used when no tier gives one."""
    return Setting(value, STAND_IN, STAND_IN)


def summary(used: Mapping[str, Setting | None]) -> str:
    """One line saying which project and region a command uses and where each came from:
    ``project my-proj (gcloud configuration "default", …:2); region us-central1 (the spec)``."""
    parts = []
    for key in KEYS:
        setting = used.get(key)
        parts.append(f"{key} {setting.describe()}" if setting is not None else f"{key} not set")
    return "; ".join(parts)
