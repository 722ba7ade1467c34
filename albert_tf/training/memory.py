"""The memory pre-flight of the training binaries: before the model is built, the training step's
peak memory is estimated and compared with the memory the process has; a run that cannot fit is
refused with one line (errors.MemoryCheckError) instead of growing until the kernel's OOM killer
ends it (exit 137 and nothing from the program). `--nomemory_check` skips it.

The estimate is the peak resident memory of the process, per host:

  runtime      TensorFlow and the traced step functions (a constant, measured; see below)
  state        per local replica: the weights, their gradients, the clipped gradients, the two
               optimizer slots (LAMB and AdamW both keep m and v) and, with
               --gradient_accumulation_steps > 1, the accumulated gradients; float32 each
  activations  per local replica and micro-batch (train_batch_size / (replicas x accumulation
               steps) sequences, x 4 choices for RACE): what backprop keeps of each of the
               num_hidden_layers layers (ALBERT shares the weights of its layers, not their
               activations): [b, T, H] and [b, T, I] tensors and the [b, heads, T, T] attention
               scores and probabilities; the embeddings; the head: for pretraining the masked LM
               logits [b, P, V] (logits, log-probabilities, one-hot labels and their gradients),
               for SQuAD the span head's [b, T, H] tensors.

Calibration: peak RSS (resource.getrusage(RUSAGE_CHILDREN).ru_maxrss) of `run_pretraining
--num_train_steps=2 --optimizer=lamb` on synthetic records (20 predictions per sequence), on the
2-core CPU machine of this project (TensorFlow 2.21, float32):

  config              batch  seq  estimate   measured   estimate / measured
  tiny_quickstart         8   64  0.74 GiB   0.85 GiB   0.87
  albert_base_v2          8  128  2.35 GiB   2.66 GiB   0.88
  albert_base_v2         16  256  7.34 GiB   7.20 GiB   1.02

At the README's TPU-pod sizes (albert_base_v2, 4096 x 512) it is about 4100 GiB: the run used
to grow until the OOM killer ended it.

tests/test_memory_check.py measures the first again (within 2x) and checks the arithmetic.

Only host memory is checked: a step placed on GPUs or TPUs keeps its tensors in device memory,
which this estimate does not model; the check is then skipped with a log line.
"""

import dataclasses
import logging
import os

from albert_tf import errors
from albert_tf import settings as settings_lib

logger = logging.getLogger("albert_tf")

# TensorFlow, the binary's modules and the traced training and eval step functions, resident
# before any tensor of the model: measured peak RSS of a tiny config's run minus its estimate.
RUNTIME_BYTES = 700 * 2**20

# Activation elements backprop keeps per layer and per token, in units of hidden_size and of
# intermediate_size, and per (head, query, key) of the attention: Q, K, V, the context, the
# attention output, the residual sums and the two layer norms' inputs and normalised values
# (H); the FFN's pre-activation, gelu's intermediate terms and its output (I); the scores and
# their softmax (heads x T x T). Calibrated with the measurements above.
_PER_TOKEN_HIDDEN = 12
_PER_TOKEN_INTERMEDIATE = 5
_PER_SCORE = 3
# The masked LM head's [b, P, V] tensors: logits (float32), log-probabilities, the one-hot
# labels, their product and the gradients of the logits and log-probabilities.
_PER_MLM_LOGIT = 6
# The SQuAD span heads' [b, T, H] tensors (the end logits conditioned on the start in v2).
_PER_SPAN_HIDDEN = 4
# Float32 copies of the parameters a replica holds: the weights, their gradients, the clipped
# gradients and the optimizer's two slots (m and v); + 1 accumulator with accumulation steps.
_STATE_COPIES = 5
# RACE scores each question's choices (tasks/race/data.LABELS: A-D) as separate sequences.
RACE_CHOICES = 4

_GIB = 2**30


@dataclasses.dataclass(frozen=True)
class Footprint:
  """An estimated peak memory, in bytes, by part (see the module docstring).

  Args:
    runtime: TensorFlow and the traced step.
    state: weights, gradients and optimizer slots, all local replicas.
    activations: what backprop keeps of a micro-batch, all local replicas.
    micro_batch_size: sequences per replica and micro-batch (choices counted).
    seq_length: the sequence length T.
  """
  runtime: int
  state: int
  activations: int
  micro_batch_size: int
  seq_length: int

  @property
  def total(self):
    return self.runtime + self.state + self.activations

  def describe(self):
    return (f"{gib(self.total)} (weights, gradients and optimizer slots {gib(self.state)}, "
            f"activations of {self.micro_batch_size} sequences x {self.seq_length} tokens "
            f"{gib(self.activations)}, TensorFlow {gib(self.runtime)})")


def gib(n):
  """n bytes as '1.23 GiB'."""
  return f"{n / _GIB:.2f} GiB"


def parameter_count(config):
  """The trainable parameters of an AlbertConfig's encoder with the pretraining heads (masked LM
  and sentence order; a fine-tuning head is smaller than either). The layer groups that
  parameter_sharing keeps apart (num_parameter_groups) each hold inner_group_num blocks."""
  e, h, i, v = (config.embedding_size, config.hidden_size, config.intermediate_size,
                config.vocab_size)
  embeddings = (v + config.max_position_embeddings + config.type_vocab_size) * e + 2 * e
  projection = e * h + h
  attention = 4 * (h * h + h) + 2 * h
  ffn = h * i + i + i * h + h + 2 * h
  sharing = getattr(config, "parameter_sharing", "all-shared")
  groups = config.num_parameter_groups
  # shared-attention / shared-FFN: one copy of the shared part, one per layer of the other.
  attention_copies = {"shared-FFN": config.num_hidden_layers}.get(sharing, groups)
  ffn_copies = {"shared-attention": config.num_hidden_layers}.get(sharing, groups)
  blocks = config.inner_group_num * (attention_copies * attention + ffn_copies * ffn)
  pooler = h * h + h
  heads = (h * e + e + 2 * e + v) + (2 * h + 2)  # masked LM (tied output table) and SOP
  return embeddings + projection + blocks + pooler + heads


