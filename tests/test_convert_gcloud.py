"""``vxtrain convert --to gcloud-command``, run by the real gcloud (a client no one here wrote).

Each example's command line is executed as printed (``bash -c``, in a temporary folder),
with gcloud pointed at a recording HTTP endpoint on loopback: ``CLOUDSDK_CONFIG`` in a
temporary folder, ``auth/disable_credentials``, ``api_endpoint_overrides/aiplatform``.
The body gcloud POSTs must be the job ``vxtrain plan -o json`` compiles: the CustomJob,
or for a spec with ``study:`` the HyperparameterTuningJob.

The JSON gcloud sends must equal the compiled job with one allowance, a narrow one:
gcloud's apitools writes int64 fields as JSON strings (``"replicaCount": "1"``), as the
proto3 JSON mapping says (https://protobuf.dev/programming-guides/json/) and as every
parser takes them; a string is read back as a number only where the compiled job has
that very integer. Anything else — a field gcloud adds, drops, renames or retypes, an
empty pool slot — is a difference. Both bodies are then parsed as the API parses them
(``google.protobuf.json_format`` over aiplatform_v1's messages, unknown fields refused)
and must be the same message.

gcloud must reach nothing else: any request but the expected create (a proxied one to
another host included: HTTP(S)_PROXY point at the recorder, with loopback exempt)
fails the test. Without gcloud the tests skip, saying so; under CI (``CI`` set) a
missing gcloud fails them (the Debian package google-cloud-cli provides it).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests import incli
from tests.conftest import CONFIGS
from tests.processes import stop
from vxtrain import api
from vxtrain.api import Options

# Every test runs the real gcloud against the emulator (1 to 2 s each): the slow tier.
pytestmark = pytest.mark.slow

EXAMPLES = sorted((CONFIGS / "examples").glob("*.yaml"))
VARIABLES = ("--var", "IMAGE_TAG=v1")  # fallback-ladder.yaml's ${IMAGE_TAG}
#: What gcloud uses where a spec names no project or region (a gcloud-format config has neither).
DEFAULT_PROJECT, DEFAULT_REGION = "vxtrain-gcloud-test", "us-central1"
#: A create request: POST /v1/projects/P/locations/R/COLLECTION (apitools adds ``?alt=json``).
_CREATE = re.compile(r"/v1/projects/(?P<project>[^/?]+)/locations/(?P<region>[^/?]+)/"
                     r"(?P<collection>customJobs|hyperparameterTuningJobs)(?:\?.*)?\Z")


@dataclass(frozen=True)
class Request:
    """One request the recorder received."""

    method: str
    path: str
    body: bytes


class _Handler(BaseHTTPRequestHandler):
    server: _Recorder

    def _record(self) -> Request:
        size = int(self.headers.get("Content-Length") or 0)
        request = Request(self.command, self.path, self.rfile.read(size) if size else b"")
        with self.server.lock:
            self.server.requests.append(request)
        return request

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        request = self._record()
        match = _CREATE.match(request.path)
        if match is None:
            self._answer(404, {"error": {"code": 404, "message": f"not here: {request.path}"}})
            return
        job = json.loads(request.body)
        parent = f"projects/{match['project']}/locations/{match['region']}"
        job.update(name=f"{parent}/{match['collection']}/1", state="JOB_STATE_PENDING")
        self._answer(200, job)

    def _refuse(self) -> None:
        self._record()
        self._answer(404, {"error": {"code": 404, "message": "only creates are recorded here"}})

    do_GET = do_PUT = do_PATCH = do_DELETE = do_CONNECT = _refuse  # noqa: N815

    def _answer(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base's name)
        pass


class _Recorder(ThreadingHTTPServer):
    """Answers creates with the job plus a name and a state; records every request."""

    daemon_threads = False  # server_close joins the handler threads

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.lock = threading.Lock()
        self.requests: list[Request] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/"


@pytest.fixture
def recorder() -> Iterator[_Recorder]:
    server = _Recorder()
    thread = threading.Thread(target=server.serve_forever, name="gcloud-recorder")
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _gcloud() -> str:
    found = shutil.which("gcloud")
    if found is None:
        message = "gcloud is not installed (Debian: apt-get install google-cloud-cli)"
        if os.environ.get("CI"):
            pytest.fail(f"{message}: under CI the gcloud tests of convert must run")
        pytest.skip(message)
    return found


def _environment(config: Path, recorder: _Recorder) -> dict[str, str]:
    """gcloud's environment: a fresh config folder, no credentials, the API on the recorder,
    every other host through a "proxy" that is the recorder too (so an attempt shows)."""
    env = {name: os.environ[name] for name in ("PATH", "CLOUDSDK_PYTHON") if name in os.environ}
    env.update({
        "HOME": str(config), "LANG": "C.UTF-8",
        "CLOUDSDK_CONFIG": str(config),
        "CLOUDSDK_CORE_DISABLE_PROMPTS": "1",
        "CLOUDSDK_AUTH_DISABLE_CREDENTIALS": "true",
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_AIPLATFORM": recorder.url,
        "CLOUDSDK_CORE_PROJECT": DEFAULT_PROJECT,
        "CLOUDSDK_AI_REGION": DEFAULT_REGION,
        "CLOUDSDK_CORE_DISABLE_USAGE_REPORTING": "true",
        "CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK": "true",
        "CLOUDSDK_CORE_CHECK_GCE_METADATA": "false",
        "CLOUDSDK_METRICS_ENVIRONMENT": "vxtrain-tests",
        "GCE_METADATA_HOST": "127.0.0.1:9", "GCE_METADATA_IP": "127.0.0.1:9", "NO_GCE_CHECK": "True",
    })
    proxy = recorder.url.rstrip("/")
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        env[name] = proxy
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    return env


def _run(command: str, cwd: Path, env: dict[str, str]) -> tuple[int, str, str]:
    """``bash -c COMMAND`` as a person would paste it; stopped with its group however it ends."""
    proc = subprocess.Popen(["bash", "-c", command], cwd=cwd, env=env, text=True, start_new_session=True,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = proc.communicate(timeout=120)
    finally:
        stop(proc)
    return proc.returncode, out, err


def _int64_as_numbers(sent: Any, expected: Any) -> Any:
    """``sent`` with each string that stands where ``expected`` has that integer written as the
    integer: the proto3 JSON mapping's int64-as-string, and nothing wider."""
    if isinstance(sent, dict) and isinstance(expected, dict):
        return {k: _int64_as_numbers(v, expected.get(k)) for k, v in sent.items()}
    if isinstance(sent, list) and isinstance(expected, list) and len(sent) == len(expected):
        return [_int64_as_numbers(v, e) for v, e in zip(sent, expected)]
    if (isinstance(sent, str) and isinstance(expected, int) and not isinstance(expected, bool)
            and sent == str(expected)):
        return expected
    return sent


