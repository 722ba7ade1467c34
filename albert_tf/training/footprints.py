"""The memory estimates of the pre-flight (albert_tf.training.memory): the peak resident memory
of a run, per host, by part (a Footprint), from the AlbertConfig and the settings, before
the model is built.

The estimate is the peak resident memory of the process, per host:

  runtime      TensorFlow and the traced step functions (a constant, measured; see below)
  state        per local replica: the weights, their gradients, the clipped gradients, the
               optimizer's slots (one copy each: core.optimizer_table; LAMB and AdamW keep m
               and v) and, with --gradient_accumulation_steps > 1, the accumulated gradients;
               float32 each
  activations  per local replica and micro-batch (train_batch_size / (replicas x accumulation
               steps) sequences, x 4 choices for RACE): what backprop keeps of each of the
               num_hidden_layers layers (ALBERT shares the weights of its layers, not their
               activations): [b, T, H] and [b, T, I] tensors and the [b, heads, T, T] attention
               scores and probabilities; the embeddings; the head: for pretraining the masked LM
               logits [b, P, V] (logits, log-probabilities, one-hot labels and their gradients),
               for SQuAD the span head's [b, T, H] tensors.

The constants below are fitted to measured peak resident memory (the calibration runs and their
figures: docs/speed.md, "Memory estimates").

With --recompute_activations (albert_tf.layers.transformer: the backward pass recomputes each
block's activations from its input) backprop keeps, per local replica and micro-batch, one
[b, T, H] per block (num_hidden_layers x inner_group_num: each block's input, the previous
block's output) instead of every layer's activations; while a block's gradient runs, that block's
recomputed activations (one layer's, as above); the embeddings and the head as above. The
masked LM logits and the state are then most of what is left. tests/training/test_recompute.py
measures a tiny run again (within 2x). A run refused without it is told the largest
--train_batch_size that fits with it (RecomputeFit).

Evaluation and prediction (inference_estimate) run the forward pass alone, which keeps far less:
TensorFlow frees each tensor once its last consumer has run and no gradient needs it, so at its
peak a batch holds about one layer's tensors, whatever num_hidden_layers is:

  runtime      as above
  state        per local replica: the weights and the optimizer's slots, float32 (a job's
               Runner builds the slots whatever the run does, for the checkpoint to restore into)
  activations  per local replica, of one eval_batch_size / predict_batch_size batch split over
               the replicas (x 4 choices for RACE): the layer's input, Q, K, V, the context and
               the attention output (6 [b, T, H]), the FFN's pre-activation and gelu's output
               (2 [b, T, I]), the attention scores and their softmax (2 [b, heads, T, T]); for
               pretraining's evaluation the masked LM head's [b, P, V]: the loss makes the
               logits, their float32 log-probabilities, the one-hot labels and their product
               one after the other, and the measurements fit 2 of them live at once (float32).
               The embeddings' [b, T, E] tensors are gone before the first layer runs; the
               fine-tuning heads' outputs are at most [b, T, H]. With a mixed precision policy
               the encoder's activations are 16-bit, the variables stay float32.

The forward pass's constants are fitted likewise (docs/speed.md, "Memory estimates").

An export (check_model_build; a fine-tuning binary's --export_dir) holds the built model's
weights at its precision (float32, or bfloat16 with --serving_precision=bfloat16) and, assumed,
not measured, two more copies of them: the serving model built at the export's precision (a
fine-tuning job's serving_model; a separate exporter's checkpoint values as they load), and the
values tf.saved_model.save reads from the variables to write them (it saves every variable of the
module in one shard): 3 copies in all, a job's export its float32 weights and slots plus those
2. Tracing the signatures runs no batch, so an export's activations are those of the
batch its caller says it runs (1 by default; none in a job).

tests/training/test_memory_check.py measures the training and evaluation calibrations' first points
again (within 2x) and checks the arithmetic.
"""

import dataclasses
import functools
from typing import Optional

