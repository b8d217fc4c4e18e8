"""ParameterServerStrategy training with Keras Model.fit (TensorFlow's PS tutorial).

One binary for every task, branching on ``TFConfigClusterResolver().task_type``:
workers and parameter servers start a ``tf.distribute.Server`` and block in
``join()`` (the job ends when the chief ends); the chief coordinates: it builds
the model under the strategy, trains with a ``DatasetCreator`` on a small random
regression set, and checks the loss went down.

Keras 3 has no ParameterServerStrategy support, so this uses Keras 2 (the
``tf-keras`` package; ``TF_USE_LEGACY_KERAS=1``).
"""
from __future__ import annotations

import os
import sys

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("GRPC_FAIL_FAST", "use_caller")

import tensorflow as tf  # noqa: E402
import tf_keras as keras  # noqa: E402

FEATURES = 8
GLOBAL_BATCH = 32
EPOCHS = 4
STEPS_PER_EPOCH = 10


def run_server(resolver: tf.distribute.cluster_resolver.ClusterResolver) -> None:
    """Worker or parameter server: serve the cluster until the job is torn down."""
    server = tf.distribute.Server(resolver.cluster_spec(), job_name=resolver.task_type,
                                  task_index=resolver.task_id,
                                  protocol=resolver.rpc_layer or "grpc", start=True)
    print(f"{resolver.task_type} {resolver.task_id} serving at {server.target}", flush=True)
    server.join()


def dataset_fn(context: tf.distribute.InputContext) -> tf.data.Dataset:
    """A small random linear-regression set, sharded per input pipeline."""
    weights = tf.constant([[0.5], [-1.0], [2.0], [0.0], [1.5], [-0.5], [1.0], [0.25]])
    x = tf.random.stateless_uniform((256, FEATURES), seed=(1, 2))
    y = tf.matmul(x, weights)
    batch = context.get_per_replica_batch_size(GLOBAL_BATCH)
    data = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(256).repeat()
    data = data.shard(context.num_input_pipelines, context.input_pipeline_id)
    return data.batch(batch).prefetch(2)


def coordinate(resolver: tf.distribute.cluster_resolver.ClusterResolver) -> int:
    """Chief: create variables on the parameter servers and dispatch steps to workers."""
    num_ps = len(resolver.cluster_spec().as_dict().get("ps", []))
    partitioner = tf.distribute.experimental.partitioners.MinSizePartitioner(
        min_shard_bytes=256 << 10, max_shards=max(num_ps, 1))
    strategy = tf.distribute.ParameterServerStrategy(resolver, variable_partitioner=partitioner)
    with strategy.scope():
        model = keras.Sequential([keras.layers.Dense(1, input_shape=(FEATURES,))])
    model.compile(keras.optimizers.legacy.SGD(learning_rate=0.1), loss="mse",
                  steps_per_execution=5)
    history = model.fit(keras.utils.experimental.DatasetCreator(dataset_fn), epochs=EPOCHS,
                        steps_per_epoch=STEPS_PER_EPOCH, verbose=2)
    losses = history.history["loss"]
    print(f"chief: trained {EPOCHS * STEPS_PER_EPOCH} steps on "
          f"{strategy.extended._num_workers} workers, {num_ps} ps; loss {losses[0]:.4f} -> {losses[-1]:.4f}",
          flush=True)
    if not losses[-1] < losses[0]:
        print("chief: the loss did not go down", file=sys.stderr)
        return 1
    print("chief: PS training done", flush=True)
    return 0


def main() -> int:
    """Branch on the task type TensorFlow reads from TF_CONFIG."""
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    print(f"task {resolver.task_type}:{resolver.task_id} cluster={resolver.cluster_spec().as_dict()}",
          flush=True)
    if resolver.task_type in ("worker", "ps"):
        run_server(resolver)
        return 0
    if resolver.task_type == "evaluator":
        return 0  # a side-car evaluator does not connect to the training cluster
    return coordinate(resolver)


if __name__ == "__main__":
    sys.exit(main())
