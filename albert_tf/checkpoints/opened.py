"""A checkpoint opened once: its format detected once, and every question a run asks of it
answered from that one object (its config, the tokenizer it keeps, the task its head was trained
for, its global step, loading it into a model), with its checks in one place.

  >>> from albert_tf.checkpoints import open_checkpoint
  >>> opened = open_checkpoint("tests/testdata/original_model")  # doctest: +SKIP
  >>> opened.kind, opened.global_step  # doctest: +SKIP
  ('original', 0)

The formats: the released TF1 layout (checkpoints.original), ours (checkpoints.ours), Hugging
Face's (checkpoints.hf: a `*.safetensors` file or a directory holding model.safetensors) and
keras-hub presets (checkpoints.keras_hub). What a fine-tuning run keeps beside its checkpoints
(its config, tokenizer and task: checkpoints.companions) makes its output_dir a checkpoint too.
"""

import dataclasses
import json
import logging
import os
from typing import Optional

import tensorflow as tf

from albert_tf.core import errors, io
from albert_tf.core.config import ARCHITECTURE_FIELDS, AlbertConfig
from albert_tf.checkpoints import companions, hf, keras_hub, layout, original, ours

logger = logging.getLogger("albert_tf")

ORIGINAL, OURS, HF, KERAS_HUB = "original", "ours", "hugging_face", "keras_hub"
# The reader raises IndexError for a truncated data file, OpError for the rest.
_READ_ERRORS = (tf.errors.OpError, IndexError)


def open_checkpoint(path) -> Optional["OpenedCheckpoint"]:
  """The checkpoint at `path` opened (see OpenedCheckpoint), or None for no path.

  Args:
    path: a checkpoint prefix or a directory (its model.ckpt-best, else its latest checkpoint),
      an HF directory or `*.safetensors` file, or a keras-hub preset directory; any TF file
      system. An OpenedCheckpoint is returned as it is: the path-taking functions
      (checkpoints.load_checkpoint, model_config, spm_model_file, ...) take one too.

  A TF checkpoint's files are found and read when first asked for (its weights, step, layout),
  then kept: a run's config and tokenizer are checked before anything is read (a missing config
  is named first), and the files are read once.

  Raises:
    errors.CheckpointError: a keras-hub preset missing a file or with a corrupt config.json.
  """
  if isinstance(path, OpenedCheckpoint):
    return path
  if path is None or not str(path):
    return None
  path = os.fspath(path)
  if hf.is_hf_checkpoint(path):
    return OpenedCheckpoint(path, HF)
  problem = keras_hub.preset_problem(path)
  if problem:
    raise errors.CheckpointError(problem)
  if keras_hub.is_keras_hub_preset(path):
    return OpenedCheckpoint(path, KERAS_HUB)
  return OpenedCheckpoint(path, None)


class _EncoderOnly:
  """A model seen by the checkpoint loaders as its encoder alone: the weights of a task head
  that a run starts anew are not loaded (nor checked against the checkpoint's)."""

  def __init__(self, model):
    self._model = model

  def __getattr__(self, name):
    return getattr(self._model, name)

  def original_variables(self):
    return {name: variable for name, variable in layout.original_variable_map(self._model).items()
            if layout.is_encoder_name(name)}

  def checkpoint_parts(self):
    return {"encoder": layout.model_parts(self._model)["encoder"]}


class UnreadableCheckpointError(errors.CheckpointError):
  """A checkpoint whose index or data files cannot be read (truncated, corrupt)."""


def open_reader(prefix):
  """A TF checkpoint's reader (UnreadableCheckpointError naming its files where they cannot be
  read)."""
  try:
    return original.checkpoint_reader(prefix)
  except _READ_ERRORS as e:
    raise unreadable(prefix, e) from None


def unreadable(prefix, error):
  """The UnreadableCheckpointError of checkpoint `prefix` (`error`: the reader's)."""
  reason = str(getattr(error, "message", error) or type(error).__name__).strip().splitlines()
  return UnreadableCheckpointError(
      f"cannot read checkpoint {prefix} ({reason[0] if reason else 'unreadable'}): its "
      f"{os.path.basename(prefix)}.index or .data-* file is truncated or corrupt (a save that "
      "did not finish, or a partial copy). Copy it again, or point at another checkpoint")


