"""Project and region from gcloud's settings (vxtrain.settings): the tiers in order, the
active configuration read as a file (the real gcloud writes it here), where a diagnostic
about such a value points, plan's line about the source, the emulator's stand-ins, and
ADC's project on submit's path only."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.incli import run
from vxtrain import api, jobplan, settings
from vxtrain.options import Options
from vxtrain.settings import Setting

ROOT = Path(__file__).resolve().parent.parent
QUICKSTART = ROOT / "configs" / "examples" / "quickstart.yaml"
NO_REGION = "display_name: x\nchief: {machine_type: n1-standard-4, image: i}\n"


def _configuration(folder: Path, name: str, text: str, *, active: bool = True) -> Path:
    """gcloud's configuration ``name`` with ``text`` under ``folder`` (made active)."""
    path = folder / "configurations" / f"config_{name}"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if active:
        (folder / "active_config").write_text(name)
    return path


@pytest.fixture
def gcloud_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "gcloud"
    folder.mkdir()
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(folder))
    return folder


# --- the file -------------------------------------------------------------------------------

def test_ini_values_reads_as_configparser_does_with_positions() -> None:
    text = ("# a comment\n[core]\naccount = me@example.com\nProject=  p-1  \n; another\n"
            "[ai]\nregion: europe-west4\n[compute]\nregion = us-east1\n[core]\nproject =\n")
    values = settings.ini_values(text)
    assert values[("ai", "region")] == ("europe-west4", 7, 9)
    assert values[("compute", "region")] == ("us-east1", 9, 10)
    assert ("core", "project") not in values  # set again, empty: what `gcloud config unset` leaves
    assert settings.ini_values("[core]\nPROJECT = Mixed-Case\n")[("core", "project")] == ("Mixed-Case", 2, 11)
    import configparser

    parsed = configparser.ConfigParser()
    parsed.read_string("[core]\nProject=  p-1  \n[ai]\nregion: europe-west4\n")
    assert parsed["core"]["project"] == settings.ini_values("[core]\nProject=  p-1  \n")[("core", "project")][0]


def test_the_active_configuration(gcloud_dir: Path) -> None:
    env = {"CLOUDSDK_CONFIG": str(gcloud_dir)}
    assert settings.active_configuration(env) == "default"  # no active_config file: gcloud's default
    _configuration(gcloud_dir, "dev", "[core]\nproject = dev-proj\n")
    assert settings.active_configuration(env) == "dev"
    assert settings.active_configuration({**env, "CLOUDSDK_ACTIVE_CONFIG_NAME": "ci"}) == "ci"
    assert settings.config_folder({"HOME": "/home/me"}) == Path("/home/me/.config/gcloud")


def test_a_user_without_a_home_has_no_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    """A container's user with no HOME and no passwd entry (Path.home() raises there): nothing to
    read, no error. tests/images/test_vxtrain_image.py runs validate so in vxtrain's image."""
    monkeypatch.setattr(os.path, "expanduser", lambda path: path)  # what it returns without a home
    assert settings.config_folder({}) is None
    assert settings.resolve("project", environ={}) is None


# --- the order ------------------------------------------------------------------------------

