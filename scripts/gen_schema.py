"""Writes vxtrain/validation/schema.json, the native-format JSON Schema (Draft 2020-12).

The schema is kept as Python here (shared pieces, less repetition) and shipped
as JSON; tests/validation/test_schema.py fails when the two drift.
    python scripts/gen_schema.py
"""
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's vxtrain, not an installed one

from vxtrain.model import DURATION_EXAMPLES, DURATION_PATTERN  # noqa: E402  (after the path is set)

OUT = ROOT / "vxtrain" / "validation" / "schema.json"
# Every count is bounded by the API field it is sent as (the installed aiplatform_v1 protos:
# WorkerPoolSpec.replica_count is int64; MachineSpec.accelerator_count and the
# HyperparameterTuningJob trial counts are int32), or by Vertex AI's documented limit where
# stricter (bootDiskSizeGb below). Past it, validate passed a count that submit could not send
# (`replicas: 9223372036854775808`), and 1e308 made the plan's totals infinite.
INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
S = "string"
def strlist(desc):
    return {"description": desc, "x-accepts": "a string or a list of strings",
            # A type list rather than oneOf: same meaning, and the fast validator
            # need not try (and throw away) one branch per value.
            "type": ["string", "array"], "items": {"type": ["string", "number", "boolean"]}}
env = {"type": "object", "description": "Environment variables of the container (names: C identifiers).",
       "additionalProperties": {"type": ["string", "number", "boolean"]}}
accel = {"type": "object", "description": "Accelerators on every node of the pool.", "additionalProperties": False,
         "required": ["type"],
         "properties": {"type": {"type": "string", "description": "AcceleratorType enum name, e.g. NVIDIA_TESLA_V100, NVIDIA_L4, NVIDIA_H100_80GB."},
                        "count": {"type": "integer", "minimum": 1, "maximum": INT32_MAX, "x-bound": "acceleratorCount is an int32", "default": 1, "description": "Accelerators per node."},
                        # MachineSpec.gpuPartitionSize: "If set, the accelerator_count should be set to 1."
                        "partition_size": {"type": "string", "pattern": "^[1-9]g\\.[1-9][0-9]*gb$", "x-accepts": "a MIG partition size such as 1g.10gb",
                                           "description": "NVIDIA Multi-Instance GPU partition size (machineSpec.gpuPartitionSize), e.g. 1g.10gb; with count: 1."}}}
# bootDiskSizeGb: "an integer between 100 and 64,000, inclusive"
# (https://cloud.google.com/vertex-ai/docs/training/configure-compute#boot_disk_options).
disk = {"type": "object", "description": "Boot disk of every node.", "additionalProperties": False,
        "properties": {"type": {"type": "string", "enum": ["pd-ssd", "pd-standard", "hyperdisk-balanced"], "default": "pd-ssd", "description": "Boot disk type."},
                       "size_gb": {"type": "integer", "minimum": 100, "maximum": 64000, "x-bound": "Vertex AI's boot disk limit", "default": 100, "description": "Boot disk size in GB (Vertex AI: 100 to 64,000)."}}}
pkg = {"type": "object", "description": "Run a Python package in a prebuilt executor image instead of a custom image.",
       "additionalProperties": False, "required": ["executor_image", "module"],
       "properties": {"executor_image": {"type": "string", "description": "Prebuilt training container, e.g. us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-14.py310:latest."},
                      "package_uris": {"type": "array", "minItems": 1, "items": {"type": "string"}, "description": "gs:// URIs (or local paths for local runs) of the package archives."},
                      "module": {"type": "string", "description": "Python module to run, e.g. trainer.task."},
                      "source": {"type": "string", "minLength": 1, "description": "Local folder holding the package (relative to the spec; e.g. DIR with DIR/trainer/task.py): built and uploaded to staging_bucket at submit, instead of package_uris."}}}
build = {"type": "object", "additionalProperties": False, "required": ["base", "source"],
         "description": "Build a custom image from a local folder at submit, without a Docker daemon (instead of image): the base plus a dependency layer and a code layer, pushed to image_repository.",
         "properties": {"base": {"type": "string", "minLength": 1, "description": "Base image, e.g. us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-4.py310:latest; pin it by digest (@sha256:...) so a moved tag cannot change the job."},
                        "source": {"type": "string", "minLength": 1, "description": "Local folder with the code (relative to the spec): the image's working directory, on PYTHONPATH."},
                        "requirements": {"type": "string", "minLength": 1, "description": "requirements.txt (relative to the spec): installed from wheels for linux/amd64 into the dependency layer."},
                        "python": {"type": "string", "pattern": "^3\\.[0-9]{1,2}$", "x-accepts": "a Python version such as '3.10' (quoted)",
                                   "description": "The image's Python version (quoted, e.g. '3.10'); default: the base tag's pyNNN."}}}
