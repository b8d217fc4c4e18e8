#!/usr/bin/env bash
# The GPU checks of docs/decisions.md ("Tried on a real GPU"), run on a host with exactly
# one NVIDIA GPU, CUDA torch installed and vxtrain importable, from the repository's root:
#   PYTHON=python3 bash scripts/gpu_check.sh
# CI has no GPU and never runs this; each step prints what it ran and its exit code.
set -u
PY=${PYTHON:-python3}
unset CUDA_VISIBLE_DEVICES  # the inventory must come from the host (NVML, else nvidia-smi -L)
export PYTHONUNBUFFERED=1
tmp=$(mktemp -d)
printf 'workers: null\n' > "$tmp/chief-only.yaml"
port=$(( 20000 + RANDOM % 20000 ))

step() {  # step NAME TIMEOUT CMD...: run CMD under a timeout and print its exit code
  local name=$1 limit=$2; shift 2
  printf '\n===== %s\n$ %s\n' "$name" "$*"
  timeout --kill-after=10 "$limit" "$@"
  printf -- '----- exit %s\n' "$?"
}

printf '===== host\n'
nvidia-smi -L
"$PY" -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__,
"cuda", torch.version.cuda, "nccl", ".".join(map(str, torch.cuda.nccl.version())),
"devices", torch.cuda.device_count(), torch.cuda.get_device_name(0))'
"$PY" -c 'from vxtrain.runtime import gpus; print("host_inventory():", gpus.host_inventory())'
# nvidia-smi -L when NVML cannot be imported (nvidia-ml-py absent): hide the module.
"$PY" -c 'import sys; sys.modules["pynvml"] = None
from vxtrain.runtime import gpus; print("host_inventory() without NVML:", gpus.host_inventory())'

ex=configs/examples/torch-ddp-gpu.yaml
step "(a) the chief alone, one GPU: trains over NCCL on it" 180 \
  "$PY" -m vxtrain local-run "$ex" -f "$tmp/chief-only.yaml"
step "(a) as JSON: each replica's gpus" 180 \
  "$PY" -m vxtrain local-run "$ex" -f "$tmp/chief-only.yaml" --output json
step "(b) chief + worker, one GPU each, on a one-GPU host: refused before anything starts" 60 \
  "$PY" -m vxtrain local-run "$ex"
step "(c) the same with --share-gpus: both ranks on the one GPU, NCCL's own refusal" 150 \
  "$PY" -m vxtrain local-run "$ex" --share-gpus
step "(d) submit --target local: the same refusal, before the job is created" 120 \
  "$PY" -m vxtrain submit "$ex" --target local --wait
step "(d) submit --target local, the chief alone" 240 \
  "$PY" -m vxtrain submit "$ex" --target local --wait -f "$tmp/chief-only.yaml"

printf '\n===== (e) the emulator hands out its own host GPUs (port %s)\n' "$port"
"$PY" -m vxtrain emulator --port "$port" --workdir "$tmp" > "$tmp/emulator.log" 2>&1 &
emu=$!
sleep 8
step "(e) the chief alone, through the emulator" 240 \
  "$PY" -m vxtrain submit "$ex" --endpoint "127.0.0.1:$port" --project p --wait -f "$tmp/chief-only.yaml"
step "(e) chief + worker through the emulator: FAILED before any replica starts" 120 \
  "$PY" -m vxtrain submit "$ex" --endpoint "127.0.0.1:$port" --project p --wait
kill -INT "$emu"; wait "$emu"
printf -- '----- emulator log\n'; cat "$tmp/emulator.log"
rm -rf "$tmp"
