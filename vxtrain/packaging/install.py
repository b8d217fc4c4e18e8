"""Install a pool's ``package_uris`` into a per-job folder, as Vertex AI's executor images do.

The prebuilt training images ``pip install`` every package URI and then run
``python -m MODULE ARGS``
(https://cloud.google.com/vertex-ai/docs/training/create-python-pre-built-container).
The emulator and the local runner do the same on this host: ``gs://`` URIs are
downloaded with google-cloud-storage (which honours ``STORAGE_EMULATOR_HOST``),
local archives are taken as they are, and all are installed with
``pip install --no-deps --target FOLDER``; FOLDER then goes on ``PYTHONPATH``.
``--no-deps`` because the job's dependencies are the image's (here: this Python's).

A local *folder* is not installed: it goes on ``PYTHONPATH`` as it is (a package
source root, as ``python_package.source`` is run locally).

pip runs with ``--no-build-isolation`` first when setuptools is importable here,
so an sdist installs without a package index; if that fails (the sdist wants a
backend this Python lacks) it is retried with isolation, which needs the index.
"""
from __future__ import annotations

import importlib.util
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from vxtrain.errors import LocalRunError
from vxtrain.packaging.upload import mapped_error, split_gs_uri, storage_client

#: Archive suffixes pip installs (sdists and wheels).
ARCHIVES = (".tar.gz", ".tgz", ".zip", ".whl", ".tar.bz2", ".tar.xz")


def package_path_entries(uris: Sequence[str], base_dir: Path, work_dir: Path | None) -> list[str]:
    """``PYTHONPATH`` entries that make ``uris`` importable: folders as they are, archives installed.

    ``base_dir`` resolves relative paths (the spec's folder); archives are fetched
    and installed under ``work_dir`` (one per job, the caller removes it; None: a
    new temporary folder).
    """
    entries: list[str] = []
    archives: list[Path] = []
    for uri in uris:
        if uri.startswith("gs://"):
            work_dir = work_dir or job_folder()
            archives.append(download(uri, work_dir / "downloads"))
            continue
        if "://" in uri:
            raise LocalRunError(f"package_uris entry {uri!r}: only gs:// URIs and local paths can be run here")
        path = (base_dir / uri).resolve()
        if path.is_dir():
            entries.append(str(path))
        elif path.is_file():
            archives.append(path)
        else:
            raise LocalRunError(f"package_uris entry {uri!r} does not exist (looked for {path})")
    if archives:
        site = (work_dir or job_folder()) / "site-packages"
        pip_install(archives, site)
        entries.insert(0, str(site))
    return entries


def download(uri: str, folder: Path) -> Path:
    """Fetch ``gs://`` ``uri`` into ``folder`` (keeping its file name); exit 4 when storage refuses."""
    # lazy: +60 ms that every local run (runner imports this module) pays for nothing; a gs:// package only
    from google.api_core import exceptions as gexc

    bucket, name = split_gs_uri(uri)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / Path(name).name
    client = storage_client(purpose=f"download {uri}")  # in the emulator: its own environment
    try:
        client.bucket(bucket).blob(name).download_to_filename(str(target))
    except gexc.NotFound as exc:
        target.unlink(missing_ok=True)
        raise LocalRunError(f"package {uri} does not exist (is the bucket right, was it uploaded?)") from exc
    except gexc.GoogleAPICallError as exc:
        target.unlink(missing_ok=True)
        raise mapped_error(exc, bucket, uri, "downloading") from exc
    finally:
        client.close()
    return target


def pip_install(archives: Sequence[Path], target: Path) -> None:
    """``pip install --no-deps --target target`` the archives (offline first, see the module doc)."""
    base = [sys.executable, "-m", "pip", "install", "--no-deps", "--target", str(target), "--quiet",
            "--disable-pip-version-check", "--no-input", "--no-warn-script-location"]
    files = [str(a) for a in archives]
    attempts = ([base + ["--no-build-isolation"] + files] if importlib.util.find_spec("setuptools") else [])
    attempts.append(base + files)
    output = ""
    for argv in attempts:
        res = subprocess.run(argv, capture_output=True, text=True)
        if res.returncode == 0:
            return
        output = (res.stdout + res.stderr).strip()
    tail = "\n".join(output.splitlines()[-20:])
    raise LocalRunError(f"pip could not install {', '.join(a.name for a in archives)}:\n{tail}")


def job_folder() -> Path:
    """A fresh per-job folder for downloads and installs (the caller removes it)."""
    return Path(tempfile.mkdtemp(prefix="vxtrain-packages-"))