def _as_the_api_reads(collection: str, body: Any) -> Any:
    """``body`` parsed as Vertex AI parses a create's JSON, and written back (int64 as strings)."""
    from google.cloud.aiplatform_v1.types import custom_job, hyperparameter_tuning_job
    from google.protobuf import json_format

    message = (custom_job.CustomJob if collection == "customJobs"
               else hyperparameter_tuning_job.HyperparameterTuningJob).pb()()
    json_format.ParseDict(body, message)  # unknown fields raise
    return json_format.MessageToDict(message)


def _check_gcloud_sends_the_compiled_job(spec: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                         recorder: _Recorder) -> None:
    """Run ``convert --to gcloud-command`` of ``spec`` through gcloud; the create it sends is
    ``plan -o json``'s job, on the spec's project and region (gcloud's defaults otherwise)."""
    _gcloud()
    code, plan, err = incli.run(capsys, "plan", str(spec), "-o", "json", *VARIABLES)
    assert code == 0, err
    code, command, err = incli.run(capsys, "convert", str(spec), "--to", "gcloud-command", *VARIABLES)
    assert code == 0, err
    job = api.load_job(str(spec), Options(variables=dict([VARIABLES[1].split("=", 1)]))).job
    assert job is not None
    study = "hyperparameter_tuning_job" in plan
    expected = plan["hyperparameter_tuning_job"] if study else plan["custom_job"]
    collection = "hyperparameterTuningJobs" if study else "customJobs"
    assert command.count("\ngcloud ai ") == 1
    assert f"\ngcloud ai {'hp-tuning-jobs' if study else 'custom-jobs'} create " in command

    config = tmp_path / "gcloud-config"
    config.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    rc, _, gcloud_err = _run(command, work, _environment(config, recorder))

    assert rc == 0, f"{command}\n{gcloud_err}"
    path = f"/v1/projects/{job.project or DEFAULT_PROJECT}/locations/{job.region or DEFAULT_REGION}/{collection}"
    # apitools adds ?alt=json; a request to another host would come as a proxied absolute URL
    assert [(r.method, r.path.partition("?")[0]) for r in recorder.requests] == [("POST", path)], gcloud_err
    sent = json.loads(recorder.requests[0].body)
    assert _int64_as_numbers(sent, expected) == expected  # the JSON itself, int64 strings aside
    assert _as_the_api_reads(collection, sent) == _as_the_api_reads(collection, expected)


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_gcloud_sends_the_compiled_job(example: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                       recorder: _Recorder) -> None:
    _check_gcloud_sends_the_compiled_job(example, tmp_path, capsys, recorder)