container_props = {
    "image": {"type": "string", "description": "Container image URI."},
    "command": strlist("Container entrypoint (overrides the image's)."),
    "args": strlist("Arguments passed to the container."),
    "env": env,
    "disk": {"$ref": "#/$defs/disk"},
    "python_package": {"$ref": "#/$defs/python_package"},
    "build": {"$ref": "#/$defs/build"},
}
machine_props = {
    "machine_type": {"type": "string", "description": "Compute Engine machine type, e.g. n1-highmem-96, a2-highgpu-8g, g2-standard-8."},
    "accelerator": {"$ref": "#/$defs/accelerator"},
    "tpu_topology": {"type": "string", "pattern": "^[1-9][0-9]*x[1-9][0-9]*(x[1-9][0-9]*)?$", "x-accepts": "a TPU topology such as 2x4 or 2x2x1",
                     "description": "TPU slice topology of a TPU VM machine (ct5lp-*, ct6e-*, tpu7x-*), e.g. 2x4; its hosts are one replica."},
    "reservation": {"$ref": "#/$defs/reservation"},
}
reservation = {"type": "object", "additionalProperties": False, "required": ["affinity"],
               "description": "Which Compute Engine reservation the pool's machines consume.",
               "properties": {"affinity": {"type": "string", "enum": ["specific", "any", "none"],
                                           "description": "specific (the reservation named by name), any (any matching reservation, else on-demand) or none (on-demand only)."},
                              "name": {"type": "string", "description": "With affinity specific: projects/PROJECT/zones/ZONE/reservations/NAME."}}}
# WorkerPoolSpec.nfsMounts / lustreMounts (machine_resources.proto NfsMount, LustreMount): every field "Required".
nfs_mount = {"type": "object", "additionalProperties": False, "required": ["server", "path", "mount_point"],
             "description": "An NFS share mounted at /mnt/nfs/MOUNT_POINT (WorkerPoolSpec.nfsMounts).",
             "properties": {"server": {"type": "string", "minLength": 1, "description": "IP address of the NFS server (a private address in the VPC)."},
                            "path": {"type": "string", "pattern": "^/", "x-accepts": "an absolute path starting with /", "description": "Path the server exports, starting with /."},
                            "mount_point": {"type": "string", "minLength": 1, "description": "Directory name under /mnt/nfs/ where the share is mounted."}}}
lustre_mount = {"type": "object", "additionalProperties": False, "required": ["instance_ip", "volume_handle", "filesystem", "mount_point"],
                "description": "A Lustre file system mounted at /mnt/lustre/MOUNT_POINT (WorkerPoolSpec.lustreMounts).",
                "properties": {"instance_ip": {"type": "string", "minLength": 1, "description": "IP address of the Lustre instance."},
                               "volume_handle": {"type": "string", "minLength": 1, "description": "Unique identifier of the Lustre volume."},
                               "filesystem": {"type": "string", "minLength": 1, "description": "Name of the Lustre file system."},
                               "mount_point": {"type": "string", "minLength": 1, "description": "Directory name under /mnt/lustre/ where it is mounted."}}}
mount_props = {
    "nfs_mounts": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/nfs_mount"}, "description": "NFS shares mounted on every node (needs network or psc_interface)."},
    "lustre_mounts": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/lustre_mount"}, "description": "Lustre file systems mounted on every node."},
}
# CustomJobSpec.pscInterfaceConfig (service_networking.proto PscInterfaceConfig, DnsPeeringConfig).
dns_peering = {"type": "object", "additionalProperties": False, "required": ["domain", "target_project", "target_network"],
               "description": "A DNS zone of another network resolved from the job (DnsPeeringConfig).",
               "properties": {"domain": {"type": "string", "minLength": 1, "description": "DNS name suffix of the zone, ending with a dot, e.g. corp.example.com."},
                              "target_project": {"type": "string", "minLength": 1, "description": "Project ID hosting the Cloud DNS zone (the Vertex AI Service Agent needs dns.peer there)."},
                              "target_network": {"type": "string", "minLength": 1, "description": "VPC network name in target_project where the zone is visible."}}}
