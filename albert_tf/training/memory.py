"""The memory pre-flight of the binaries that build a model: before the model is built, the run's
peak memory is estimated and compared with the memory the process has; a run that cannot fit is
refused with one line (errors.MemoryCheckError) instead of growing until the kernel's OOM killer
ends it (exit 137 and nothing from the program). `--nomemory_check` skips it.

Every run of a training binary is checked (training.job.Job.claim_output_dir, before anything is
written to output_dir): training, evaluation, prediction and export each have a footprint
(footprints.job_footprints), and the largest of those the run takes is checked; a
train-and-evaluate run needs the larger of the two. Training counts where it takes a step
(trains): --do_train, and not resuming at the end of its schedule. The export binaries call
check_model_build.

The estimates, and their calibration, are albert_tf.training.footprints'. A training run refused
without --recompute_activations is also offered that flag, with the largest --train_batch_size
that would fit with it.

Only host memory is checked: a step placed on GPUs or TPUs keeps its tensors in device memory,
which this estimate does not model; the check is then skipped with a log line.
"""

import logging
import os

from albert_tf.core import errors
from albert_tf.training.footprints import export_estimate, gib, job_footprint

logger = logging.getLogger("albert_tf")

# Where the binary has --nomemory_check, the refusal names it.
_SKIP = " (or skip this check with --nomemory_check)"


def _read_int(path):
  """The integer in a cgroup file, None where it is missing or says "max" (no limit)."""
  try:
    with open(path, encoding="ascii") as f:
      text = f.read().strip()
  except OSError:
    return None
  return int(text) if text.isdigit() else None


def _cgroup_dirs(controller_root, proc_cgroup="/proc/self/cgroup", v2=False):
  """The process's own cgroup directory under controller_root (from /proc/self/cgroup), then
  controller_root itself (a container sees its own cgroup at the root)."""
  dirs = []
  try:
    with open(proc_cgroup, encoding="ascii") as f:
      for line in f:
        _, controllers, path = line.rstrip("\n").split(":", 2)
        if (v2 and controllers == "") or (not v2 and "memory" in controllers.split(",")):
          dirs.append(os.path.join(controller_root, path.lstrip("/")))
  except (OSError, ValueError):
    pass
  return dirs + [controller_root]


def cgroup_free(root="/sys/fs/cgroup", proc_cgroup="/proc/self/cgroup"):
  """(free bytes, file) under the process's cgroup memory limit, or (None, None) with no limit.
  cgroup v2: memory.max - memory.current; v1: memory.limit_in_bytes - memory.usage_in_bytes."""
  candidates = [(d, "memory.max", "memory.current")
                for d in _cgroup_dirs(root, proc_cgroup, v2=True)]
  candidates += [(d, "memory.limit_in_bytes", "memory.usage_in_bytes")
                 for d in _cgroup_dirs(os.path.join(root, "memory"), proc_cgroup)]
  for directory, limit_name, usage_name in candidates:
    limit = _read_int(os.path.join(directory, limit_name))
    # v1 writes "no limit" as a huge number (PAGE_COUNTER_MAX pages).
    if limit is not None and limit < 2**60:
      usage = _read_int(os.path.join(directory, usage_name)) or 0
      return max(0, limit - usage), os.path.join(directory, limit_name)
  return None, None


def _proc_field_bytes(path, key):
  """The `key:` line of a /proc file in kB (as /proc/meminfo and /proc/self/status write
  them), in bytes; None where it cannot be read."""
  try:
    with open(path, encoding="ascii") as f:
      for line in f:
        if line.startswith(f"{key}:"):
          return int(line.split()[1]) * 1024
  except (OSError, ValueError, IndexError):
    pass
  return None


def meminfo_available(path="/proc/meminfo"):
  """MemAvailable of /proc/meminfo in bytes, None where it cannot be read."""
  return _proc_field_bytes(path, "MemAvailable")


def own_rss(path="/proc/self/status"):
  """The resident memory of this process in bytes (0 where it cannot be read)."""
  return _proc_field_bytes(path, "VmRSS") or 0


def available():
  """(bytes, where it comes from): the memory this process can reach at its peak: what it holds
  now plus the smaller of its cgroup's free memory and MemAvailable; (None, None) where neither
  can be read."""
  sources = [(n, src) for n, src in (cgroup_free(), (meminfo_available(), "/proc/meminfo"))
             if n is not None]
  if not sources:
    return None, None
  free, source = min(sources)
  rss = own_rss()
  return rss + free, f"{gib(free)} free per {source} + {gib(rss)} this process holds"


def device_types(devices):
  """The device types ("CPU", "GPU", "TPU") of tf.distribute device strings such as
  "/job:localhost/replica:0/task:0/device:CPU:0"."""
  types = set()
  for device in devices:
    last = device.rstrip("/").split("/")[-1]  # "device:CPU:0", or "CPU:0" / "cpu:0"
    parts = last.split(":")
    types.add((parts[1] if parts[0].lower() == "device" and len(parts) > 1 else parts[0]).upper())
  return types


