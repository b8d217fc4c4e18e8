"""Training "job" of the study example: a score that depends only on the parameters.

Vertex AI passes a trial's parameters as ``--name=value`` arguments and its id
in CLUSTER_SPEC / TF_CONFIG (``task.trial``). The chief computes

    accuracy = 1 - 10 * (log10(learning_rate) + 2)^2 / 100 - (layers - 3)^2 / 10 - (0.05 if sgd)

(best: learning_rate 0.01, layers 3, adam → 1.0) and reports it the way
Google's cloudml-hypertune package does, without needing it installed: a JSON
line appended to the file named by CLOUD_ML_HP_METRIC_FILE. Workers only say
hello. With VXTRAIN_STUDY_LOG=DIR every replica also writes what it received
(trial id, argv, start/end times) to DIR, for tests.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

METRIC_FILE = os.environ.get("CLOUD_ML_HP_METRIC_FILE", "/tmp/hypertune/output.metrics")


def report_metric(tag: str, value: float, step: int) -> None:
    """What hypertune.HyperTune().report_hyperparameter_tuning_metric writes: one JSON line."""
    os.makedirs(os.path.dirname(METRIC_FILE) or ".", exist_ok=True)
    record = {"global_step": str(step), tag: str(float(value)), "timestamp": time.time(),
              "trial": os.environ.get("CLOUD_ML_TRIAL_ID", "0")}
    with open(METRIC_FILE, "a", encoding="utf-8") as out:
        out.write(json.dumps(record, sort_keys=True) + "\n")


def score(learning_rate: float, layers: int, optimizer: str) -> float:
    """The "accuracy" of a trial: 1.0 at lr 0.01, 3 layers, adam; lower elsewhere."""
    lr_penalty = 0.1 * (math.log10(learning_rate) + 2) ** 2
    return 1.0 - lr_penalty - (layers - 3) ** 2 / 10 - (0.05 if optimizer == "sgd" else 0.0)


def task() -> dict:
    """This replica's task in CLUSTER_SPEC ({type, index, trial})."""
    return json.loads(os.environ.get("CLUSTER_SPEC", "{}")).get("task", {})


def log(started: float, args: argparse.Namespace) -> None:
    """Record what this replica received (only when VXTRAIN_STUDY_LOG is set)."""
    folder = os.environ.get("VXTRAIN_STUDY_LOG")
    if not folder:
        return
    me = task()
    tf_task = json.loads(os.environ.get("TF_CONFIG", "{}")).get("task", {})
    entry = {"trial": me.get("trial"), "tf_trial": tf_task.get("trial"), "type": me.get("type"),
             "index": me.get("index"), "argv": sys.argv[1:], "start": started, "end": time.time()}
    name = f"trial{me.get('trial')}-{me.get('type')}-{me.get('index')}.json"
    with open(os.path.join(folder, name), "w", encoding="utf-8") as out:
        json.dump(entry, out)


def main() -> int:
    started = time.time()
    parser = argparse.ArgumentParser()
    parser.add_argument("--learning_rate", type=float, required=True)
    parser.add_argument("--layers", type=int, required=True)
    parser.add_argument("--optimizer", choices=["adam", "sgd"], required=True)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--sleep", type=float, default=float(os.environ.get("STUDY_SLEEP", "0")))
    args = parser.parse_args()
    time.sleep(args.sleep)  # tests use it to see trials overlap
    me = task()
    if me.get("type") == "workerpool0":
        accuracy = score(args.learning_rate, args.layers, args.optimizer)
        report_metric("accuracy", accuracy, step=args.epochs)
        print(f"trial {me.get('trial')}: accuracy={accuracy:.4f}")
    else:
        print(f"trial {me.get('trial')}: worker {me.get('index')} done")
    if os.environ.get("STUDY_FAIL_OPTIMIZER") == args.optimizer:
        print(f"failing on purpose (STUDY_FAIL_OPTIMIZER={args.optimizer})", file=sys.stderr)
        return 1
    log(started, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