psc_interface = {"type": "object", "additionalProperties": False, "required": ["network_attachment"],
                 "description": "Private Service Connect interface (PSC-I): the job reaches a VPC through a network attachment (jobSpec.pscInterfaceConfig); the way for H100 Mega, H200 and B200 machines, which VPC peering does not serve.",
                 "properties": {"network_attachment": {"type": "string", "minLength": 1, "description": "Network attachment in the job's region: NAME or projects/PROJECT/regions/REGION/networkAttachments/NAME."},
                                "dns_peering": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/dns_peering"}, "description": "DNS zones of other networks to resolve (dnsPeeringConfigs)."}}}
def pool(desc, replicas):
    props = {"replicas": replicas, **machine_props, **container_props, **mount_props}
    return {"type": "object", "description": desc, "additionalProperties": False, "properties": props}
count = {"type": "integer", "minimum": 1, "maximum": INT64_MAX, "x-bound": "replicaCount is an int64", "description": "Number of nodes in the pool.", "default": 1}
# The syntax has one home, vxtrain.model (parse_duration reads what this pattern accepts).
duration = {"description": f"A duration: {DURATION_EXAMPLES}, or seconds as a number.",
            "x-accepts": f"a duration such as {DURATION_EXAMPLES} (or seconds as a number)",
            "type": ["string", "integer"], "pattern": DURATION_PATTERN, "minimum": 0}
# Its upper bound (model.DURATION_MAX_SECONDS) is scheduling_rules' to say: a type union's
# maximum would be reported as the wrong type.
param = {"type": "object", "additionalProperties": False, "required": ["type"], "description": "One tuned parameter; trials get it as --NAME=VALUE.",
         "properties": {"type": {"type": "string", "enum": ["double", "integer", "discrete", "categorical"], "description": "double or integer (with min and max), discrete (numeric values) or categorical (string values)."},
                        "min": {"type": "number", "description": "Lower bound (double, integer)."}, "max": {"type": "number", "description": "Upper bound (double, integer)."},
                        "values": {"type": "array", "items": {"type": ["string", "number"]}, "description": "The values of a discrete or categorical parameter."},
                        "scale": {"type": "string", "enum": ["linear", "log", "reverse_log"], "description": "How the search space is scaled."}}}
metric = {"type": "object", "additionalProperties": False, "required": ["id", "goal"], "description": "The metric trials report, and its goal.",
          "properties": {"id": {"type": "string", "description": "Metric name the trials report, e.g. accuracy."}, "goal": {"type": "string", "enum": ["maximize", "minimize"], "description": "maximize or minimize."}}}
schema = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://vxtrain.dev/schema/native-v1.json",
    "title": "vxtrain job spec (native format)",
    "description": "A readable Vertex AI CustomJob: pools by role (chief, workers, parameter_servers or reduction_server, evaluators).",
    "type": "object",
    "additionalProperties": False,
    "required": ["display_name"],
    "properties": {
        "display_name": {"type": "string", "minLength": 1, "maxLength": 128, "description": "Job display name (Vertex: at most 128 characters)."},
        "project": {"type": "string", "description": "Google Cloud project (else --project, else GOOGLE_CLOUD_PROJECT)."},
        "region": {"type": "string", "description": "Vertex AI region, e.g. us-central1 (else --region, else CLOUD_ML_REGION)."},
        "labels": {"type": "object", "description": "Job labels: lowercase keys/values, [a-z0-9_-], at most 63 characters.",
                   "additionalProperties": {"type": ["string", "number", "boolean"]}},
        "service_account": {"type": "string", "description": "Service account the job runs as."},
        "network": {"type": "string", "description": "VPC network: projects/NUMBER/global/networks/NAME."},
        "base_output_dir": {"type": "string", "description": "gs:// prefix for AIP_MODEL_DIR, AIP_CHECKPOINT_DIR, AIP_TENSORBOARD_LOG_DIR (a local path is allowed for --target local)."},
        "tensorboard": {"type": "string", "description": "Tensorboard resource name (needs service_account)."},
        "enable_web_access": {"type": "boolean", "default": False, "description": "Interactive shell access to the replicas."},
        "enable_dashboard_access": {"type": "boolean", "default": False, "description": "Access to the dashboard the chief container serves (jobSpec.enableDashboardAccess)."},
        "psc_interface": {"$ref": "#/$defs/psc_interface"},
        "reserved_ip_ranges": {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1},
                               "description": "Names of reserved IP ranges of the peered network (with network) the job is deployed in."},
        "experiment": {"type": "string", "minLength": 1, "description": "Vertex AI Experiment: projects/P/locations/L/metadataStores/default/contexts/EXPERIMENT."},
        "experiment_run": {"type": "string", "minLength": 1, "description": "Experiment run (with experiment): projects/P/locations/L/metadataStores/default/contexts/EXPERIMENT-RUN."},
        "protected_artifact_location_id": {"type": "string", "minLength": 1, "description": "Vertex AI location where protected artifacts are stored, when it differs from the job's region."},
        "scheduling": {"type": "object", "additionalProperties": False, "description": "Scheduling options.",
                       "properties": {"timeout": {**duration, "description": "Maximum run time (Vertex default 7d)."},
                                      "restart_job_on_worker_restart": {"type": "boolean", "default": False, "description": "Restart the whole job when a replica restarts."},
                                      "strategy": {"type": "string", "enum": ["STANDARD", "SPOT", "FLEX_START"], "default": "STANDARD", "description": "STANDARD (on-demand VMs), SPOT (Spot VMs, preemptible) or FLEX_START (waits up to max_wait for resources)."},
                                      "max_wait": {**duration, "description": "FLEX_START: how long to wait for resources."},
                                      "disable_retries": {"type": "boolean", "default": False, "description": "Fail the job instead of retrying it after an internal error."}}},
        "defaults": {"type": "object", "additionalProperties": False, "description": "Merged into every training pool (never into reduction_server).",
                     "properties": {**machine_props, **container_props, **mount_props}},
        "chief": pool("Pool 0: the primary replica. Always exactly 1 replica.", {"type": "integer", "default": 1, "description": "Must be 1 (Vertex requires one primary replica)."}),
        "workers": pool("Pool 1: workers.", count),
        "parameter_servers": pool("Pool 2: parameter servers (not with reduction_server).", count),
        "reduction_server": {"type": "object", "additionalProperties": False,
                             "description": "Pool 2: Vertex AI Reduction Server for NCCL all-reduce (not with parameter_servers). Takes nothing from defaults.",
                             "properties": {"replicas": {"description": "A number, or auto: sized so its bandwidth covers pools 0+1.", "x-accepts": "auto or an integer from 1 to 9223372036854775807 (replicaCount is an int64)",
                                                         "type": ["integer", "string"], "minimum": 1, "maximum": INT64_MAX, "pattern": "^auto$", "default": "auto"},
                                            "machine_type": {"type": "string", "default": "n1-highcpu-16", "description": "Reduction Server node machine type."},
                                            "image": {"type": "string", "description": "Override of the regional reductionserver:latest image."},
                                            "accelerator": {"$ref": "#/$defs/accelerator"},
                                            "disk": {"$ref": "#/$defs/disk"}}},
        "evaluators": pool("Pool 3: evaluators (not part of the training cluster).", count),
        "local": {"type": "object", "additionalProperties": False, "description": "How local-run and --target local run replicas on this host.",
                  "properties": {"command": strlist("Command run on the host instead of the container command; pool args are appended."),
                                 "workdir": {"type": "string", "description": "Working directory, relative to the spec file."},
                                 "env": env}},
        "study": {"type": "object", "additionalProperties": False, "description": "Makes the job a HyperparameterTuningJob.",
                  "properties": {"metric": metric, "metrics": {"type": "array", "minItems": 1, "items": metric, "description": "Several metrics (instead of metric)."},
                                 "parameters": {"type": "object", "minProperties": 1, "additionalProperties": param, "description": "Tuned parameters by name."},
                                 "max_trials": {"type": "integer", "minimum": 1, "maximum": INT32_MAX, "x-bound": "maxTrialCount is an int32", "description": "Total number of trials."},
                                 "parallel_trials": {"type": "integer", "minimum": 1, "maximum": INT32_MAX, "x-bound": "parallelTrialCount is an int32", "description": "Trials run at the same time."},
                                 "max_failed_trials": {"type": "integer", "minimum": 0, "maximum": INT32_MAX, "x-bound": "maxFailedTrialCount is an int32", "description": "Failed trials after which the study fails."},
                                 "algorithm": {"type": "string", "enum": ["default", "random", "grid"], "default": "default", "description": "default (Vertex AI's Bayesian optimization), random or grid search."}}},
        "persistent_resource": {"type": "string", "pattern": "^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$",
                                "x-accepts": "a persistent resource ID: lowercase letters, digits and hyphens, starting with a letter, at most 63 characters",
                                "description": "ID of a PersistentResource in the job's project and region to run on (its machines, billed while it runs)."},
        "staging_bucket": {"type": "string", "description": "gs://BUCKET[/PREFIX] where python_package.source packages are uploaded (--staging-bucket overrides)."},
        "image_repository": {"type": "string", "minLength": 1, "description": "HOST/PATH where images built from build: are pushed, e.g. us-central1-docker.pkg.dev/PROJECT/REPO (--image-repository overrides)."},
        "extra": {"type": "object", "description": "Raw CustomJob fields (camelCase REST form), deep-merged last; checked against the installed aiplatform protos."},
    },
    "$defs": {"accelerator": accel, "disk": disk, "python_package": pkg, "reservation": reservation, "build": build,
              "nfs_mount": nfs_mount, "lustre_mount": lustre_mount, "psc_interface": psc_interface, "dns_peering": dns_peering},
}

