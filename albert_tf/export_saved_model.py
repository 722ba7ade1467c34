"""Exports an ALBERT checkpoint as a SavedModel for TF Serving (raw text in, vectors out).

  python -m albert_tf.export_saved_model --albert_config_file=albert_config.json \
      --init_checkpoint=model.ckpt-best --spm_model_file=30k-clean.model \
      --max_seq_length=128 --export_dir=serving/albert --version=1

Writes <export_dir>/<version>/ atomically; see albert_tf.export.saved_model for the signatures.
--ids_only leaves out the raw-text ones: the SavedModel then holds no tensorflow-text op, and any
TensorFlow runs it (`saved_model_cli run`, Python without tensorflow_text).
--init_checkpoint may be a Hugging Face directory (config.json, model.safetensors, spiece.model),
a keras-hub preset (config.json, model.weights.h5, assets/tokenizer/vocabulary.spm), or a run's
output_dir or a checkpoint prefix in it (albert_config.json, and the spiece.model or vocab.txt a
fine-tuning run kept there): its config and tokenizer are then the defaults of
--albert_config_file and --spm_model_file / --vocab_file.
"""

from absl import app, flags

from albert_tf.core import cli, settings
from albert_tf.training import flags as common_flags

from albert_tf.core.startup import quiet_tensorflow_startup

FLAGS = flags.FLAGS
common_flags.define_export_model_flags()
flags.DEFINE_integer("max_seq_length", 128,
                     "Length the text signatures pad and truncate to (with --ids_only, the "
                     "length tokenization_info reports).")
flags.DEFINE_string("export_dir", None, "TF Serving's model base path.")
flags.DEFINE_integer("version", 1, "Version folder to write under export_dir.")
flags.DEFINE_bool("allow_random_heads", False,
                  "Export the mlm and sop_log_probs signatures even when the checkpoint lacks "
                  "their heads (they then serve freshly initialised weights). By default they "
                  "are left out, saying why.")
flags.DEFINE_bool("ids_only", False,
                  "Export only the signatures that take token ids (tokens, mlm, sop_log_probs) "
                  "and tokenization_info. The graph then holds no tensorflow-text op, so a "
                  "TensorFlow without it loads the export (saved_model_cli run, TF Serving "
                  "builds without TF Text); clients tokenize with the shipped tokenizer file.")
common_flags.define_serving_precision_flag()


def main(argv):
  del argv
  quiet_tensorflow_startup()  # before anything imports TensorFlow
  from albert_tf.checkpoints import open_checkpoint
  from albert_tf.core.config import check_max_seq_length
  from albert_tf.core.errors import AlbertError
  from albert_tf.export.saved_model import (IdsServingModule, ServingModule, export_saved_model,
                                            heads_missing)
  from albert_tf.models import AlbertPretrainer
  from albert_tf.training import memory
  from albert_tf.training.precision import serving_model
  checkpoint = open_checkpoint(FLAGS.init_checkpoint)  # every question below is asked of it
  try:
    config, config_file = checkpoint.config(FLAGS.albert_config_file)
  except ValueError as e:
    if isinstance(e, AlbertError):  # says what is wrong, with its own exit status
      raise
    raise app.UsageError(str(e)) from None
  spm_model, vocab_file = common_flags.export_tokenizer_files(
      FLAGS.spm_model_file, FLAGS.vocab_file, checkpoint)
  tokenizer = settings.TokenizerSettings(spm_model_file=spm_model, vocab_file=vocab_file,
                                         do_lower_case=FLAGS.do_lower_case)
  check_max_seq_length(FLAGS.max_seq_length, config, config_file)
  # Before the model is built: one that cannot fit is refused, not killed by the OOM killer.
  memory.check_model_build(config, "exporting the SavedModel", seq_length=FLAGS.max_seq_length,
                           batch_size=0, precision=FLAGS.serving_precision,
                           config_file=config_file)
  model = serving_model(FLAGS.serving_precision, lambda: AlbertPretrainer(config))
  # Built before the checkpoint loads: it checks the SentencePiece model against the config.
  module_class = IdsServingModule if FLAGS.ids_only else ServingModule
  module = module_class(model, tokenizer, FLAGS.max_seq_length, config_file=config_file)
  report = checkpoint.load_into(model)
  print(f"loaded {FLAGS.init_checkpoint}: {report}")
  for signature, names in heads_missing(report).items():
    if FLAGS.allow_random_heads:
      print(f"WARNING: the {signature} signature serves random weights (--allow_random_heads): "
            f"{FLAGS.init_checkpoint} lacks {', '.join(names)}")
    else:
      module.head_signatures = tuple(s for s in module.head_signatures if s != signature)
      print(f"left out the {signature} signature: {FLAGS.init_checkpoint} lacks its head "
            f"({', '.join(names)}), and random weights would mislead; --allow_random_heads "
            "exports it anyway")
  if any(name.startswith("bert/pooler/") for name in report.missing):
    print(f"WARNING: {FLAGS.init_checkpoint} has no pooler (as HF's AlbertForQuestionAnswering): "
          "pooled_output is computed by freshly initialised weights")
  print(f"exported {export_saved_model(module, FLAGS.export_dir, FLAGS.version)}")


def run():
  """The entry point (`python -m albert_tf.export_saved_model`, `albert-export-saved-model`)."""
  cli.run(main, required_flags=("init_checkpoint", "export_dir"))


if __name__ == "__main__":
  run()
