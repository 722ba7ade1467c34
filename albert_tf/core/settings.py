"""Typed settings of the jobs: each binary builds them once from its flags (the original's names,
see albert_tf.training.flags), and the jobs read nothing else. Library code never reads absl FLAGS,
so a job is built in a test, or from Python, from settings alone:

  >>> from albert_tf.core import settings
  >>> train = settings.TrainSettings(learning_rate=1e-3, num_train_steps=10)
  >>> train.num_train_steps, train.save_checkpoints_steps
  (10, 5000)

Each settings dataclass checks its fields as it is made, against the table the binaries check
their flags against (albert_tf.core.bounds), so that a job refuses from Python what its binary
refuses:

  >>> settings.TrainSettings(train_batch_size=0)
  Traceback (most recent call last):
  ...
  albert_tf.core.errors.UsageError: train_batch_size=0: must be at least 1

This module imports no TensorFlow: the binaries define their flags from it and answer --help
without loading TensorFlow.
"""

import dataclasses
from typing import Optional

from absl import flags

from albert_tf.core import bounds, deprecation, errors

STRATEGIES = ("auto", "one_device", "mirrored", "multi_worker_mirrored", "tpu")
PRECISION_POLICIES = ("float32", "mixed_bfloat16", "mixed_float16")
# --serving_precision of the SavedModel exports -> the Keras policy the served model is built
# under. bfloat16 exports hold their weights in bfloat16 (LayerNorm's stay float32: see
# layers.common.layer_norm): under mixed_bfloat16 every read of a float32 weight is a cast, and
# ALBERT reads its shared block once per layer, so a request cast the same matrices 12 times
# (a large share of a short request's time: docs/speed.md). The values are
# the same either way: float32 -> bfloat16 rounds to nearest even, once at export or at each read.
SERVING_POLICIES = {"float32": "float32", "bfloat16": "bfloat16"}


class CheckedSettings:
  """Base of the settings dataclasses: each checks its fields against bounds.FLAG_BOUNDS and its
  classes' FIELD_BOUNDS (a task's own flags: bounds.field_bounds) when made
  (dataclasses.replace included), then its own rules: a subclass adds them by overriding
  check(), calling super().check() first, not __post_init__.

  Raises:
    errors.UsageError: a field out of its bounds (`train_batch_size=0: must be at least 1`), or
      check()'s refusal.
  """

  def __post_init__(self):
    self.check()

  def check(self):
    """Raises errors.UsageError for a field out of its FLAG_BOUNDS row; a subclass adds its own
    rules (calling super().check())."""
    bounds.check_fields(self)


@dataclasses.dataclass(kw_only=True)
class RunSettings(CheckedSettings):
  """Where and how a job runs.

  Args:
    strategy: one of STRATEGIES (auto: tpu with use_tpu, mirrored with several GPUs, else one
      device).
    use_tpu, tpu_name, tpu_zone, gcp_project, master: the TPU address, as the original's flags.
    cpu_devices: > 1 splits the CPU into that many logical devices (mirrored without GPUs).
    mixed_precision: one of PRECISION_POLICIES.
    random_seed: seed of the weight initialisation and dropout (None: unseeded).
    data_seed: seed of the training input order (None: a new order every run).
    memory_check: refuse a run (training, evaluation, prediction or export) whose estimated
      peak memory exceeds what the process has (albert_tf.training.memory), before the model
      is built.
  """
  strategy: str = "auto"
  use_tpu: bool = False
  tpu_name: Optional[str] = None
  tpu_zone: Optional[str] = None
  gcp_project: Optional[str] = None
  master: Optional[str] = None
  cpu_devices: int = 0
  mixed_precision: str = "float32"
  random_seed: Optional[int] = None
  data_seed: Optional[int] = None
  memory_check: bool = True