from albert_tf.core import optimizer_table
from albert_tf.core import settings as settings_lib


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
# Float32 copies of the parameters a replica holds beside the optimizer's slots (one copy each:
# core.optimizer_table): the weights, their gradients and the clipped gradients; + 1
# accumulator with accumulation steps.
_STATE_COPIES_BESIDE_SLOTS = 3
# With --recompute_activations (module docstring), what the forward pass keeps of each block
# per token, in units of H: its input (the previous block's output). The backward pass holds
# one block's activations at a time, recomputed: one layer's as above.
_RECOMPUTE_SAVED_PER_TOKEN_HIDDEN = 1

# A forward pass's tensors live at its peak (module docstring): per token, in units of H (the
# layer's input, Q, K, V, the context, the attention output) and of I (the FFN's pre-activation
# and gelu's output); per (head, query, key) the scores and their softmax; per masked LM logit
# two float32 [b, P, V] tensors (the measurements above fit 2, not the 3 the loss makes one
# after the other).
_FORWARD_PER_TOKEN_HIDDEN = 6
_FORWARD_PER_TOKEN_INTERMEDIATE = 2
_FORWARD_PER_SCORE = 2
_FORWARD_PER_MLM_LOGIT = 2
# Float32 copies of the parameters a job holds when it does not train: the weights, and the
# optimizer's slots, which its Runner builds in every run (training/runner.py).
_JOB_WEIGHT_COPIES = 1
# What an export adds to the weights it exports, at their precision (assumed, module
# docstring): the serving model built at the export's precision and the values the SavedModel
# writer reads from the variables.
_EXPORT_EXTRA_COPIES = 2
# Bytes per weight of an export at each --serving_precision (settings.SERVING_POLICIES).
_SERVING_WEIGHT_BYTES = {"float32": 4, "bfloat16": 2}

# The fix of each run when the batch is what does not fit (the model itself not fitting is
# another fix: see memory.check).
_TRAINING_FIX = ("lower --train_batch_size, raise --gradient_accumulation_steps or lower "
                 "--max_seq_length")

_GIB = 2**30


@dataclasses.dataclass(frozen=True)
class RecomputeFit:
  """How the batch sizes a training step with --recompute_activations, for the refusal of a run
  without it: bytes = fixed + per_sequence x sequences per replica and micro-batch, which are
  train_batch_size / batch_multiple x sequences_per_example.

  Args:
    fixed: bytes whatever the batch (TensorFlow, the state).
    per_sequence: activation bytes of a sequence of each micro-batch, all local replicas.
    batch_multiple: replicas x gradient accumulation steps, which divide train_batch_size.
    sequences_per_example: sequences of an example (RACE: 4 choices).
  """
  fixed: int
  per_sequence: int
  batch_multiple: int = 1
  sequences_per_example: int = 1

  def largest_batch(self, limit):
    """The largest train_batch_size whose step fits in `limit` bytes; 0 where none does."""
    sequences = max(0, limit - self.fixed) // max(1, self.per_sequence)
    return sequences // self.sequences_per_example * self.batch_multiple


@dataclasses.dataclass(frozen=True)
class Footprint:
  """An estimated peak memory, in bytes, by part (see the module docstring).

  Args:
    runtime: TensorFlow and the traced step.
    state: weights (and gradients and optimizer slots, or an export's copies), all local
      replicas.
    activations: what the step keeps of a batch at its peak, all local replicas.
    micro_batch_size: sequences per replica and micro-batch (choices counted); 0: none run.
    seq_length: the sequence length T.
    what: the run, for the messages ("training", "evaluation", ...).
    state_holds: what `state` is made of, for the messages.
    fix: the flags that lower the activations, for the refusal; None where no flag does (an
      export binary).
    recomputed: a training step with --recompute_activations.
    recompute_fit: for a training step without it, what it would need with it (a RecomputeFit:
      the refusal names the largest batch that would fit); None otherwise.
  """
  runtime: int
  state: int
  activations: int
  micro_batch_size: int
  seq_length: int
  what: str = "training"
  state_holds: str = "weights, gradients and optimizer slots"
  fix: Optional[str] = _TRAINING_FIX
  recomputed: bool = False
  recompute_fit: Optional[RecomputeFit] = dataclasses.field(default=None, compare=False)

  @property
  def total(self):
    return self.runtime + self.state + self.activations

  def describe(self):
    recomputed = " with --recompute_activations" if self.recomputed else ""
    batch = (f"activations of {self.micro_batch_size} sequences x {self.seq_length} tokens"
             f"{recomputed} {gib(self.activations)}, " if self.micro_batch_size else "")
    return (f"{gib(self.total)} ({self.state_holds} {gib(self.state)}, {batch}"
            f"TensorFlow {gib(self.runtime)})")