def _refusal(footprint, limit, source, config_file, skippable):
  """The MemoryCheckError message of check: the estimate, what is available and the fix; where
  TensorFlow and the model alone exceed the limit, no batch flag helps, and the fix is a smaller
  model (config_file's) or a machine with more memory."""
  model = footprint.runtime + footprint.state
  fix = footprint.fix
  if fix is None or model > limit:
    fix = (f"TensorFlow and the model alone need {gib(model)}: use a smaller model than "
           f"{config_file or 'this config'} (its hidden_size, intermediate_size, vocab_size and "
           "unshared layers size it) or a machine with more memory")
  elif footprint.recompute_fit is not None:
    batch = footprint.recompute_fit.largest_batch(limit)
    if batch:
      fix += (f"; or --recompute_activations (the same gradients, for about a third more "
              f"compute), with which --train_batch_size up to {batch} fits")
  return (f"{footprint.what} would need about {footprint.describe()}, but {gib(limit)} is "
          f"available ({source}): {fix}" + (_SKIP if skippable else ""))


def check(footprint, devices, config_file=None, skippable=True):
  """Refuses a run whose estimated peak exceeds the memory available, else logs the estimate.

  Args:
    footprint: a Footprint, or None (nothing to check).
    devices: the strategy's local device strings (strategy.extended.worker_devices).
    config_file: the model's config file, named where the model itself does not fit.
    skippable: the binary has --nomemory_check (the message then names it).

  Raises:
    errors.MemoryCheckError: the estimate is above what the process has.
  """
  if footprint is None:
    return
  what = footprint.what
  types = device_types(devices)
  if types - {"CPU"}:
    logger.info(f"memory check skipped: {what} runs on {'/'.join(sorted(types))}, whose memory "
                f"it does not estimate (estimated host peak if on CPU {footprint.describe()})")
    return
  limit, source = available()
  if limit is None:
    logger.info("memory check skipped: neither the cgroup limit nor /proc/meminfo can be read")
    return
  if footprint.total > limit:
    raise errors.MemoryCheckError(_refusal(footprint, limit, source, config_file, skippable))
  logger.info(f"memory check: {what} estimated at {footprint.describe()}, of {gib(limit)} "
              "available")


def local_devices(strategy):
  """The devices of a tf.distribute strategy's replicas on this host. The default strategy
  (one device; training/strategy.py uses it on CPUs alone) runs where TensorFlow places ops:
  the first GPU if there is one, else the CPU."""
  import tensorflow as tf
  if strategy is tf.distribute.get_strategy() and not tf.distribute.has_strategy():
    gpus = tf.config.list_logical_devices("GPU")
    return [gpus[0].name] if gpus else ["/device:CPU:0"]
  return list(strategy.extended.worker_devices)


def trains(job):
  """Whether a Job's run takes training steps: its settings' do_train, unless the job declares
  the last step of its schedule before reading any data (`scheduled_train_steps()`, None where
  the data sets it, as SQuAD's epochs do) and output_dir's newest model.ckpt-<step> has reached
  it: the run then resumes there, trains no step (runner.run_training) and goes on to what it
  evaluates, predicts or exports. run_race and run_pretraining train unless --nodo_train (the
  original's defaults), so a `--do_eval` of a finished run is such a run.

  Args:
    job: a training.job.Job (its settings and scheduled_train_steps).
  """
  if not getattr(job.settings, "do_train", True):
    return False
  total = job.scheduled_train_steps()
  if total is None:
    return True
  # Imported here: checkpointing loads TensorFlow, which the estimates themselves do not need.
  from albert_tf.training.checkpointing import checkpoint_steps
  saved = checkpoint_steps(job.settings.output_dir)
  if not saved or max(saved) < total:
    return True
  logger.info(f"memory check: {saved[max(saved)]} is at step {max(saved)}, the end of the "
              f"training schedule ({total} steps): no training step runs")
  return False


def check_job(job):
  """check() of the largest part of a Job's run (training.job.Job: its settings, config and
  strategy): training (where it takes steps: trains), evaluation, prediction or export; skipped
  with --nomemory_check."""
  if not job.settings.run.memory_check:
    return
  devices = local_devices(job.strategy)
  check(job_footprint(job.settings, job.config, job.strategy.num_replicas_in_sync,
                      len(devices), trains=trains(job)), devices, job.config_file)


def check_model_build(config, what, *, seq_length, batch_size=1, precision="float32",
                      config_file=None):
  """The pre-flight of a binary that builds a model outside a Job (the exporters): refuses, before
  the model is built, a model whose weights and export copies (export_estimate) exceed the
  memory available; logs the estimate otherwise. Skipped where TensorFlow places the model on a
  GPU.

  Args:
    config: the AlbertConfig.
    what: the run, for the messages ("exporting the SavedModel").
    seq_length: the sequence length of the batch it runs.
    batch_size: sequences it runs through the model (0: none).
    precision: the weights' precision (settings.SERVING_POLICIES: float32 or bfloat16).
    config_file: where config comes from, named in the refusal.

  Raises:
    errors.MemoryCheckError: the estimate is above what the process has.
  """
  import tensorflow as tf
  check(export_estimate(config, seq_length, precision=precision, batch_size=batch_size,
                        what=what),
        local_devices(tf.distribute.get_strategy()), config_file, skippable=False)