class OpenedCheckpoint:
  """One checkpoint, its format detected once.

  Attributes:
    path: the path as given (a directory, a prefix, a file).
    directory: where the files kept beside it are (its config, tokenizer and task).
  """

  def __init__(self, path, foreign_kind):
    """foreign_kind: HF or KERAS_HUB, or None for a TF checkpoint (ORIGINAL or OURS, told by
    its files when first asked)."""
    self.path, self._kind = path, foreign_kind
    self._location = self._reader_of = None
    self.directory = companions.checkpoint_directory(path)
    self._head_choice = None

  def __repr__(self):
    return f"OpenedCheckpoint({self.path!r})"

  # It stands for its path wherever one is taken (os.fspath, messages): code handed an opened
  # checkpoint passes it on, and what it calls asks this object instead of opening it again.
  def __fspath__(self):
    return self.path

  def __str__(self):
    return self.path

  @property
  def is_tf_checkpoint(self):
    return self._kind not in (HF, KERAS_HUB)

  @property
  def location(self):
    """The resolved prefix of a TF checkpoint (an output_dir's model.ckpt-best, else its
    latest), else `path`.

    Raises:
      FileNotFoundError: no checkpoint there.
    """
    if not self.is_tf_checkpoint:
      return self.path
    if self._location is None:
      self._location = original.resolve_checkpoint_path(self.path)
    return self._location

  @property
  def _reader(self):
    """The TF checkpoint's reader, opened once (UnreadableCheckpointError naming its files)."""
    if self._reader_of is None:
      self._reader_of = open_reader(self.location)
    return self._reader_of

  @property
  def kind(self):
    """ORIGINAL, OURS, HF or KERAS_HUB."""
    if self._kind is None:
      names = self._reader.get_variable_to_shape_map()
      self._kind = ORIGINAL if ours.is_original_layout_names(names) else OURS
    return self._kind

  def _kept(self, name):
    """`<directory>/<name>` when a fine-tuning run kept that file there, else None."""
    path = os.path.join(self.directory, name) if self.directory else name
    return path if io.exists(path) else None

  # -- what it holds ----------------------------------------------------------------------------
  @property
  def global_step(self) -> int:
    """The global step it was saved at (0 for one that holds none: HF, keras-hub)."""
    if not self.is_tf_checkpoint:
      return 0
    for name in ("global_step", "global_step/.ATTRIBUTES/VARIABLE_VALUE"):
      if self._reader.has_tensor(name):
        try:
          return int(self._reader.get_tensor(name))
        except _READ_ERRORS as e:
          raise unreadable(self.location, e) from None
    return 0

  @property
  def variable_shapes(self) -> dict:
    """{name: shape} of a TF checkpoint's tensors (original names, or ours' object paths);
    {} for HF and keras-hub, whose names are their own."""
    return dict(self._reader.get_variable_to_shape_map()) if self.is_tf_checkpoint else {}

  def with_head_choice(self, choose) -> "OpenedCheckpoint":
    """The same checkpoint, whose load_into asks `choose` whether to load its task head.

    Args:
      choose: choose(model, mismatch) -> None to load the head, or the log line of a run that
        starts a new head (the encoder alone is loaded, the head stays as initialised); it may
        raise to refuse. Asked first with mismatch None, then, where the head still loads and
        one of its variables has another shape than the model's, with that
        original.ShapeMismatchError (None then re-raises it).
    """
    chosen = OpenedCheckpoint(self.path, self._kind)
    chosen._location, chosen._reader_of = self._location, self._reader_of
    chosen._head_choice = choose
    return chosen

  def load_into(self, model, init_from_group0=False) -> original.LoadReport:
    """Loads its model weights into `model` (no optimizer state); a task head it lacks stays as
    initialised and is listed in the report's `missing`, as does a head that a head choice
    (with_head_choice) starts anew.

    Args:
      model: any albert_tf model (AlbertModel, AlbertPretrainer, AlbertClassifier, ...).
      init_from_group0: initialise layer groups it lacks from its group 0.

    Raises:
      ValueError: a variable of another shape (names it and both shapes).
      KeyError: encoder variables it lacks (the config does not match it).
      UnreadableCheckpointError: a data file that cannot be read (naming it).
    """
    if self._head_choice is None:
      return self._load_into(model, init_from_group0)
    new_head = self._head_choice(model, None)
    if new_head is None:
      try:
        return self._load_into(model, init_from_group0)
      except original.ShapeMismatchError as mismatch:
        if layout.is_encoder_name(mismatch.name):
          raise
        new_head = self._head_choice(model, mismatch)
        if new_head is None:
          raise
    logger.info(new_head)
    report = self._load_into(_EncoderOnly(model), init_from_group0)
    head = [n for n in layout.original_variable_map(model) if not layout.is_encoder_name(n)]
    return dataclasses.replace(report, missing=sorted(report.missing + head))

  def _load_into(self, model, init_from_group0):
    if self.kind == HF:
      return hf.load_hf_checkpoint(model, self.path, init_from_group0=init_from_group0)
    if self.kind == KERAS_HUB:
      return keras_hub.load_keras_hub_preset(model, self.path, init_from_group0=init_from_group0)
    try:
      if self.kind == ORIGINAL:
        return original.load_original_checkpoint(model, self.location,
                                                 init_from_group0=init_from_group0,
                                                 reader=self._reader)
      return ours.load_ours_checkpoint(model, self.location, init_from_group0,
                                       reader=self._reader)
    except _READ_ERRORS as e:
      raise unreadable(self.location, e) from None

  # -- its config -------------------------------------------------------------------------------
  def config(self, albert_config_file=None):
    """The model config of a run starting from it: `albert_config_file` when given (checked
    against the config it keeps: a keras-hub preset's, an HF directory's config.json, the
    albert_config.json beside a run's checkpoint), else the one it keeps.

    Returns:
      (AlbertConfig, the file it was read from).

    Raises:
      errors.ConfigError: `albert_config_file` describes another architecture (names the field
        and both values).
      errors.UsageError: no config given and none kept.
    """
    if self._kind != KERAS_HUB:
      return hf.model_config(albert_config_file, self.path)
    config = keras_hub.albert_config(self.path)
    preset_file = os.path.join(self.path, keras_hub.CONFIG_NAME)
    if not albert_config_file:
      return config, preset_file
    given = AlbertConfig.from_json_file(albert_config_file)
    # Dropout is left out: keras-hub has one for both, and fine-tuning may choose its own.
    for field in ARCHITECTURE_FIELDS:
      if getattr(given, field) != getattr(config, field):
        raise errors.ConfigError(
            f"--albert_config_file={albert_config_file} contradicts the keras-hub preset "
            f"--init_checkpoint={self.path}: {field} is {getattr(given, field)!r} there and "
            f"{getattr(config, field)!r} in {preset_file}. Drop --albert_config_file (the "
            "preset has its config) or fix it")
    return given, albert_config_file

  # -- its tokenizer ----------------------------------------------------------------------------
  @property
  def kept_tokenizer(self):
    """(SentencePiece model, WordPiece vocabulary) it keeps, either or both None: a keras-hub
    preset's vocabulary.spm, an HF directory's spiece.model, or what a fine-tuning run kept
    beside its checkpoints (companions.keep_tokenizer)."""
    if self._kind == KERAS_HUB:
      return keras_hub.preset_spm_model(self.path), None
    if self._kind == HF:
      return hf.companion_file(self.path, hf.SPM_NAME), None
    return self._kept(companions.SPM_NAME), self._kept(companions.VOCAB_NAME)

  def tokenizer(self, spm_model_file=None, vocab_file=None):
    """The tokenizer files of a run starting from it: those given, checked against the one it
    keeps (a model reads ids of the tokenizer it was trained with: another one's ids mean other
    pieces), else the one it keeps.

    Args:
      spm_model_file: --spm_model_file, or None.
      vocab_file: --vocab_file, or None.

    Returns:
      (spm_model_file, vocab_file), either or both None (nothing given, nothing kept).

    Raises:
      errors.UsageError: a tokenizer other than the one it keeps, naming both files.
    """
    kept_spm, kept_vocab = self.kept_tokenizer
    kept = kept_spm or kept_vocab
    given_flag, given = (("--spm_model_file", spm_model_file) if spm_model_file
                         else ("--vocab_file", vocab_file))
    if not given:
      return kept_spm, None if kept_spm else kept_vocab
    if kept is None:
      return spm_model_file, vocab_file
    kept_kind = "SentencePiece model" if kept_spm else "WordPiece vocabulary"
    same_kind = bool(spm_model_file) == bool(kept_spm)
    if same_kind and io.sha256(given) == io.sha256(kept):
      return spm_model_file, vocab_file
    differs = ("another file" if same_kind else
               f"a {'SentencePiece model' if spm_model_file else 'WordPiece vocabulary'}")
    raise errors.UsageError(
        f"{given_flag}={given} is {differs}, not the {kept_kind} {kept} that --init_checkpoint="
        f"{self.path} was trained with: its embeddings read that tokenizer's ids. Drop "
        f"{given_flag} to use {kept}, or point --init_checkpoint at a model trained with "
        f"{given}")

  # -- its head ---------------------------------------------------------------------------------
  @property
  def task(self) -> Optional[dict]:
    """What its task head was trained for, or None when nothing says: {"model": the albert_tf
    model class, "task": the task name} kept by a fine-tuning run (companions.keep_task), or
    {"architecture": the transformers class} of an HF directory or keras-hub task preset."""
    if self.is_tf_checkpoint:
      return companions.kept_task(self.path)
    if self._kind == KERAS_HUB:
      architecture = keras_hub.hf_architecture(self.path)
    else:
      architecture = _hf_architecture(self.path)
    return {"architecture": architecture} if architecture else None


def _hf_architecture(path):
  """The first transformers class an HF directory's config.json names, or None."""
  config_file = hf.companion_file(path, hf.CONFIG_NAME)
  if config_file is None:
    return None
  try:
    values = json.loads(io.read_text(config_file))
  except ValueError:
    return None  # a corrupt config.json is refused where the config is read
  names = values.get("architectures") if isinstance(values, dict) else None
  return names[0] if names else None
