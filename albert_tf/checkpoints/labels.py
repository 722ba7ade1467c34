"""Label names saved beside a checkpoint: run_ner's label_list.txt (one name a line, in id order)
in its output_dir, or a Hugging Face tagger's id2label; run_classifier's own-data runs'
classifier_labels.json (names and problem type), or an HF sequence classifier's id2label and
problem_type. A tagger's head has a classifier's shape ([labels, H]); its file is what tells the
two apart. And the check that a run's --label_list agrees with its checkpoint's. No TensorFlow."""

import json
import os
import re
from typing import Optional

from albert_tf.core import errors, io

LABEL_FILE = "label_list.txt"
HF_CONFIG = "config.json"
TAGGER_ARCHITECTURE = "AlbertForTokenClassification"
SEQUENCE_ARCHITECTURE = "AlbertForSequenceClassification"
CLASSIFIER_LABEL_FILE = "classifier_labels.json"
# transformers' config.json problem_type values (AlbertForSequenceClassification's loss).
SINGLE_LABEL = "single_label_classification"
MULTI_LABEL = "multi_label_classification"
REGRESSION = "regression"
# transformers' placeholder names (LABEL_0, ...): no tag names at all.
_GENERIC = re.compile(r"LABEL_\d+")


def read_label_file(directory: str) -> Optional[list]:
  """The label names saved in a run's output_dir (label_list.txt, one a line), or None."""
  if not directory or not io.exists(os.path.join(directory, LABEL_FILE)):
    return None
  path = os.path.join(directory, LABEL_FILE)
  return [line for line in io.read_text(path).splitlines() if line]


def write_label_file(directory: str, labels):
  """Saves the label names (one a line, id order) as label_list.txt in directory."""
  io.write_text_atomically(os.path.join(directory, LABEL_FILE), "".join(f"{l}\n" for l in labels))


def _hf_config(directory, architecture):
  """An HF directory's config.json as a dict when it names `architecture`, else None."""
  path = os.path.join(directory, HF_CONFIG)
  if not io.isdir(directory) or not io.exists(path):
    return None
  config = json.loads(io.read_text(path))
  if architecture not in (config.get("architectures") or []):
    return None  # a sequence classifier's labels are not tags, nor a tagger's classes
  return config


def hf_id2label(directory, architecture=TAGGER_ARCHITECTURE):
  """The id2label names of an HF directory's config.json (of `architecture`: by default an
  AlbertForTokenClassification), in id order, transformers' placeholders (LABEL_0, ...)
  included; None for another architecture or no config.json."""
  config = _hf_config(directory, architecture)
  if config is None:
    return None
  id2label = config.get("id2label") or {}
  return [id2label[k] for k in sorted(id2label, key=int)]


def hf_label_names(directory, architecture=TAGGER_ARCHITECTURE):
  """hf_id2label's names, or None with no names but transformers' placeholders."""
  names = hf_id2label(directory, architecture)
  return None if not names or all(_GENERIC.fullmatch(n) for n in names) else names


def checkpoint_label_names(checkpoint):
  """The tag names a tagger checkpoint was trained with (an HF directory's id2label, or the
  label_list.txt beside one of our checkpoints), or None."""
  if not checkpoint:
    return None
  checkpoint = os.fspath(checkpoint)
  names = hf_label_names(checkpoint)
  if names is None:
    directory = checkpoint if io.isdir(checkpoint) else os.path.dirname(checkpoint)
    names = read_label_file(directory)
  return names


def write_classifier_labels(directory: str, labels, problem_type: str):
  """Saves a classifier's label names (id order; none for regression) and its problem_type
  (SINGLE_LABEL, MULTI_LABEL or REGRESSION) as classifier_labels.json in directory."""
  io.write_text_atomically(os.path.join(directory, CLASSIFIER_LABEL_FILE), json.dumps(
      {"labels": list(labels), "problem_type": problem_type}, indent=1) + "\n")


def read_classifier_labels(directory: str) -> Optional[dict]:
  """{"labels": [...], "problem_type": ...} saved by write_classifier_labels in directory, or
  None."""
  path = os.path.join(directory, CLASSIFIER_LABEL_FILE) if directory else None
  if not path or not io.exists(path):
    return None
  return json.loads(io.read_text(path))


def checkpoint_classifier_labels(checkpoint) -> Optional[dict]:
  """A sequence classifier checkpoint's {"labels", "problem_type"}: an HF directory's id2label
  (None for placeholders only) and problem_type, or the classifier_labels.json beside one of our
  checkpoints; None when neither is there."""
  if not checkpoint:
    return None
  checkpoint = os.fspath(checkpoint)
  config = _hf_config(checkpoint, SEQUENCE_ARCHITECTURE)
  if config is not None:
    if not config.get("problem_type"):
      return None
    names = hf_label_names(checkpoint, SEQUENCE_ARCHITECTURE)
    return {"labels": names or [], "problem_type": config["problem_type"]}
  directory = checkpoint if io.isdir(checkpoint) else os.path.dirname(checkpoint)
  return read_classifier_labels(directory)


def check_checkpoint_labels(label_names, checkpoint, training, names=None):
  """Refuses label names (from --label_list) that disagree with those `checkpoint` was trained
  with (the label_list.txt beside it, or an HF directory's id2label; or `names` when given): its
  head's logit k is the checkpoint's label k, so another order would label every example with
  the wrong names, and another count cannot load. With `training`, other names are a new label
  set to learn and pass: of the same count the head is only a start; of another count the run
  starts a new head (albert_tf.finetuning.job).

  Args:
    label_names: the run's names, in id order.
    checkpoint: --init_checkpoint, or None.
    training: whether the run trains (--do_train).
    names: the checkpoint's names, or None to read them with checkpoint_label_names.

  Raises:
    errors.CheckpointError: naming both label lists (or counts) and the fix.
  """
  if names is None:
    names = checkpoint_label_names(checkpoint)
  if names is None or list(names) == list(label_names):
    return
  names, label_names = list(names), list(label_names)
  fix = ("drop --label_list to use the checkpoint's labels, or give them in its order: "
         f"--label_list={','.join(names)}")
  if len(names) != len(label_names) and not training:
    raise errors.CheckpointError(
        f"--label_list has {len(label_names)} labels but --init_checkpoint={checkpoint} has "
        f"{len(names)} ({' '.join(names)}): its head cannot take {len(label_names)}; {fix}")
  if sorted(names) == sorted(label_names):
    raise errors.CheckpointError(
        f"--label_list orders the labels {' '.join(label_names)} but --init_checkpoint="
        f"{checkpoint} was trained with {' '.join(names)}: every id would get another label; "
        f"{fix}")
  if not training:
    raise errors.CheckpointError(
        f"--label_list names {' '.join(label_names)} but --init_checkpoint={checkpoint} was "
        f"trained with {' '.join(names)}: it cannot predict other labels without --do_train; "
        f"{fix}")