def gib(n):
  """n bytes as '1.23 GiB'."""
  return f"{n / _GIB:.2f} GiB"


def _slot_copies(optimizer):
  """Float32 copies of the weights an optimizer's slots are (core.optimizer_table)."""
  return len(optimizer_table.entry(optimizer).slots)


def _job_copies(optimizer):
  """Float32 copies of the weights a job holds when it does not train: the weights and the
  slots of the optimizer its Runner builds."""
  return _JOB_WEIGHT_COPIES + _slot_copies(optimizer)


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


def _activation_bytes(precision):
  """Bytes of an activation under a precision policy (or a serving precision): the mixed and
  bfloat16 ones compute in 16 bits."""
  return 4 if precision == "float32" else 2


def estimate(config, micro_batch_size, seq_length, *, local_replicas=1,
             gradient_accumulation_steps=1, mixed_precision="float32",
             max_predictions_per_seq=0, span_head=False, recompute_activations=False,
             optimizer="lamb"):
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
    recompute_activations: the step keeps each block's input alone and recomputes one block's
      activations at a time in the backward pass (module docstring).
    optimizer: a name of core.optimizer_table: its slots are copies of the weights.

  Returns:
    A Footprint.
  """
  b, t, h = micro_batch_size, seq_length, config.hidden_size
  act_bytes = _activation_bytes(mixed_precision)
  tokens = b * t
  per_layer = (tokens * (_PER_TOKEN_HIDDEN * h + _PER_TOKEN_INTERMEDIATE *
                         config.intermediate_size)
               + _PER_SCORE * b * config.num_attention_heads * t * t)
  embeddings = tokens * (3 * config.embedding_size + 2 * h)
  head = _PER_SPAN_HIDDEN * tokens * h if span_head else 0
  if recompute_activations:
    blocks = config.num_hidden_layers * config.inner_group_num
    encoder = blocks * _RECOMPUTE_SAVED_PER_TOKEN_HIDDEN * tokens * h + per_layer
  else:
    encoder = config.num_hidden_layers * per_layer
  activations = act_bytes * (encoder + embeddings + head)
  # The masked LM loss casts its logits to float32 (models/losses.py) whatever the policy.
  activations += 4 * _PER_MLM_LOGIT * b * max_predictions_per_seq * config.vocab_size
  copies = (_STATE_COPIES_BESIDE_SLOTS + _slot_copies(optimizer) +
            (1 if gradient_accumulation_steps > 1 else 0))
  state = 4 * copies * parameter_count(config)
  return Footprint(runtime=RUNTIME_BYTES, state=local_replicas * state,
                   activations=local_replicas * activations, micro_batch_size=b,
                   seq_length=t, recomputed=recompute_activations)


def forward_activations(config, batch_size, seq_length, *, mixed_precision="float32",
                        max_predictions_per_seq=0):
  """The bytes a forward pass (no gradient) holds at its peak: about one layer's tensors, and the
  masked LM logits (module docstring).

  Args:
    config: the AlbertConfig.
    batch_size: sequences of the batch on one replica (RACE: questions x choices).
    seq_length: the sequence length T.
    mixed_precision: one of settings.PRECISION_POLICIES, or a serving precision ("bfloat16"):
      16-bit activations but for the float32 masked LM loss.
    max_predictions_per_seq: P of the masked LM head (pretraining's evaluation); 0 otherwise.
  """
  b, t = batch_size, seq_length
  layer = (b * t * (_FORWARD_PER_TOKEN_HIDDEN * config.hidden_size +
                    _FORWARD_PER_TOKEN_INTERMEDIATE * config.intermediate_size)
           + _FORWARD_PER_SCORE * b * config.num_attention_heads * t * t)
  # The masked LM loss casts its logits to float32 (models/losses.py) whatever the policy.
  mlm = 4 * _FORWARD_PER_MLM_LOGIT * b * max_predictions_per_seq * config.vocab_size
  return _activation_bytes(mixed_precision) * layer + mlm


def inference_estimate(config, batch_size, seq_length, *, local_replicas=1,
                       mixed_precision="float32", max_predictions_per_seq=0,
                       what="evaluation", fix=None, optimizer="lamb"):
  """The peak memory of a job's evaluation or prediction on this host: its weights and optimizer
  slots (a job builds them in every run) and one batch's forward pass.

  Args:
    config: the AlbertConfig.
    batch_size: sequences per replica (RACE: questions x choices).
    seq_length: the sequence length T.
    local_replicas: replicas on this host (each holds its own copy of the weights).
    mixed_precision: one of settings.PRECISION_POLICIES (the variables stay float32).
    max_predictions_per_seq: P of the masked LM head (pretraining); 0 for fine-tuning.
    what: the run, for the messages.
    fix: the flags that lower its batch, for the refusal.
    optimizer: a name of core.optimizer_table: the Runner builds its slots.

  Returns:
    A Footprint.
  """
  state = 4 * _job_copies(optimizer) * parameter_count(config)
  activations = forward_activations(config, batch_size, seq_length,
                                    mixed_precision=mixed_precision,
                                    max_predictions_per_seq=max_predictions_per_seq)
  return Footprint(runtime=RUNTIME_BYTES, state=local_replicas * state,
                   activations=local_replicas * activations, micro_batch_size=batch_size,
                   seq_length=seq_length, what=what, state_holds="weights and optimizer slots",
                   fix=fix)


def export_estimate(config, seq_length, *, precision="float32", batch_size=1, model_bytes=None,
                    what="the export"):
  """The peak memory of exporting a model: the model's weights, the copies the export makes of
  them (module docstring: assumed 2, at the export's precision) and the forward pass of the
  batch the exporter runs, if any.

  Args:
    config: the AlbertConfig.
    seq_length: the sequence length of the batch it runs.
    precision: a serving precision (settings.SERVING_POLICIES: float32 or bfloat16).
    batch_size: sequences the exporter runs through the model (0: none; tracing runs none).
    model_bytes: what the process already holds of the model (a job: its weights and optimizer
      slots); None: the exported weights alone.
    what: the run, for the messages.

  Returns:
    A Footprint, with no batch flag to lower (fix None).
  """
  exported = _SERVING_WEIGHT_BYTES[precision] * parameter_count(config)
  held = exported if model_bytes is None else model_bytes
  return Footprint(runtime=RUNTIME_BYTES, state=held + _EXPORT_EXTRA_COPIES * exported,
                   activations=forward_activations(config, batch_size, seq_length,
                                                   mixed_precision=precision),
                   micro_batch_size=batch_size, seq_length=seq_length, what=what,
                   state_holds="weights and the export's copies of them", fix=None)


def predictions_per_row(pretraining_settings):
  """The masked-LM predictions of one row: P, or K * P slots of rows packing K sequences."""
  s = pretraining_settings
  return s.max_predictions_per_seq * (s.max_sequences_per_row if s.pack_sequences else 1)


def _training_footprint(job_settings, config, num_replicas, local_replicas):
  """The Footprint of a job's training step (see estimate); without --recompute_activations, with
  what the step would need with it (recompute_fit)."""
  train = job_settings.train
  multiple = num_replicas * train.gradient_accumulation_steps
  choices = job_settings.SEQUENCES_PER_EXAMPLE
  pretraining = isinstance(job_settings, settings_lib.PretrainingSettings)
  step = functools.partial(
      estimate, config, seq_length=job_settings.model.max_seq_length,
      local_replicas=local_replicas, gradient_accumulation_steps=train.gradient_accumulation_steps,
      mixed_precision=job_settings.run.mixed_precision,
      max_predictions_per_seq=predictions_per_row(job_settings) if pretraining else 0,
      span_head=job_settings.SPAN_HEAD, optimizer=train.optimizer)
  footprint = step(max(1, train.train_batch_size // multiple) * choices,
                   recompute_activations=train.recompute_activations)
  if train.recompute_activations:
    return footprint
  # The activations are proportional to the batch: one sequence's give any batch's.
  one = step(1, recompute_activations=True)
  return dataclasses.replace(footprint, recompute_fit=RecomputeFit(
      fixed=one.runtime + one.state, per_sequence=one.activations, batch_multiple=multiple,
      sequences_per_example=choices))


# The forward-only runs of a job: (its settings' switch, its batch size field, its name).
_INFERENCE_RUNS = (("do_eval", "eval_batch_size", "evaluation"),
                   ("do_predict", "predict_batch_size", "prediction"))


def _without_training(footprints):
  """What --nodo_train would leave of a run that trains and also evaluates, predicts or exports,
  for the training refusal's fix ("" where it would run nothing)."""
  if not footprints:
    return ""
  parts = " and ".join(f.what for f in footprints)
  return f"; or --nodo_train, to run {parts} without training"


def job_footprints(job_settings, config, num_replicas, local_replicas, trains=None):
  """The Footprint of each part of the run a job's settings ask for, in the order it runs them:
  training, evaluation, prediction, export.

  Args:
    job_settings: a PretrainingSettings or a FineTuningSettings subclass.
    config: the job's AlbertConfig.
    num_replicas: replicas in sync (all hosts): they split each global batch.
    local_replicas: those on this host.
    trains: whether the run takes training steps; None: its do_train. A --do_train run whose
      output_dir already holds the last step of its schedule resumes there and trains no step
      (memory.check_job): it runs its evaluation, prediction and export alone.
  """
  s = job_settings
  footprints = []
  choices = s.SEQUENCES_PER_EXAMPLE
  predictions = (predictions_per_row(s)
                 if isinstance(s, settings_lib.PretrainingSettings) else 0)
  for switch, batch_flag, what in _INFERENCE_RUNS:
    if getattr(s, switch, False):
      batch = max(1, getattr(s, batch_flag) // num_replicas) * choices
      footprints.append(inference_estimate(
          config, batch, s.model.max_seq_length, local_replicas=local_replicas,
          mixed_precision=s.run.mixed_precision, max_predictions_per_seq=predictions,
          what=what, fix=f"lower --{batch_flag} or --max_seq_length",
          optimizer=s.train.optimizer))
  if getattr(s, "export_dir", None):
    held = local_replicas * 4 * _job_copies(s.train.optimizer) * parameter_count(config)
    footprints.append(export_estimate(config, s.model.max_seq_length,
                                      precision=s.serving_precision, batch_size=0,
                                      model_bytes=held))
  if getattr(s, "do_train", True) if trains is None else trains:
    training = _training_footprint(s, config, num_replicas, local_replicas)
    # run_race and run_pretraining train unless told --nodo_train (the original's defaults):
    # a refusal of `--do_eval` alone names the flag that evaluates without training.
    footprints.insert(0, dataclasses.replace(
        training, fix=training.fix + _without_training(footprints)))
  return footprints


def job_footprint(job_settings, config, num_replicas, local_replicas, trains=None):
  """The largest of job_footprints (what the run needs at its peak), None where it runs
  nothing."""
  return max(job_footprints(job_settings, config, num_replicas, local_replicas, trains),
             key=lambda f: f.total, default=None)
