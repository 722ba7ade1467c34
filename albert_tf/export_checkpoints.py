"""Exports a checkpoint (ours or the original layout) as a released-style ALBERT directory.

  python -m albert_tf.export_checkpoints --albert_config_file=model/albert_config.json \
      --init_checkpoint=model --spm_model_file=30k-clean.model --export_path=albert_mine

Writes albert_config.json, model.ckpt-best.* (original variable names, no optimizer state) and the
SentencePiece model. The original's --albert_directory / --checkpoint_name form works too. A
Hugging Face directory, a keras-hub preset or a run's output_dir --init_checkpoint brings its own
config (and a preset, or a fine-tuning output_dir that kept it, its SentencePiece model):
--albert_config_file and --spm_model_file may be left out.

With --format=hf it writes Hugging Face transformers' layout instead (config.json,
model.safetensors, spiece.model, tokenizer_config.json), which transformers' from_pretrained
loads as it is: AlbertForPreTraining for a pretraining checkpoint, AlbertForSequenceClassification,
AlbertForMultipleChoice, AlbertForQuestionAnswering or AlbertForTokenClassification (with its
id2label) for a fine-tuned classifier, RACE, SQuAD v1 or run_ner checkpoint (--head to choose; a
SQuAD 2.0 head, which transformers has no class for, is refused: export its encoder with
--head=none, or keep the released layout).

A directory --init_checkpoint holding model.ckpt-best (a fine-tuning output_dir) exports it, not
the latest model.ckpt-N: the weights whose results the run reported.
"""

import os

from absl import app, flags

from albert_tf.core import cli, errors, path_checks, settings

from albert_tf.core.startup import quiet_tensorflow_startup

FLAGS = flags.FLAGS
flags.DEFINE_string("albert_directory", None,
                    "A directory with albert_config.json and the checkpoint (the original's "
                    "form); or give --albert_config_file and --init_checkpoint.")
flags.DEFINE_string("checkpoint_name", "model.ckpt-best",
                    "Name of the checkpoint under albert_directory to be exported.")
flags.DEFINE_string("albert_config_file", None, "The model's albert_config.json. Default: the "
                    "config of a Hugging Face directory or keras-hub preset --init_checkpoint, "
                    "or the albert_config.json of a run's output_dir --init_checkpoint (or "
                    "beside a checkpoint prefix).")
flags.DEFINE_string("init_checkpoint", None,
                    "Checkpoint to export: a prefix or a directory, ours or the original layout; a "
                    "Hugging Face directory or a keras-hub preset.")
flags.DEFINE_string("spm_model_file", None, "SentencePiece model to ship with the export. "
                    "Default: a keras-hub preset --init_checkpoint's (or an HF directory's, or "
                    "the spiece.model a fine-tuning run kept in its output_dir).")
flags.DEFINE_bool("do_lower_case", True, "Kept for compatibility with the original's flags; "
                  "with --format=hf, written to tokenizer_config.json.")
flags.DEFINE_string("export_path", None, "The directory to write.")
flags.DEFINE_enum("format", "released", ["released", "hf"],
                  "released: the released ALBERT layout (albert_config.json, model.ckpt-best); "
                  "hf: Hugging Face transformers' (config.json, model.safetensors).")
flags.DEFINE_enum("head", "auto", ["auto", "none", "pretraining", "classifier", "multiple_choice",
                                   "squad_v1", "squad_v2", "token_classifier"],
                  "With --format=hf, the head to write: auto (the checkpoint's), none (the "
                  "encoder alone, AlbertModel), pretraining, classifier, multiple_choice (RACE), "
                  "squad_v1, token_classifier (run_ner). A head transformers has no class for "
                  "(squad_v2) or that the checkpoint lacks is refused.")


def main(argv):
  del argv
  quiet_tensorflow_startup()  # before anything imports TensorFlow
  if FLAGS.albert_directory:
    config_file = os.path.join(FLAGS.albert_directory, "albert_config.json")
    checkpoint = os.path.join(FLAGS.albert_directory, FLAGS.checkpoint_name)
    # Before TensorFlow loads (--init_checkpoint is checked with the flags).
    problem = path_checks.checkpoint_problem(checkpoint)
    if problem:
      raise errors.UsageError(
          f"--albert_directory={FLAGS.albert_directory} --checkpoint_name="
          f"{FLAGS.checkpoint_name}: {problem}")
  else:
    if not FLAGS.init_checkpoint:
      raise app.UsageError("give --albert_directory, or --init_checkpoint (and "
                           "--albert_config_file unless the checkpoint has its config)")
    config_file, checkpoint = FLAGS.albert_config_file, FLAGS.init_checkpoint
  from albert_tf.checkpoints import open_checkpoint
  from albert_tf.export.hf import export_hf_layout
  from albert_tf.export.released import export_released_layout
  from albert_tf.training import memory
  # Opened once: the config, the tokenizer and the weights below are asked of it.
  checkpoint = open_checkpoint(checkpoint)
  # The config file, checked against the checkpoint's own config (an HF directory's config.json,
  # a keras-hub preset's); without it, the checkpoint's.
  config, config_from = checkpoint.config(config_file)
  # Before the weights load: a model that cannot fit is refused, not killed by the OOM killer.
  memory.check_model_build(config, "converting the checkpoint", seq_length=1, batch_size=0,
                           config_file=config_from)
  tokenizer = settings.TokenizerSettings(
      spm_model_file=checkpoint.tokenizer(FLAGS.spm_model_file, None)[0],
      do_lower_case=FLAGS.do_lower_case)
  if FLAGS.format == "hf":
    path = export_hf_layout(config, checkpoint, FLAGS.export_path, tokenizer,
                            config_file=config_file, head=FLAGS.head)
    print(f"exported {path}")
    return
  prefix = export_released_layout(config, checkpoint, FLAGS.export_path, tokenizer,
                                  config_file=config_file)
  print(f"exported {prefix}")


def run():
  """The entry point (`python -m albert_tf.export_checkpoints`, `albert-export-checkpoints`)."""
  cli.run(main, required_flags=("export_path",))


if __name__ == "__main__":
  run()
