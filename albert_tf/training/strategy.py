"""tf.distribute strategy from the binaries' flags."""

import json
import os

import tensorflow as tf

from albert_tf.core import errors
from albert_tf.core.settings import STRATEGIES


def resolve_strategy_name(name, use_tpu=False):
  """auto -> tpu with --use_tpu, mirrored with more than one GPU, else one_device."""
  if name != "auto":
    return name
  if use_tpu:
    return "tpu"
  if len(tf.config.list_logical_devices("GPU")) > 1:
    return "mirrored"
  return "one_device"


def split_cpu(num_devices):
  """Makes `num_devices` logical CPU devices (before TensorFlow initialises its devices)."""
  if num_devices > 1:
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * num_devices)


def create_strategy(name="auto", use_tpu=False, tpu_name=None, tpu_zone=None, gcp_project=None,
                    master=None, cpu_devices=0):
  """Builds the strategy. multi_worker_mirrored reads TF_CONFIG; tpu connects to `tpu_name` (or
  `master`)."""
  split_cpu(cpu_devices)
  name = resolve_strategy_name(name, use_tpu)
  if name == "one_device":
    gpus = tf.config.list_logical_devices("GPU")
    if not gpus:
      # On the CPU, the default strategy is the same placement without OneDeviceStrategy's
      # per-step overhead (a few % of an ALBERT-base step here).
      return tf.distribute.get_strategy()
    return tf.distribute.OneDeviceStrategy(gpus[0].name)
  if name == "mirrored":
    gpus = tf.config.list_logical_devices("GPU")
    devices = [d.name for d in gpus] or [d.name for d in tf.config.list_logical_devices("CPU")]
    return tf.distribute.MirroredStrategy(devices)
  if name == "multi_worker_mirrored":
    if "TF_CONFIG" not in os.environ:
      raise errors.UsageError(
          "--strategy=multi_worker_mirrored needs the TF_CONFIG environment variable")
    return tf.distribute.MultiWorkerMirroredStrategy()
  if name == "tpu":
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver(
        tpu=tpu_name or master or "", zone=tpu_zone, project=gcp_project)
    tf.config.experimental_connect_to_cluster(resolver)
    tf.tpu.experimental.initialize_tpu_system(resolver)
    return tf.distribute.TPUStrategy(resolver)
  raise errors.UsageError(f"unknown strategy {name!r}; choose one of {STRATEGIES}")


def is_chief(strategy):
  """Whether this worker writes checkpoints, summaries and results."""
  resolver = getattr(strategy, "cluster_resolver", None)
  if resolver is None or isinstance(strategy, tf.distribute.TPUStrategy):
    return True
  task_type, task_id = resolver.task_type, resolver.task_id
  if task_type is None:
    return True
  cluster = json.loads(os.environ.get("TF_CONFIG", "{}")).get("cluster", {})
  if "chief" in cluster:
    return task_type == "chief"
  return task_type == "worker" and task_id == 0


def num_workers(strategy):
  """How many worker processes take part in the strategy's collectives (1 but for
  multi_worker_mirrored with a cluster in TF_CONFIG)."""
  resolver = getattr(strategy, "cluster_resolver", None)
  if resolver is None or isinstance(strategy, tf.distribute.TPUStrategy):
    return 1
  jobs = resolver.cluster_spec().as_dict()
  return max(1, len(jobs.get("chief", [])) + len(jobs.get("worker", [])))


def barrier(strategy, failed=False):
  """Returns once every worker has called it, and whether any of them passed failed=True.

  A cross-worker all-reduce (every worker must call it, the same number of times and in the same
  order as the strategy's other collectives); a no-op with a single worker.
  """
  if num_workers(strategy) == 1:
    return failed
  flags = strategy.run(lambda: tf.constant(float(failed)))
  return bool(strategy.reduce(tf.distribute.ReduceOp.SUM, flags, axis=None) > 0)


def chief_decides(strategy, value):
  """The chief's bool `value` on every worker (each worker must call it, as `barrier`): for
  decisions that lead to collectives, which every worker must then take alike."""
  return barrier(strategy, failed=bool(value) and is_chief(strategy))


def run_on_chief(strategy, write, what):
  """Runs write() on the chief only, then makes every worker wait for it (`barrier`): the others
  read what the chief writes (cached features), and must not look before it is complete. An error
  on the chief is raised on every worker, so none waits for it forever or reads a missing file.
  `what` names the output in the other workers' error."""
  error = None
  if is_chief(strategy):
    try:
      write()
    except Exception as e:  # noqa: BLE001 -- re-raised below
      error = e  # raised below, once the other workers know of it
  if barrier(strategy, failed=error is not None):
    if error is not None:
      raise error
    raise RuntimeError(f"the chief worker failed to write {what}: see its log for the error")


def worker_dir(strategy, output_dir):
  """Where this worker saves: output_dir for the chief; a hidden scratch folder under it for the
  other workers of a multi-worker run (they must save too, collectively, but not over the
  chief's files)."""
  if is_chief(strategy):
    return output_dir
  return os.path.join(output_dir, f".worker_{strategy.cluster_resolver.task_id}")


def describe(strategy):
  name = type(strategy).__name__
  return "default (one device)" if name == "_DefaultDistributionStrategy" else name
