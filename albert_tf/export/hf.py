"""A directory in Hugging Face transformers' layout (config.json, model.safetensors, spiece.model,
tokenizer_config.json) from a checkpoint of any layout, for transformers' from_pretrained."""

import importlib
import json
import os
import re

from albert_tf.core import errors, io
from albert_tf.checkpoints import labels
from albert_tf import registry
from albert_tf.checkpoints import hf, hf_config, hf_heads, keras_hub, layout, load_checkpoint
from albert_tf.checkpoints import opened, original, ours
from albert_tf.core.settings import TokenizerSettings
from albert_tf.export.staging import checked_export_dir, write_directory_atomically
from albert_tf.export.tokenizer_arguments import old_tokenizer_arguments
from albert_tf.models import AlbertModel, AlbertPretrainer
from albert_tf.tokenization.vocab_check import check_vocab_fits, spm_vocab_size

def _head_classes():
  """{(head, problem_type): model class} of every model with a Hugging Face head
  (checkpoints.hf_heads: the core models and each task's, through the registry: export/ sits below
  the tasks, so it holds no list of them). problem_type None is the head's default class."""
  classes = {}
  for name, module in registry.models().items():
    cls = getattr(importlib.import_module(module), name)
    entry = hf_heads.for_class(cls)
    if entry is not None:
      key = (entry.head, entry.problem_type)
      # A subclass (AlbertMultipleChoice of AlbertClassifier) declares its own head: the first
      # class to declare a key is the one that defines it.
      if key not in classes or issubclass(classes[key], cls):
        classes[key] = cls
  return classes


_CLASSES = _head_classes()
# The HfHead of each head's default class.
_DEFAULTS = {head: hf_heads.for_class(cls) for (head, problem), cls in _CLASSES.items()
             if problem is None}
# --head: the head to write (auto: the checkpoint's), and the transformers class of each.
HEADS = {"auto": None, **{head: entry.architecture for head, entry in _DEFAULTS.items()}}
# transformers classes -> the head whose weights they hold.
_HF_HEADS = {arch: head for head, entry in _DEFAULTS.items()
             for arch in (entry.architecture, *entry.aliases) if arch}
# Each head's weights (other than the encoder's), by the first part of their names in each
# layout: the released one (top-level names), ours (object paths), Hugging Face's (keys).
_HEAD_NAMES = {head: entry.scopes for head, entry in _DEFAULTS.items() if entry.scopes}
_ENCODER_NAMES = ("bert", "encoder", "albert", "embeddings", "pooler")
_WHAT_TO_DO = ("export its encoder alone with --head=none (AlbertModel), or keep the head with "
               "--format=released (the original layout)")


@old_tokenizer_arguments(lambda config, checkpoint, export_dir, spm_model_file=None,
                         do_lower_case=True, config_file=None, head="auto": None)