#: What no example has: labels, env, a disk, a multi-line script, quotes and dollars for the
#: shell and the here-document to carry.
QUOTES = """\
display_name: "it's a $HOME job"
project: my-project
region: europe-west4
labels: {team: ml, cost-center: x-1}
scheduling: {timeout: 2h, restart_job_on_worker_restart: true}
chief:
  machine_type: n1-standard-8
  image: us-docker.pkg.dev/p/r/train:1
  command: [bash, -c, "set -e\\necho \\"$1\\" '$(x)' `y` $${Z}\\n"]
  args: ["--name=a b", "--quote='q'"]
  env: {MSG: "a\\tb", EMPTY: ""}
  disk: {type: pd-ssd, size_gb: 200}
workers:
  replicas: 2
  machine_type: n1-standard-4
  image: us-docker.pkg.dev/p/r/train:1
"""

#: Empty slots (`{}` in workerPoolSpecs: no workers, no parameter servers), which gcloud's
#: --config refuses: the pools go as --worker-pool-spec flags, the command and args (commas
#: in them: gcloud's ^DELIM^ escaping) as --command/--args, the rest of the spec in --config.
GAPS = """\
display_name: gaps
region: us-central1
base_output_dir: gs://b/out
defaults:
  image: us-docker.pkg.dev/p/r/train:1
  command: [python, -c, "import sys; print(sys.argv[1:], 'a,b')"]
  args: ["--lr=0.1,0.2", "--name=it's"]
chief: {machine_type: n1-standard-8, accelerator: {type: NVIDIA_TESLA_T4, count: 1}}
evaluators: {machine_type: n1-standard-4, replicas: 2}
"""

#: Empty slots in a job of Python packages: --python-package-uris (a comma in a URI) and
#: the executor image and module in each pool's flag.
PACKAGE_GAPS = """\
display_name: package-gaps
region: us-central1
defaults:
  python_package:
    executor_image: us-docker.pkg.dev/vertex-ai/training/xgboost-cpu.2-1:latest
    package_uris: [gs://b/trainer-0.3.0.tar.gz, "gs://b/extra,1.tar.gz"]
    module: trainer.task
  args: [--rounds=200]
chief: {machine_type: n1-standard-8}
evaluators: {machine_type: n1-standard-4}
"""

#: A study with empty slots and labels: gcloud ai hp-tuning-jobs create takes the config as it is.
STUDY_GAPS = """\
display_name: study-gaps
region: us-central1
labels: {team: ml, run: gaps-1}
defaults: {image: us-docker.pkg.dev/p/r/train:1, machine_type: n1-standard-4}
chief: {}
evaluators: {}
study:
  metric: {id: accuracy, goal: maximize}
  parameters:
    lr: {type: double, min: 0.0001, max: 0.1, scale: log}
  max_trials: 4
  parallel_trials: 2
"""


@pytest.mark.parametrize("text", [QUOTES, GAPS, PACKAGE_GAPS, STUDY_GAPS],
                         ids=["quotes", "gaps", "package-gaps", "study-gaps"])
def test_gcloud_sends_what_no_example_has_as_compiled(text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                      recorder: _Recorder) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(text)
    _check_gcloud_sends_the_compiled_job(spec, tmp_path, capsys, recorder)
    if text is not QUOTES:
        sent = json.loads(recorder.requests[0].body)
        spec_key = "trialJobSpec" if text is STUDY_GAPS else "jobSpec"
        assert sent[spec_key]["workerPoolSpecs"][1:3] == [{}, {}]  # what this case is for
