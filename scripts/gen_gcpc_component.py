"""Writes vxtrain/kfp/custom_training_job.yaml: google-cloud-pipeline-components'
CustomTrainingJobOp, compiled by KFP, which ``vxtrain convert --to kfp-gcpc`` builds its
pipeline with.

google-cloud-pipeline-components requires google-cloud-aiplatform<2, which vxtrain's lock
does not hold (docs/decisions.md, "CustomTrainingJobOp without google-cloud-pipeline-components"),
so this runs in a virtual environment of its own:

    python3 -m venv /tmp/gcpc && /tmp/gcpc/bin/pip install kfp google-cloud-pipeline-components
    /tmp/gcpc/bin/python scripts/gen_gcpc_component.py

tests/test_kfp.py checks the file against CustomTrainingJobOp wherever the package imports.
"""
import sys
import tempfile
from pathlib import Path

from google_cloud_pipeline_components import __version__ as gcpc_version
from google_cloud_pipeline_components.v1.custom_job import CustomTrainingJobOp
from kfp import compiler

OUT = Path(__file__).resolve().parent.parent / "vxtrain" / "kfp" / "custom_training_job.yaml"
HEADER = f"""\
# google-cloud-pipeline-components {gcpc_version}: CustomTrainingJobOp
# (google_cloud_pipeline_components.v1.custom_job), compiled by KFP. Apache License 2.0,
# (c) The Kubeflow Authors. Written by scripts/gen_gcpc_component.py; do not edit.
"""


def main() -> int:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "component.yaml"
        compiler.Compiler().compile(CustomTrainingJobOp, str(path))
        OUT.write_text(HEADER + path.read_text(encoding="utf-8"), encoding="utf-8")
    print(f"wrote {OUT.name} from google-cloud-pipeline-components {gcpc_version}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