def export_hf_layout(config, checkpoint, export_dir, tokenizer=None, config_file=None,
                     head="auto"):
  """Loads `checkpoint` (any layout) and writes it as transformers' save_pretrained does.

  The head is the checkpoint's (head="auto"), or the one asked for: a classifier
  (`output_weights` [labels, H]) is written as AlbertForSequenceClassification, RACE's
  multiple-choice head as AlbertForMultipleChoice, a SQuAD v1 span head as
  AlbertForQuestionAnswering, a run_ner tagger (a classifier's head with its tag names beside
  it: label_list.txt, or an HF config's id2label) as AlbertForTokenClassification, the
  pretraining heads as AlbertForPreTraining, an encoder alone (or head="none") as AlbertModel. A
  classifier's config.json gets its problem_type and, from an own-data run's
  classifier_labels.json beside the checkpoint, its label names (a multi-label run's:
  AlbertMultiLabelClassifier, problem_type multi_label_classification). Which class writes a head
  is what checkpoints.hf_heads declares (each task's in its package's HF_HEADS). A head
  transformers has no class for (SQuAD 2.0's) is refused, as is a head the checkpoint lacks:
  nothing is written with random weights. The directory is assembled under a temporary name next
  to it and renamed into place, as export.released does.

  Args:
    config: the AlbertConfig the checkpoint was trained with.
    checkpoint: a checkpoint of any layout (ours, the released one, Hugging Face's).
    export_dir: the directory to write; it must not exist or be empty.
    tokenizer: a settings.TokenizerSettings, or None: its spm_model_file is shipped as
      spiece.model, its do_lower_case written to tokenizer_config.json (0.3's spm_model_file and
      do_lower_case arguments work until 0.4.0: export.tokenizer_arguments).
    config_file: named when the SentencePiece model does not fit the config's vocab_size.
    head: one of HEADS (the --head flag).

  Returns:
    The export directory.

  Raises:
    FileExistsError: when export_dir exists and is not empty.
    ValueError: a config HF cannot hold (parameter_sharing shared-attention or shared-FFN).
    errors.CheckpointError: a head without a transformers class, or one the checkpoint lacks.
    errors.HeadAmbiguityError: (auto) a head it cannot tell, saying which --head to give (see
      checkpoint_head).
    KeyError: as load_checkpoint, when the checkpoint does not match the config.
  """
  if head not in HEADS:
    raise errors.UsageError(f"unknown head {head!r}: one of {', '.join(HEADS)}")
  hf_config.check_hf_can_hold(config)  # before any loading: shared-attention / shared-FFN cannot go
  export_dir = checked_export_dir(export_dir)
  tokenizer = tokenizer or TokenizerSettings()
  spm_model_file = tokenizer.spm_model_file
  if spm_model_file:
    check_vocab_fits(spm_vocab_size(spm_model_file), config.vocab_size, spm_model_file,
                     config_file)
  asked = head
  head, model = model_for_checkpoint(config, checkpoint, head)
  if head == "squad_v2":
    raise errors.CheckpointError(
        f"{checkpoint} holds a SQuAD 2.0 head (AlbertSquadV2: start_logits/, "
        "end_logits/, answer_class/), which transformers has no class for: "
        f"{_WHAT_TO_DO}")
  report = load_checkpoint(model, checkpoint)
  head_missing = [n for n in report.missing if not layout.is_encoder_name(n)]
  if head == "none" or (asked == "auto" and head == "pretraining" and head_missing):
    model = model.encoder  # no pretraining heads to write: random ones would mislead
    head_missing = []
  elif head_missing:
    raise errors.CheckpointError(
        f"--head={head}: {checkpoint} has no such head (it lacks "
        f"{', '.join(head_missing)}); a random one would mislead: give the head it "
        "has, or --head=auto")
  if any(n.startswith("bert/pooler/") for n in report.missing) and isinstance(model,
                                                                              AlbertModel):
    raise errors.CheckpointError(
        f"{checkpoint} has no pooler (as transformers' AlbertForQuestionAnswering): "
        "an AlbertModel would get a random one; export it with its head "
        "(--head=squad_v1)")
  write_directory_atomically(export_dir, lambda directory: hf.save_hf_checkpoint(
      model, directory, spm_model_file, tokenizer.do_lower_case))
  return export_dir


def model_for_checkpoint(config, checkpoint, head="auto"):
  """(head, model): the head `checkpoint` holds (head="auto", see checkpoint_head) or the one
  asked for, and a model with that head, not loaded yet (AlbertPretrainer for "none" and
  "pretraining": its encoder is the AlbertModel)."""
  if head == "auto":
    head, num_labels = checkpoint_head(checkpoint)
  else:
    num_labels = _classifier_labels(_head_shapes(checkpoint)[0]) or 1
  if head == "none":
    return head, AlbertPretrainer(config)  # its encoder is the AlbertModel to write
  saved = labels.checkpoint_classifier_labels(checkpoint) or {}
  # A head shared by classes of one set of weights (a classifier: single-label, regression,
  # multi-label) is told by the problem_type saved beside the checkpoint.
  cls = _CLASSES.get((head, saved.get("problem_type"))) or _CLASSES[(head, None)]
  return head, cls.for_export(config, checkpoint, num_labels)


