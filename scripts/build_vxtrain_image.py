#!/usr/bin/env python3
"""Build vxtrain's own image (configs/vxtrain-image.yaml) and push it, without a Docker daemon
and without creating a job: vxtrain's ``build:`` through its publish API.

    python scripts/build_vxtrain_image.py --image-repository us-central1-docker.pkg.dev/PROJECT/tools
    python scripts/build_vxtrain_image.py --image-repository HOST/PATH --base python:3.11-slim@sha256:...

Prints the image's ``URI@DIGEST`` on stdout (what a Cloud Run job or a pipeline step
names: docs/deploy-reconcile.md). Only what the repository lacks is pushed: a second run
of an unchanged checkout pushes nothing. Credentials: Application Default Credentials
for Artifact Registry (``gcloud auth application-default login``), as submit uses them.
Exit codes as vxtrain's: 1 an invalid spec, 4 a registry error.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "configs" / "vxtrain-image.yaml"
sys.path.insert(0, str(ROOT))

from vxtrain import Options, plan  # noqa: E402 - after the path: the script runs from a checkout
from vxtrain.errors import SpecError, VxtrainError  # noqa: E402
from vxtrain.images.publish import publish  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    """Build and push the image; print ``URI@DIGEST``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--image-repository", required=True, metavar="HOST/PATH",
                        help="where the image goes, e.g. us-central1-docker.pkg.dev/PROJECT/tools")
    parser.add_argument("--base", metavar="IMAGE@sha256:...",
                        help="the Python base (default: the spec's, pinned by digest)")
    args = parser.parse_args(argv)
    variables = {"VXTRAIN_BASE": args.base} if args.base else {}
    try:
        result = plan(SPEC, Options(variables=variables, image_repository=args.image_repository))
        (image,) = publish(result.images, say=lambda line: print(f"vxtrain: {line}", file=sys.stderr))
    except SpecError as exc:
        for d in exc.diagnostics:
            print(d.render(), file=sys.stderr)
        return exc.exit_code
    except VxtrainError as exc:
        print(f"vxtrain: error: {exc}", file=sys.stderr)
        return exc.exit_code
    # By digest: what a deployment should name (a tag can be moved; the digest cannot).
    print(f"{image.uri.rsplit(':', 1)[0]}@{image.digest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