@dataclasses.dataclass(kw_only=True)
class TrainSettings(CheckedSettings):
  """The optimisation and the training loop.

  Args:
    optimizer: "lamb" or "adamw".
    learning_rate, num_train_steps, num_warmup_steps, start_warmup_step, poly_power: the
      original's schedule (linear warmup, then polynomial decay to 0 at num_train_steps).
    train_batch_size: the global batch (all replicas and micro-batches together).
    gradient_accumulation_steps: micro-batches per replica batch (the same update, less memory).
    iterations_per_loop: updates per compiled call.
    save_checkpoints_steps, keep_checkpoint_max: checkpointing (keep 0: every checkpoint).
    jit_compile: compile the step with XLA.
    jit_compile_fast_path: where XLA is the slower path for the device (mixed_bfloat16 on CPUs
      only), compile without it even with jit_compile (albert_tf.training.fast_path).
    clip_norm: the global-norm gradient clip (1.0, as the original).
    recompute_activations: keep only each transformer layer's input in the forward pass and
      recompute the layer's activations in the backward pass (less memory, the same gradients,
      about a third more compute).
  """
  optimizer: str = "lamb"
  learning_rate: float = 0.00176
  num_train_steps: int = 125000
  num_warmup_steps: int = 3125
  start_warmup_step: int = 0
  poly_power: float = 1.0
  train_batch_size: int = 4096
  gradient_accumulation_steps: int = 1
  iterations_per_loop: int = 1000
  save_checkpoints_steps: int = 5000
  keep_checkpoint_max: int = 5
  jit_compile: bool = False
  jit_compile_fast_path: bool = True
  clip_norm: float = 1.0
  recompute_activations: bool = False

  def check(self):
    """The bounds, but num_train_steps may be 0: the model of a job that does not train (SQuAD's
    prediction builds with 0 steps). A job that trains refuses 0 (JobSettings.check)."""
    bounds.check_fields(self, skip=("num_train_steps",))
    rule = bounds.violation("num_train_steps", self.num_train_steps,
                            bounds.FLAG_BOUNDS["num_train_steps"]._replace(low=0))
    if rule is not None:
      raise errors.UsageError(f"num_train_steps={self.num_train_steps}: {rule}")


@dataclasses.dataclass(kw_only=True)
class ModelSettings(CheckedSettings):
  """The model and where its weights come from.

  Args:
    albert_config_file: the albert_config.json; None takes init_checkpoint's config.json when
      that is a Hugging Face directory.
    init_checkpoint: weights to start from (released layout, ours or Hugging Face's; a prefix
      or a directory).
    init_from_group0: initialise every layer group from group 0 of init_checkpoint.
    max_seq_length: the sequence length of the inputs (at most max_position_embeddings).
    max_seq_length_is_default: max_seq_length is the binary's default, not the user's choice:
      where it exceeds max_position_embeddings, max_position_embeddings is used (and logged)
      instead of refused.
    albert_dropout: the encoder's dropout (the paper's "ALBERT DR"): replaces the config's
      hidden_dropout_prob and attention_probs_dropout_prob; None keeps the config's.
  """
  albert_config_file: Optional[str] = None
  init_checkpoint: Optional[str] = None
  init_from_group0: bool = False
  max_seq_length: int = 512
  max_seq_length_is_default: bool = False
  albert_dropout: Optional[float] = None


@dataclasses.dataclass(kw_only=True)
class TokenizerSettings(CheckedSettings):
  """SentencePiece (spm_model_file) or WordPiece (vocab_file) tokenization."""
  spm_model_file: Optional[str] = None
  vocab_file: Optional[str] = None
  do_lower_case: bool = True


@dataclasses.dataclass(kw_only=True)
class JobSettings(CheckedSettings):
  """What every job has: its output_dir and the settings above."""
  output_dir: str
  model: ModelSettings
  run: RunSettings = dataclasses.field(default_factory=RunSettings)
  train: TrainSettings = dataclasses.field(default_factory=TrainSettings)
  # What a job's model reads and writes per example, for the memory estimates
  # (training.footprints): class attributes, not fields. RACE reads its examples' 4 choices as 4
  # sequences; SQuAD's span head keeps [B, T] logits and their gradients.
  SEQUENCES_PER_EXAMPLE = 1
  SPAN_HEAD = False
  # Whether the training steps come from the data and num_train_epochs (SQuAD's), not from
  # train.num_train_steps.
  STEPS_FROM_EPOCHS = False

  def check(self):
    """The bounds, and a job that trains (do_train) has at least 1 step to make.

    Raises:
      errors.UsageError: as above.
    """
    super().check()
    steps = self.train.num_train_steps
    if getattr(self, "do_train", False) and not self.STEPS_FROM_EPOCHS and steps < 1:
      # Training would return at once and leave an untrained model as the result.
      raise errors.UsageError(f"num_train_steps={steps} with do_train: give at least 1 training "
                              "step, or do_train=False")