def checkpoint_head(checkpoint):
  """(head, num_labels) of the head `checkpoint` holds, as export_hf_layout's --head names
  them: "none", "pretraining", "classifier" (num_labels from output_weights), "multiple_choice",
  "squad_v1", "squad_v2", "token_classifier".

  A run_ner tagger's head is stored as a sentence classifier's (output_weights [L, H],
  output_bias [L], under the same names in every layout): the variables cannot tell them apart.
  What does is beside the checkpoint: its tag names (label_list.txt, an HF config's id2label),
  else the files each fine-tuning run leaves in its output_dir (_RUN_FILES).

  Raises:
    errors.CheckpointError: for weights of a head no transformers class is known for.
    errors.HeadAmbiguityError: output_weights [1, H] (RACE's multiple-choice head or a
      one-label regression classifier) or [L, H] (a sentence classifier or a token classifier)
      when neither the checkpoint (an HF config.json's architectures) nor its directory (the
      run's files) tells which: the message names the --head values to choose from.
  """
  shapes, architecture = _head_shapes(checkpoint)
  if architecture is not None:
    if architecture not in _HF_HEADS:
      raise errors.CheckpointError(
          f"{checkpoint} is a transformers {architecture}, whose head has no "
          f"counterpart here: {_WHAT_TO_DO}")
    head = _HF_HEADS[architecture]
    return head, _classifier_labels(shapes) or 1
  found = {head for head, names in _HEAD_NAMES.items()
           if any(_under(name, names) for name in shapes)}
  unknown = sorted(name for name in shapes if not any(
      _under(name, names) for names in list(_HEAD_NAMES.values()) + [_ENCODER_NAMES]))
  if len(found) > 1:  # a task's head and the pretraining ones (kept from its start): the task's
    found.discard("pretraining")
  if unknown or len(found) > 1:
    listing = ", ".join(unknown[:5] or sorted(shapes)[:5])
    raise errors.CheckpointError(
        f"{checkpoint} holds weights of a head no transformers class is known for "
        f"({listing}): {_WHAT_TO_DO}")
  head = found.pop() if found else "none"
  num_labels = _classifier_labels(shapes)
  if head == "classifier" and num_labels == 1:
    head = _one_logit_head(checkpoint)
  elif head == "classifier":
    head = _sentence_or_token_head(checkpoint, num_labels)
  return head, num_labels or 1


def _tag_names(checkpoint, num_labels):
  """The tag names saved beside `checkpoint` when they name its num_labels outputs (a run_ner
  tagger, whose head has a sequence classifier's shape), else None."""
  names = labels.checkpoint_label_names(checkpoint)
  return names if names and len(names) == num_labels else None


def _under(name, scopes):
  return any(name == s or name.startswith(s + "/") or name.startswith(s + ".") for s in scopes)


def _classifier_labels(shapes):
  for key in ("output_weights", "classifier/output_weights", "classifier.weight"):
    if key in shapes:
      return int(shapes[key][0])
  return None


def _head_shapes(checkpoint):
  """({name: shape} of the checkpoint's model weights, the encoder's included: released names,
  our object paths, or HF keys), and the transformers class its config.json names (HF; else
  None)."""
  if hf.is_hf_checkpoint(checkpoint):
    config = hf.companion_file(checkpoint, hf.CONFIG_NAME)
    architectures = (json.loads(io.read_text(config)).get("architectures") if config else None)
    shapes = {k: v.shape for k, v in hf.read_safetensors(checkpoint).items()}
    return shapes, (architectures[0] if architectures else None)
  if keras_hub.is_keras_hub_preset(checkpoint):  # its weights read under the original's names
    tensors, _ = keras_hub.preset_tensors(checkpoint)
    return {n: v.shape for n, v in tensors.items()}, keras_hub.hf_architecture(checkpoint)
  prefix = original.resolve_checkpoint_path(checkpoint)
  reader = opened.open_reader(prefix)
  variables = reader.get_variable_to_shape_map()
  if ours.is_original_layout_names(variables):
    return {n: s for n, s in variables.items() if layout.is_model_weight_name(n)}, None
  graph = ours._object_graph(reader, prefix)
  shapes = {}
  for node_id, path in ours._weight_paths(graph).items():
    key = ours._variable_key(graph.nodes[node_id])
    shapes[path] = variables.get(key)
  return shapes, None


