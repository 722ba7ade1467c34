"""What a run keeps beside its checkpoints, which makes its output_dir (or a checkpoint prefix in
it, `.../model.ckpt-best`) a checkpoint to point --init_checkpoint at without naming its config
or tokenizer again: albert_config.json (every training run writes it: training.job's
keep_config; the released models' directories hold it too), classifier_labels.json
(run_classifier; read by albert_tf.checkpoints.labels), the tokenizer, copied in by
keep_tokenizer under a fixed name, and the task its head was trained for (keep_task).
"""

import json
import os

from albert_tf.core import errors
from albert_tf.core import io

# The name every run keeps its config under (training.job.CONFIG_FILE), as the released models.
CONFIG_NAME = "albert_config.json"
# The kept tokenizer's names: the SentencePiece model under Hugging Face's name for it (the
# same file), a WordPiece vocabulary under BERT's.
SPM_NAME = "spiece.model"
VOCAB_NAME = "vocab.txt"
# What a fine-tuning run's head was trained for: {"model": class name, "task": task name}.
TASK_NAME = "fine_tuned_task.json"


def checkpoint_directory(init_checkpoint):
  """The directory a checkpoint is in: `init_checkpoint` itself when it is a directory (an
  output_dir), else the one holding the prefix; None for no checkpoint."""
  if not init_checkpoint:
    return None
  path = os.fspath(init_checkpoint)
  # The prefix test first, as original.resolve_checkpoint_path: some file systems (ram://) call
  # any leading part of a file name a directory.
  if not io.exists(path + ".index") and io.isdir(path):
    return path
  return io.dirname(path)


def beside(init_checkpoint, name):
  """`<the checkpoint's directory>/<name>` when that file exists, else None."""
  directory = checkpoint_directory(init_checkpoint)
  if directory is None:
    return None
  path = os.path.join(directory, name) if directory else name
  return path if io.exists(path) else None


def check_config_beside(config, config_file, init_checkpoint):
  """Refuses --albert_config_file (`config`, read from `config_file`) when the albert_config.json
  beside --init_checkpoint describes another architecture (sizes, activation, vocabulary,
  positions). The layers' layout is left to the loader, which checks it (and --init_from_group0
  grows it); the dropouts to fine-tuning.

  Raises:
    errors.ConfigError: naming both files and each field with both values.
  """
  from albert_tf.core.config import ARCHITECTURE_FIELDS, LAYER_LAYOUT_FIELDS, AlbertConfig
  kept = beside(init_checkpoint, CONFIG_NAME)
  if kept is None:
    return
  fields = [f for f in ARCHITECTURE_FIELDS if f not in LAYER_LAYOUT_FIELDS]
  differences = config.differences(AlbertConfig.from_json_file(kept), fields)
  if differences:
    raise errors.ConfigError(
        f"--albert_config_file={config_file} and {kept} (the config beside --init_checkpoint="
        f"{init_checkpoint}) disagree on the architecture: {'; '.join(differences)}. The "
        f"checkpoint was trained with {kept}: drop --albert_config_file to use it, or fix "
        f"{config_file}")


def keep_tokenizer(output_dir, tokenizer):
  """Copies a fine-tuning run's tokenizer into output_dir (SPM_NAME for its SentencePiece model,
  else VOCAB_NAME for its WordPiece vocabulary), atomically, unless the same file is there:
  output_dir then carries its tokenizer as it carries its config.

  Args:
    output_dir: the run's output_dir.
    tokenizer: a settings.TokenizerSettings (spm_model_file, or vocab_file).

  Returns:
    The kept file, or None for a run without a tokenizer file.

  Raises:
    errors.ResumeMismatchError: output_dir keeps another tokenizer under that name (it was
      fine-tuned with it), naming both files; nothing is written then.
  """
  if tokenizer.spm_model_file:
    source, name, flag = tokenizer.spm_model_file, SPM_NAME, "--spm_model_file"
  elif tokenizer.vocab_file:
    source, name, flag = tokenizer.vocab_file, VOCAB_NAME, "--vocab_file"
  else:
    return None
  target = os.path.join(os.fspath(output_dir), name)
  if io.exists(target):
    if io.sha256(target) == io.sha256(source):
      return target
    raise errors.ResumeMismatchError(
        f"{flag}={source} is not the tokenizer {output_dir} was fine-tuned with (kept there as "
        f"{target}): give {flag}={target}, or use a new --output_dir")
  with io.open_binary(source) as f:
    data = f.read()
  with io.AtomicFile(target) as f:
    f.write(data)
  return target


def keep_task(output_dir, task):
  """Writes what a fine-tuning run's head is trained for (`task`: {"model": the model class,
  "task": the task name or None}) into output_dir as TASK_NAME, atomically, unless it is there
  already: a run evaluating, predicting or exporting from output_dir later is checked against
  it (a head of another task has the same shapes and would answer without a word)."""
  path = os.path.join(os.fspath(output_dir), TASK_NAME)
  if io.exists(path) and kept_task(output_dir) == task:
    return path
  io.write_text_atomically(path, json.dumps(task, indent=1, sort_keys=True) + "\n")
  return path


def kept_task(init_checkpoint):
  """The task keep_task wrote beside `init_checkpoint` (a prefix or an output_dir), or None
  (nothing kept: a pretraining run, or one from before it was kept).

  Raises:
    errors.CheckpointError: a file that is not keep_task's JSON, naming it.
  """
  path = beside(init_checkpoint, TASK_NAME)
  if path is None:
    return None
  try:
    values = json.loads(io.read_text(path))
  except ValueError:
    values = None
  if not isinstance(values, dict) or "model" not in values:
    raise errors.CheckpointError(
        f"{path} is not a task record of a fine-tuning run (JSON with \"model\" and \"task\"): "
        "it was edited or truncated. Remove it, or copy the run's output_dir again")
  return {"model": values["model"], "task": values.get("task")}


def describe_task(task):
  """A task record (keep_task's, or {"architecture": ...}) as words for a message."""
  if not task:
    return "an unknown task"
  if "architecture" in task:
    return f"a {task['architecture']} head"
  return f"{task['model']}" + (f" of task {task['task']}" if task.get("task") else "")
