"""Where a run's label names come from, in order: --label_list, the output_dir being resumed
(label_list.txt), the init checkpoint (an HF directory's id2label, or the label_list.txt beside
one of our checkpoints), the training set. No TensorFlow."""

import json
import os
import re

from albert_tf import io
from albert_tf.tasks.ner import data

HF_CONFIG = "config.json"
# transformers' placeholder names (LABEL_0, ...): no tag names at all.
_GENERIC = re.compile(r"LABEL_\d+")


def hf_label_names(directory):
  """The id2label names of an HF AlbertForTokenClassification directory's config.json, in id
  order; None for another architecture, or with no names but transformers' placeholders."""
  path = os.path.join(directory, HF_CONFIG)
  if not io.isdir(directory) or not io.exists(path):
    return None
  config = json.loads(io.read_text(path))
  if "AlbertForTokenClassification" not in (config.get("architectures") or []):
    return None  # a sequence classifier's labels are not tags
  id2label = config.get("id2label") or {}
  names = [id2label[k] for k in sorted(id2label, key=int)]
  return None if not names or all(_GENERIC.fullmatch(n) for n in names) else names


def checkpoint_label_names(checkpoint):
  """The label names a checkpoint was trained with (see module docstring), or None."""
  if not checkpoint:
    return None
  checkpoint = os.fspath(checkpoint)
  names = hf_label_names(checkpoint)
  if names is None:
    directory = checkpoint if io.isdir(checkpoint) else os.path.dirname(checkpoint)
    names = data.read_label_file(directory)
  return names


def resolve_labels(label_list, output_dir, init_checkpoint, train_sentences):
  """(label names, where they came from) of a run.

  Raises:
    NerDataError: no source gives them (a run without --do_train, --label_list or a labelled
      checkpoint).
  """
  if label_list:
    return data.parse_label_list(label_list), "--label_list"
  for names, source in ((data.read_label_file(output_dir), f"{output_dir}/{data.LABEL_FILE}"),
                        (checkpoint_label_names(init_checkpoint), init_checkpoint)):
    if names:
      return names, source
  if train_sentences is not None:
    return data.labels_of(train_sentences), "the training set"
  raise data.NerDataError(
      "no label list: give --label_list (comma-separated tags), or --do_train (the training "
      "set's tags), or an --output_dir / --init_checkpoint of a run_ner model")