# Files that each fine-tuning run leaves in its output_dir, beside its checkpoints (the task
# jobs' cached features and results), for telling heads of one shape apart: RACE's and a
# one-label GLUE task's (STS-B's) [1, H]; a GLUE classifier's and run_ner's [L, H].
_RUN_FILES = {
    "multiple_choice": ("race_train.tf_record", "race_dev.tf_record", "race_test.tf_record",
                        "predict_results.txt"),
    "regression": ("sts-b_train.tf_record", "sts-b_eval.tf_record", "submit_results.tsv",
                   labels.CLASSIFIER_LABEL_FILE),
    "token_classifier": ("ner_train.tf_record", "ner_eval.tf_record", "dev_predictions.txt",
                         "test_predictions.txt", "test_results.txt"),
    "classifier": ("submit_results.tsv", "test_results.tsv", labels.CLASSIFIER_LABEL_FILE),
}
# run_classifier's cached features, <task>_train.tf_record and <task>_eval.tf_record, for any GLUE
# task (RACE's and run_ner's have their own names above).
_CLASSIFIER_FEATURES = re.compile(r"(?!ner_|race_)[\w-]+_(train|eval)\.tf_record")


def _run_files(checkpoint):
  """(directory, names of the files in it) of the directory `checkpoint` is in (or is)."""
  path = os.fspath(checkpoint)
  directory = path if io.isdir(path) else os.path.dirname(path)
  names = set(io.listdir(directory)) if directory and io.isdir(directory) else set()
  return directory, names


def _one_logit_head(checkpoint):
  """"multiple_choice" or "classifier" for output_weights [1, H], from the run's files next to
  the checkpoint; else errors.HeadAmbiguityError asking for --head."""
  directory, names = _run_files(checkpoint)
  results = os.path.join(directory, "eval_results.txt")
  race = bool(names & set(_RUN_FILES["multiple_choice"]))
  regression = bool(names & set(_RUN_FILES["regression"])) or (
      "eval_results.txt" in names and "pearson" in io.read_text(results))
  if race != regression:
    return "multiple_choice" if race else "classifier"
  raise errors.HeadAmbiguityError(
      f"{checkpoint} has output_weights [1, H], which is either RACE's multiple-choice head or a "
      "one-label (regression, as STS-B) classifier, and neither the checkpoint nor its directory "
      "tells which: give --head=multiple_choice (transformers' AlbertForMultipleChoice) or "
      "--head=classifier (AlbertForSequenceClassification with 1 label)")


def _sentence_or_token_head(checkpoint, num_labels):
  """"token_classifier" or "classifier" for output_weights [L, H] (L > 1): a tagger by its tag
  names beside the checkpoint, else by the run's files; else errors.HeadAmbiguityError asking
  for --head. Exporting a tagger as a sentence classifier would serve probabilities [B, L] of
  the pooled output, which mean nothing."""
  if _tag_names(checkpoint, num_labels):
    return "token_classifier"
  _, names = _run_files(checkpoint)
  tagger = bool(names & set(_RUN_FILES["token_classifier"]))
  sentence = bool(names & set(_RUN_FILES["classifier"])) or any(
      _CLASSIFIER_FEATURES.fullmatch(name) for name in names)
  if tagger != sentence:
    return "token_classifier" if tagger else "classifier"
  raise errors.HeadAmbiguityError(
      f"{checkpoint} has output_weights [{num_labels}, H], which is either a sentence "
      "classifier's head (run_classifier) or a token classifier's (run_ner, whose "
      f"{labels.LABEL_FILE} is not beside it), and neither the checkpoint nor its directory tells "
      f"which: give --head=classifier (probabilities [B, {num_labels}]) or "
      f"--head=token_classifier (logits [B, T, {num_labels}]; copy the run's {labels.LABEL_FILE} "
      "beside the checkpoint for its tag names)")