# fallback: each entry is an overlay on the spec (as -f), any top-level key but fallback
# itself. Only the keys are checked here: an overlay is partial (accelerator: {count: 8}
# alone is a good one), so each rung is checked as a whole job once merged (api._check_rungs).
schema["properties"]["fallback"] = {
    "type": "array", "minItems": 1,
    "description": "Alternatives tried in order when the job cannot get its machines (quota, stockout, "
                   "too long pending): each entry is an overlay on the spec (deep-merged as -f), not on the previous entry.",
    "items": {"type": "object", "additionalProperties": False,
              "description": "An overlay on the spec: mappings merge key by key, lists and scalars replace, null deletes.",
              "properties": {key: {"description": f"Replaces or merges into the spec's {key}."}
                             for key in schema["properties"]}},
}

# recovery: and notify: belong to the submit that follows the job, not to one rung's job: added
# after fallback, so a fallback entry cannot carry them (they apply to the whole ladder).
schema["properties"]["recovery"] = {
    "type": "object", "additionalProperties": False, "required": ["max_recoveries"],
    "description": "submit --wait starts the job again (a new CustomJob, same base_output_dir) when it loses its "
                   "machines after it started: a stockout or preemption, an internal error, or a listed exit code.",
    "properties": {
        "max_recoveries": {"type": "integer", "minimum": 1, "maximum": 100,
                           "description": "New attempts after the first, at most."},
        "on_exit_codes": {"type": "array", "minItems": 1, "uniqueItems": True,
                          "items": {"type": "integer", "minimum": 1, "maximum": 255},
                          "description": "A replica exiting with one of these codes is recoverable too "
                                         "(Vertex: 'The replica workerpoolK-I exited with a non-zero status of N')."},
        "strategy": {"type": "string", "enum": ["same", "next"], "default": "same",
                     "description": "same: start the rung that ran again | next: go on down the fallback ladder."},
        "spot_to_standard_after": {"type": "integer", "minimum": 1, "maximum": 100, "x-bound": "max_recoveries' own bound",
                                   "description": "Under scheduling.strategy SPOT: after this many preemptions, "
                                                  "the next attempts use STANDARD (on-demand) VMs."},
    },
}
ENV_NAME = "^[A-Za-z_][A-Za-z0-9_]*$"
schema["properties"]["notify"] = {
    "type": "array", "minItems": 1,
    "items": {"oneOf": [
        {"type": "string", "pattern": "^https?://[^\\s/?#]+[^\\s]*$",
         "x-accepts": "an http:// or https:// URL, e.g. a Slack or Google Chat incoming webhook"},
        {"type": "object", "additionalProperties": False, "required": ["url_env"],
         "x-accepts": "{url_env: NAME, secret_env: NAME}: the environment variables that hold the hook's URL "
                      "(and its signing secret)",
         "properties": {"url_env": {"type": "string", "pattern": ENV_NAME},
                        "secret_env": {"type": "string", "pattern": ENV_NAME}}},
    ]},
    "description": "Hooks that get one JSON object per event (started, recovering, succeeded, failed, cancelled, "
                   "no-capacity): a URL, or {url_env: NAME} naming the environment variable that holds it, as "
                   "the plan keeps it for vxtrain reconcile (a URL is a secret: it is never kept) "
                   "(--notify adds more).",
}


def build() -> dict:
    """The schema as a dict."""
    return schema


if __name__ == "__main__":
    OUT.write_text(json.dumps(schema, indent=2) + "\n")
