"""Label names saved beside a checkpoint: run_ner's label_list.txt (one name a line, in id order)
in its output_dir, or a Hugging Face tagger's id2label. A tagger's head has a classifier's shape
([labels, H]); its names are what tell the two apart. No TensorFlow."""

import json
import os
import re
from typing import Optional

from albert_tf import io

LABEL_FILE = "label_list.txt"
HF_CONFIG = "config.json"
TAGGER_ARCHITECTURE = "AlbertForTokenClassification"
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


def hf_id2label(directory):
  """The id2label names of an HF AlbertForTokenClassification directory's config.json, in id
  order, transformers' placeholders (LABEL_0, ...) included; None for another architecture or
  no config.json."""
  path = os.path.join(directory, HF_CONFIG)
  if not io.isdir(directory) or not io.exists(path):
    return None
  config = json.loads(io.read_text(path))
  if TAGGER_ARCHITECTURE not in (config.get("architectures") or []):
    return None  # a sequence classifier's labels are not tags
  id2label = config.get("id2label") or {}
  return [id2label[k] for k in sorted(id2label, key=int)]


def hf_label_names(directory):
  """hf_id2label's names, or None with no names but transformers' placeholders."""
  names = hf_id2label(directory)
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
