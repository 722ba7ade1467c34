"""A directory in Hugging Face transformers' layout (config.json, model.safetensors, spiece.model,
tokenizer_config.json) from a checkpoint of any layout, for transformers' from_pretrained."""


from albert_tf.checkpoints import hf, load_checkpoint, original
from albert_tf.export.staging import checked_export_dir, write_directory_atomically
from albert_tf.models import AlbertClassifier, AlbertPretrainer, AlbertSpanLabeler
from albert_tf.tokenization.vocab_check import check_vocab_fits, spm_vocab_size

# A fine-tuned head's output weights [labels, H], by their names in each layout.
_CLASSIFIER = ("output_weights", "classifier.weight",
               "classifier/output_weights/.ATTRIBUTES/VARIABLE_VALUE")
_SPAN = ("cls/squad/output_weights", "qa_outputs.weight",
         "span_logits/logits/output_weights/.ATTRIBUTES/VARIABLE_VALUE")


def export_hf_layout(config, checkpoint, export_dir, spm_model_file=None, do_lower_case=True,
                     config_file=None):
  """Loads `checkpoint` (any layout) and writes it as transformers' save_pretrained does.

  The head is the checkpoint's: a classifier (`output_weights`) is written as
  AlbertForSequenceClassification, a SQuAD v1 span head as AlbertForQuestionAnswering, a
  checkpoint with the pretraining heads as AlbertForPreTraining, anything else (an encoder
  alone) as AlbertModel. The directory is assembled under a temporary name next to it and renamed
  into place, as export.released does.

  Args:
    config: the AlbertConfig the checkpoint was trained with.
    checkpoint: a checkpoint of any layout (ours, the released one, Hugging Face's).
    export_dir: the directory to write; it must not exist or be empty.
    spm_model_file: the SentencePiece model to ship as spiece.model, or None.
    do_lower_case: written to tokenizer_config.json.
    config_file: named when the SentencePiece model does not fit the config's vocab_size.

  Returns:
    The export directory.

  Raises:
    FileExistsError: when export_dir exists and is not empty.
    ValueError, KeyError: as load_checkpoint, when the checkpoint does not match the config.
  """
  export_dir = checked_export_dir(export_dir)
  if spm_model_file:
    check_vocab_fits(spm_vocab_size(spm_model_file), config.vocab_size, spm_model_file,
                     config_file)
  model = model_for_checkpoint(config, checkpoint)
  report = load_checkpoint(model, checkpoint)
  if isinstance(model, AlbertPretrainer) and any(n.startswith("cls/") for n in report.missing):
    model = model.encoder  # no pretraining heads to write: random ones would mislead
  write_directory_atomically(export_dir, lambda directory: hf.save_hf_checkpoint(
      model, directory, spm_model_file, do_lower_case))
  return export_dir


def model_for_checkpoint(config, checkpoint):
  """The model whose head the checkpoint holds (see export_hf_layout); also the portable
  exports' (export.portable)."""
  shapes = _shapes(checkpoint)
  for key in _CLASSIFIER:
    if key in shapes:
      return AlbertClassifier(config, num_labels=int(shapes[key][0]))
  if any(key in shapes for key in _SPAN):
    return AlbertSpanLabeler(config)
  return AlbertPretrainer(config)


def _shapes(checkpoint):
  if hf.is_hf_checkpoint(checkpoint):
    return {k: v.shape for k, v in hf.read_safetensors(checkpoint).items()}
  prefix = original.resolve_checkpoint_path(checkpoint)
  return original.checkpoint_reader(prefix).get_variable_to_shape_map()