def test_each_tier_wins_over_the_ones_after_it(gcloud_dir: Path) -> None:
    path = _configuration(gcloud_dir, "dev", "[core]\nproject = from-file\n[ai]\nregion = asia-east1\n")
    env = {"CLOUDSDK_CONFIG": str(gcloud_dir), "GOOGLE_CLOUD_PROJECT": "g-proj", "CLOUDSDK_CORE_PROJECT": "sdk-proj",
           "CLOUD_ML_REGION": "europe-west1", "CLOUDSDK_AI_REGION": "us-east1"}

    def project(**kw: object) -> tuple[str, str] | None:
        found = settings.resolve("project", environ=kw.pop("env", env), **kw)  # type: ignore[arg-type]
        return None if found is None else (found.value, found.source)

    assert project(flag="flag-proj", spec="spec-proj") == ("flag-proj", "--project")
    assert project(spec="spec-proj") == ("spec-proj", "the spec")
    assert project() == ("g-proj", "$GOOGLE_CLOUD_PROJECT")
    del env["GOOGLE_CLOUD_PROJECT"]
    assert project() == ("sdk-proj", "$CLOUDSDK_CORE_PROJECT")
    del env["CLOUDSDK_CORE_PROJECT"]
    assert project() == ("from-file", f'gcloud configuration "dev", {path}:2')
    region = settings.resolve("region", environ={"CLOUDSDK_CONFIG": str(gcloud_dir), "CLOUDSDK_AI_REGION": "us-east1"})
    assert region == Setting("us-east1", "$CLOUDSDK_AI_REGION", "$CLOUDSDK_AI_REGION")
    assert settings.resolve("region", environ={"CLOUDSDK_CONFIG": str(gcloud_dir)}) == Setting(
        "asia-east1", f'gcloud configuration "dev", {path}:4', str(path), 4, 10)
    assert settings.resolve("project", environ={"CLOUDSDK_CONFIG": str(gcloud_dir / "none")}) is None


def test_the_configuration_is_read_once_per_check(gcloud_dir: Path) -> None:
    """plan's pipeline and the job commands resolve both keys at once: gcloud's two files
    read once each, and not at all when flags, the spec or variables set both."""
    _configuration(gcloud_dir, "dev", "[core]\nproject = p\n[ai]\nregion = us-east1\n")
    reads: list[Path] = []

    def reader(path: Path) -> str | None:
        reads.append(path)
        return settings.read_text(path)

    env = {"CLOUDSDK_CONFIG": str(gcloud_dir)}
    found = settings.resolve_both({}, {}, env, reader)
    assert found["project"] is not None and found["region"] is not None
    assert found["region"].value == "us-east1" and found["project"].value == "p"
    assert len(reads) == len(set(reads)) == 2  # active_config, config_dev
    reads.clear()
    found = settings.resolve_both({"project": "flagged"}, {"region": "europe-west4"}, env, reader)
    assert (found["project"].source, found["region"].source) == ("--project", settings.SPEC)  # type: ignore[union-attr]
    assert reads == []
    assert settings.resolve_both({"project": "flagged"}, {}, env, reader)["region"] == settings.resolve(
        "region", environ=env)


# --- the command line -----------------------------------------------------------------------

def test_validate_uses_gcloud_s_region_and_points_at_its_line(gcloud_dir: Path, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    path = _configuration(gcloud_dir, "default", "[core]\nproject = p\n\n[ai]\nregion = mars-9\n")
    spec = tmp_path / "job.yaml"
    spec.write_text(NO_REGION)
    code, doc, _ = run(capsys, "validate", str(spec), "-o", "json")
    assert code == 1
    (d,) = doc["files"][0]["diagnostics"]
    assert (d["code"], d["file"], d["line"], d["column"]) == ("unknown-region", str(path), 5, 10)
    # The spec's own region wins over gcloud's: the same configuration, a valid spec.
    assert run(capsys, "validate", str(QUICKSTART))[0] == 0


def test_plan_says_where_project_and_region_came_from(gcloud_dir: Path, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    path = _configuration(gcloud_dir, "dev", "[core]\nproject = gc-proj\n[ai]\nregion = europe-west4\n")
    spec = tmp_path / "job.yaml"
    spec.write_text(NO_REGION)
    code, doc, err = run(capsys, "plan", str(spec), "-o", "json")
    assert code == 0 and doc["cost"]["region"] == "europe-west4"
    assert err == (f'vxtrain: project gc-proj (gcloud configuration "dev", {path}:2); '
                   f'region europe-west4 (gcloud configuration "dev", {path}:4)\n')
    monkeypatch.setenv("CLOUDSDK_CORE_PROJECT", "env-proj")
    _, _, err = run(capsys, "plan", str(QUICKSTART), "-o", "json")
    assert err == "vxtrain: project env-proj ($CLOUDSDK_CORE_PROJECT); region us-central1 (the spec)\n"
    _, _, err = run(capsys, "plan", str(QUICKSTART), "-o", "json", "--project", "f")
    assert err == "vxtrain: project f (--project); region us-central1 (the spec)\n"
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path / "empty"))
    monkeypatch.delenv("CLOUDSDK_CORE_PROJECT")
    _, _, err = run(capsys, "plan", str(spec), "-o", "json")
    assert err == "vxtrain: project not set; region not set\n"