@dataclasses.dataclass(kw_only=True)
class PretrainingSettings(JobSettings):
  """run_pretraining: masked LM + sentence order on TFRecords of create_pretraining_data.

  Args:
    input_file: comma-separated files or globs.
    max_predictions_per_seq: masked positions per sequence (as the data was generated).
    do_train, do_eval, eval_batch_size, max_eval_steps: as the original's flags.
    masked_lm_budget: > 0 draws fresh masks every epoch with this masking probability.
    tokenizer: the tokenizer of the records: with masked_lm_budget, its spm_model_file is where
      the ids of [CLS], [SEP], [MASK] come from.
    spm_model_file: deprecated (removed in 0.4.0): tokenizer.spm_model_file, which it sets.
    sentence_order_loss_weight: the sentence loss's weight (SOP, or NSP on data made with
      --random_next_sentence); 0 trains the masked LM alone.
    pack_sequences: pack several of the records' sequences into each row of max_seq_length
      (attention within each sequence only; see albert_tf.data.packing).
    max_sequences_per_row: with pack_sequences, the most sequences one row holds.
  """
  input_file: str
  max_predictions_per_seq: int = 20
  do_train: bool = True
  do_eval: bool = False
  eval_batch_size: int = 64
  max_eval_steps: int = 100
  masked_lm_budget: float = 0.0
  tokenizer: TokenizerSettings = dataclasses.field(default_factory=TokenizerSettings)
  sentence_order_loss_weight: float = 1.0
  pack_sequences: bool = False
  max_sequences_per_row: int = 4


deprecation.fields_moved_into(PretrainingSettings, "tokenizer", ("spm_model_file",))


@dataclasses.dataclass(kw_only=True)
class FineTuningSettings(JobSettings):
  """What the fine-tuning jobs share.

  Args:
    tokenizer: the tokenizer the model was pretrained with.
    do_train, do_eval, do_predict: as the original's flags.
    eval_batch_size, predict_batch_size: global batch sizes.
    dynamic_length: batches cut to their longest real sequence (the same results, faster).
    export_dir: where to write a SavedModel of model.ckpt-best (None: no export).
    serving_precision: the export's compute precision (float32, or bfloat16 with float32
      weights and outputs).
    allow_random_heads: evaluate, predict or export without training even when no checkpoint
      holds the task's head (it is then freshly initialised); refused by default.
  """
  tokenizer: TokenizerSettings = dataclasses.field(default_factory=TokenizerSettings)
  do_train: bool = False
  do_eval: bool = False
  do_predict: bool = False
  eval_batch_size: int = 8
  predict_batch_size: int = 8
  dynamic_length: bool = True
  export_dir: Optional[str] = None
  serving_precision: str = "float32"
  allow_random_heads: bool = False





def from_values(cls, values, **given):
  """A settings dataclass `cls` whose fields are taken from `values` (absl FLAGS or any object
  with attributes of the same names), nested settings included; `given` overrides fields.

  A field with no attribute of its name in `values` keeps its default. For absl FLAGS,
  `max_seq_length_is_default` says whether --max_seq_length was left out of the command line.
  """
  kwargs = {}
  for field in dataclasses.fields(cls):
    if field.name in given:
      kwargs[field.name] = given[field.name]
    elif dataclasses.is_dataclass(field.type):
      kwargs[field.name] = from_values(field.type, values)
    elif field.name == "max_seq_length_is_default" and isinstance(values, flags.FlagValues):
      kwargs[field.name] = "max_seq_length" in values and not values["max_seq_length"].present
    elif hasattr(values, field.name):
      kwargs[field.name] = getattr(values, field.name)
  return cls(**kwargs)