def estimate(config, micro_batch_size, seq_length, *, local_replicas=1,
             gradient_accumulation_steps=1, mixed_precision="float32",
             max_predictions_per_seq=0, span_head=False):
  """The peak memory of one training step on this host.

  Args:
    config: the AlbertConfig.
    micro_batch_size: sequences per replica and micro-batch (RACE: questions x choices).
    seq_length: the sequence length T (max_seq_length).
    local_replicas: replicas on this host (each holds its own copy of the state).
    gradient_accumulation_steps: > 1 keeps an accumulator of the gradients.
    mixed_precision: one of settings.PRECISION_POLICIES: the mixed ones keep 16-bit
      activations (the float32 variables and the float32 MLM logits stay).
    max_predictions_per_seq: P of the masked LM head (pretraining); 0 for fine-tuning.
    span_head: a SQuAD span head.

  Returns:
    A Footprint.
  """
  b, t, h = micro_batch_size, seq_length, config.hidden_size
  act_bytes = 4 if mixed_precision == "float32" else 2
  tokens = b * t
  per_layer = (tokens * (_PER_TOKEN_HIDDEN * h + _PER_TOKEN_INTERMEDIATE *
                         config.intermediate_size)
               + _PER_SCORE * b * config.num_attention_heads * t * t)
  embeddings = tokens * (3 * config.embedding_size + 2 * h)
  head = _PER_SPAN_HIDDEN * tokens * h if span_head else 0
  activations = act_bytes * (config.num_hidden_layers * per_layer + embeddings + head)
  # The masked LM loss casts its logits to float32 (models/losses.py) whatever the policy.
  activations += 4 * _PER_MLM_LOGIT * b * max_predictions_per_seq * config.vocab_size
  copies = _STATE_COPIES + (1 if gradient_accumulation_steps > 1 else 0)
  state = 4 * copies * parameter_count(config)
  return Footprint(runtime=RUNTIME_BYTES, state=local_replicas * state,
                   activations=local_replicas * activations, micro_batch_size=b,
                   seq_length=t)


def job_footprint(job_settings, config, num_replicas, local_replicas):
  """The Footprint of the training step a job's settings ask for, or None when the job does not
  train (evaluation, prediction and export only).

  Args:
    job_settings: a PretrainingSettings or a FineTuningSettings subclass.
    config: the job's AlbertConfig.
    num_replicas: replicas in sync (all hosts): they split train_batch_size.
    local_replicas: those on this host.
  """
  if not getattr(job_settings, "do_train", True):
    return None
  train = job_settings.train
  batch = max(1, train.train_batch_size // (num_replicas * train.gradient_accumulation_steps))
  pretraining = isinstance(job_settings, settings_lib.PretrainingSettings)
  if isinstance(job_settings, settings_lib.RaceSettings):
    batch *= RACE_CHOICES
  return estimate(
      config, batch, job_settings.model.max_seq_length, local_replicas=local_replicas,
      gradient_accumulation_steps=train.gradient_accumulation_steps,
      mixed_precision=job_settings.run.mixed_precision,
      max_predictions_per_seq=job_settings.max_predictions_per_seq if pretraining else 0,
      span_head=isinstance(job_settings, settings_lib.SquadSettings))


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


def check(footprint, devices, what="training"):
  """Refuses a step whose estimated peak exceeds the memory available, else logs the estimate.

  Args:
    footprint: a Footprint, or None (nothing to check).
    devices: the strategy's local device strings (strategy.extended.worker_devices).
    what: the run, for the messages.

  Raises:
    errors.MemoryCheckError: the estimate is above what the process has.
  """
  if footprint is None:
    return
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
    raise errors.MemoryCheckError(
        f"{what} would need about {footprint.describe()}, but {gib(limit)} is available "
        f"({source}): lower --train_batch_size, raise --gradient_accumulation_steps or lower "
        "--max_seq_length (or skip this check with --nomemory_check)")
  logger.info(f"memory check: {what} estimated at {footprint.describe()}, of {gib(limit)} "
              "available")


def local_devices(strategy):
  """The devices of a tf.distribute strategy's replicas on this host. The default strategy
  (one device; training/strategy.py uses it on CPUs alone) runs where TensorFlow places ops:
  the first GPU if there is one, else the CPU."""
  import tensorflow as tf  # pylint: disable=import-outside-toplevel
  if strategy is tf.distribute.get_strategy() and not tf.distribute.has_strategy():
    gpus = tf.config.list_logical_devices("GPU")
    return [gpus[0].name] if gpus else ["/device:CPU:0"]
  return list(strategy.extended.worker_devices)


def check_job(job):
  """check() of a Job's training step (training.job.Job: its settings, config and strategy);
  skipped with --nomemory_check."""
  if not job.settings.run.memory_check:
    return
  devices = local_devices(job.strategy)
  check(job_footprint(job.settings, job.config, job.strategy.num_replicas_in_sync,
                      len(devices)), devices)