@pytest.mark.slow
def test_the_emulator_s_stand_ins_apply_only_when_nothing_is_set(gcloud_dir: Path, tmp_path: Path,
                                                                 emulator: object,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "job.yaml"
    spec.write_text(NO_REGION)
    address = emulator.address  # type: ignore[attr-defined]
    code, view, err = run(capsys, "submit", str(spec), "--endpoint", address, "-o", "json")
    assert code == 0, err
    assert view["name"].startswith("projects/local-project/locations/us-central1/")
    assert view["project_source"] == settings.STAND_IN
    assert ("vxtrain: project local-project (the emulator's stand-in); "
            "region us-central1 (the emulator's stand-in)\n") in err  # the line plan prints
    path = _configuration(gcloud_dir, "default", "[core]\nproject = gc-proj\n[ai]\nregion = europe-west4\n")
    code, view, err = run(capsys, "submit", str(spec), "--endpoint", address, "-o", "json")
    assert code == 0, err
    assert view["name"].startswith("projects/gc-proj/locations/europe-west4/")
    assert view["project_source"] == f'gcloud configuration "default", {path}:2'
    assert f'vxtrain: project gc-proj (gcloud configuration "default", {path}:2); region europe-west4' in err
    # The job commands find a bare id's project and region the same way.
    job_id = view["name"].rsplit("/", 1)[1]
    code, status, err = run(capsys, "status", job_id, "--endpoint", address, "-o", "json")
    assert code == 0 and status["name"] == view["name"], err


# --- the real gcloud writes what we read -----------------------------------------------------

@pytest.fixture
def gcloud(gcloud_dir: Path) -> Iterator[list[str]]:
    """The gcloud CLI, kept off the network and to ``gcloud_dir``."""
    exe = shutil.which("gcloud")
    if exe is None:
        pytest.skip("gcloud is not installed")
    yield [exe]


def _gcloud(gcloud_dir: Path, *argv: str) -> str:
    env = {name: os.environ[name] for name in ("PATH", "HOME", "CLOUDSDK_PYTHON") if name in os.environ}
    env.update({"CLOUDSDK_CONFIG": str(gcloud_dir), "CLOUDSDK_CORE_DISABLE_PROMPTS": "1",
                "CLOUDSDK_AUTH_DISABLE_CREDENTIALS": "true", "CLOUDSDK_CORE_DISABLE_USAGE_REPORTING": "true",
                "CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK": "true", "CLOUDSDK_CORE_CHECK_GCE_METADATA": "false",
                "CLOUDSDK_SURVEY_DISABLE_PROMPTS": "true"})
    done = subprocess.run(["gcloud", *argv], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.slow
def test_what_gcloud_config_set_writes_is_what_vxtrain_reads(gcloud: list[str], gcloud_dir: Path) -> None:
    env = {"CLOUDSDK_CONFIG": str(gcloud_dir)}
    _gcloud(gcloud_dir, "config", "set", "project", "written-by-gcloud")
    _gcloud(gcloud_dir, "config", "set", "ai/region", "europe-west4")
    assert settings.resolve("project", environ=env).value == "written-by-gcloud"  # type: ignore[union-attr]
    assert settings.resolve("region", environ=env).value == "europe-west4"  # type: ignore[union-attr]
    # A second configuration, activated: gcloud's active one is the one read.
    _gcloud(gcloud_dir, "config", "configurations", "create", "ci", "--no-activate")
    _gcloud(gcloud_dir, "config", "set", "project", "ci-proj", "--configuration", "ci")
    _gcloud(gcloud_dir, "config", "configurations", "activate", "ci")
    found = settings.resolve("project", environ=env)
    assert found is not None and found.value == _gcloud(gcloud_dir, "config", "get", "project") == "ci-proj"
    assert found.source.startswith('gcloud configuration "ci", ')
    assert settings.resolve("region", environ=env) is None  # ci sets none
    _gcloud(gcloud_dir, "config", "unset", "project")
    assert settings.resolve("project", environ=env) is None
    assert settings.resolve("project", environ={**env, "CLOUDSDK_ACTIVE_CONFIG_NAME": "default"}).value == (  # type: ignore[union-attr]
        "written-by-gcloud")


# --- ADC's project: submit's path only --------------------------------------------------------

def test_adc_project_from_a_service_account_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """google.auth.default() names the project of a key file; no key, no project (no metadata probe:
    the tests' GOOGLE_APPLICATION_CREDENTIALS names a file that is not there)."""
    assert settings.adc_project() is None
    _service_account(tmp_path, monkeypatch)
    assert settings.adc_project() == Setting("adc-proj", settings.ADC, settings.ADC)


def _service_account(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A service account key file of the project ``adc-proj`` as ADC (read from the file: no call)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    path = tmp_path / "sa.json"
    path.write_text(json.dumps({
        "type": "service_account", "project_id": "adc-proj", "private_key_id": "1", "private_key": key.decode(),
        "client_email": "sa@adc-proj.iam.gserviceaccount.com", "client_id": "1",
        "token_uri": "https://oauth2.googleapis.com/token"}))
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(path))


def test_submit_takes_adc_s_project_last_and_says_every_tier_when_none_gives_one(
        gcloud_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Off an emulator, ADC's project is tier 4: with none, the refusal (exit 2, before any call)
    names gcloud's ways; with a key file, only the region is missing. No call is made: both end
    at the check, and ADC from a file reads the file alone."""
    spec = tmp_path / "job.yaml"
    spec.write_text(NO_REGION)
    code, _, err = run(capsys, "submit", str(spec))
    assert code == 2 and "no project and no region to submit to" in err, err
    assert "CLOUDSDK_CORE_PROJECT" in err and "gcloud config set project" in err
    _service_account(tmp_path, monkeypatch)
    code, _, err = run(capsys, "submit", str(spec))
    assert code == 2 and "no region to submit to" in err and "no project" not in err, err
    result = api.load_job(spec, Options(region="us-central1"))
    assert jobplan.used_settings(result, local=False)["project"] == Setting("adc-proj", settings.ADC, settings.ADC)
    monkeypatch.setenv("CLOUDSDK_CORE_PROJECT", "env-proj")  # tier 2 wins over ADC's
    result = api.load_job(spec, Options(region="us-central1"))
    assert jobplan.used_settings(result, local=False)["project"] == Setting(
        "env-proj", "$CLOUDSDK_CORE_PROJECT", "$CLOUDSDK_CORE_PROJECT")
    assert jobplan.used_settings(result, local=True)["project"].source == "$CLOUDSDK_CORE_PROJECT"  # type: ignore[union-attr]


@pytest.mark.slow
def test_validate_and_plan_never_load_google_auth(gcloud_dir: Path, tmp_path: Path) -> None:
    _configuration(gcloud_dir, "default", "[core]\nproject = p\n")
    spec = tmp_path / "job.yaml"
    spec.write_text(NO_REGION)
    code = ("import atexit, json, sys; atexit.register(lambda: print(json.dumps(sorted(sys.modules)), "
            "file=sys.stderr)); from vxtrain.cli import run; run()")
    for argv in (["validate", str(spec)], ["plan", str(spec), "-o", "json"]):
        res = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, cwd=ROOT,
                             env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60)
        loaded = json.loads(res.stderr.strip().splitlines()[-1])
        assert "vxtrain.settings" in loaded and not [m for m in loaded if m.startswith(("google.auth", "google.api_core"))], argv
