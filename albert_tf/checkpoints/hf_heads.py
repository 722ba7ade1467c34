"""Which transformers class holds each model's head: the Hugging Face side of every model, kept
here rather than on the model classes (they know nothing of transformers).

Each model class has one HfHead, by its class name: the core models' are below; each task's are
declared as plain data in its package's `__init__.py` (HF_HEADS, read through albert_tf.registry,
so that a new task adds its entries in its own folder). A class without an entry of its own takes
the one of the nearest class it derives from. albert_tf.checkpoints.hf reads the table to write a
model; albert_tf.export.hf to tell which head a checkpoint holds. No TensorFlow here.
"""

import dataclasses
import functools
from typing import Optional

from albert_tf import registry
from albert_tf.checkpoints import labels


@dataclasses.dataclass(frozen=True)
class HfHead:
  """The Hugging Face side of one model class.

  Args:
    head: export_checkpoints' --head name of its head ("none" for the encoder alone).
    architecture: the transformers class whose checkpoint has the same weights, or None when
      transformers has none (the export refuses such a head by its name).
    aliases: other transformers classes whose checkpoints load into this model.
    pooler: whether that class has the pooler (transformers' QA and token classifiers don't).
    problem_type: with `head` shared by classes of the same weights (a classifier's), the
      config.json problem_type that picks this class; None: the head's default class.
    scopes: the first parts of the head weights' names in the released layout, ours and Hugging
      Face's: how a checkpoint's head is recognised (empty: told by the files beside it).
    labels: whether config.json names the labels (id2label, label2id) from the model's
      label_names; False writes none (one score per choice has no label names).
  """
  head: str
  architecture: Optional[str]
  aliases: tuple = ()
  pooler: bool = True
  problem_type: Optional[str] = None
  scopes: tuple = ()
  labels: bool = True


CORE_HEADS = {
    "AlbertModel": HfHead("none", "AlbertModel"),
    "AlbertPretrainer": HfHead(
        "pretraining", "AlbertForPreTraining", aliases=("AlbertForMaskedLM",),
        scopes=("cls/predictions", "cls/seq_relationship", "masked_lm", "sentence_order",
                "predictions", "sop_classifier")),
}


@functools.cache
def heads() -> dict:
  """{model class name: HfHead}: the core models' and each task's (albert_tf.registry).

  Raises:
    TypeError: a task's HF_HEADS entry with a field HfHead has not, or without `head` and
      `architecture` (naming the class).
  """
  table = dict(CORE_HEADS)
  for name, fields in registry.hf_heads().items():
    try:
      table[name] = HfHead(**fields)
    except TypeError as e:
      raise TypeError(f"the HF_HEADS entry of {name} in its task's __init__.py does not fit "
                      f"albert_tf.checkpoints.hf_heads.HfHead ({e}): give `head`, "
                      "`architecture` and only HfHead's other fields") from None
  return table


def for_class(cls) -> Optional[HfHead]:
  """The HfHead of model class `cls`: its own entry, else that of the nearest class it derives
  from (in method resolution order); None for a class with none in its ancestry."""
  table, modules = heads(), registry.models()
  for klass in cls.__mro__:
    # By name and module: another library's class of the same name is not ours.
    if klass.__name__ in table and modules.get(klass.__name__) == klass.__module__:
      return table[klass.__name__]
  return None


def for_model(model) -> Optional[HfHead]:
  """The HfHead of `model`'s class (see for_class)."""
  return for_class(type(model))


def architecture(model) -> str:
  """The transformers class name matching `model` (its HfHead's architecture).

  Raises:
    TypeError: for a model transformers has no counterpart of (naming it).
  """
  entry = for_model(model)
  if entry is None or entry.architecture is None:
    raise TypeError(f"no Hugging Face architecture is known for {type(model).__name__}: export a "
                    "model with one in albert_tf.checkpoints.hf_heads (AlbertModel, "
                    "AlbertPretrainer, AlbertClassifier, AlbertMultipleChoice, AlbertSpanLabeler, "
                    "a task's model whose package declares it in HF_HEADS)")
  return entry.architecture


def config_fields(model) -> dict:
  """The config.json fields of `model`'s head, over the encoder's (None: drop the field).

  id2label and label2id of the model's `label_names` when it has them and its head names labels
  (transformers' pipelines report labels by these names); none at all for a head that names no
  labels. problem_type: the head's, else for transformers' sequence classifier the one it infers
  itself (regression for a one-label model, single-label classification otherwise).
  """
  entry = for_model(model)
  names = getattr(model, "label_names", None)
  if not entry.labels:
    fields = {"id2label": None, "label2id": None}
  elif names:
    fields = {"id2label": {str(i): name for i, name in enumerate(names)},
              "label2id": {name: i for i, name in enumerate(names)}}
  else:
    fields = {}
  problem_type = entry.problem_type
  if problem_type is None and entry.architecture == labels.SEQUENCE_ARCHITECTURE:
    problem_type = labels.REGRESSION if model.is_regression else labels.SINGLE_LABEL
  if problem_type is not None:
    fields["problem_type"] = problem_type
  return fields
