"""Exports an ALBERT checkpoint as a SavedModel for TF Serving (raw text in, vectors out).

  python -m albert_tf.export_saved_model --albert_config_file=albert_config.json \
      --init_checkpoint=model.ckpt-best --spm_model_file=30k-clean.model \
      --max_seq_length=128 --export_dir=serving/albert --version=1

Writes <export_dir>/<version>/ atomically; see albert_tf.export.saved_model for the signatures.
"""

from absl import app, flags

from albert_tf.startup import quiet_tensorflow_startup

FLAGS = flags.FLAGS
flags.DEFINE_string("albert_config_file", None, "The model's albert_config.json.")
flags.DEFINE_string("init_checkpoint", None,
                    "Checkpoint to export (prefix or directory; ours or the original layout).")
flags.DEFINE_string("spm_model_file", None, "The SentencePiece model (shipped as an asset).")
flags.DEFINE_bool("do_lower_case", True, "Whether the text is lower-cased before tokenization.")
flags.DEFINE_integer("max_seq_length", 128, "Length the text signatures pad and truncate to.")
flags.DEFINE_string("export_dir", None, "TF Serving's model base path.")
flags.DEFINE_integer("version", 1, "Version folder to write under export_dir.")


def main(argv):
  del argv
  quiet_tensorflow_startup()  # before anything imports TensorFlow
  # pylint: disable=import-outside-toplevel
  from albert_tf.checkpoints import load_checkpoint
  from albert_tf.config import AlbertConfig
  from albert_tf.export.saved_model import ServingModule, export_saved_model
  from albert_tf.models import AlbertPretrainer
  # pylint: enable=import-outside-toplevel
  model = AlbertPretrainer(AlbertConfig.from_json_file(FLAGS.albert_config_file))
  # Built before the checkpoint loads: it checks the SentencePiece model against the config.
  module = ServingModule(model, FLAGS.spm_model_file, FLAGS.do_lower_case, FLAGS.max_seq_length,
                         config_file=FLAGS.albert_config_file)
  print(f"loaded {FLAGS.init_checkpoint}: {load_checkpoint(model, FLAGS.init_checkpoint)}")
  print(f"exported {export_saved_model(module, FLAGS.export_dir, FLAGS.version)}")


if __name__ == "__main__":
  for name in ("albert_config_file", "init_checkpoint", "spm_model_file", "export_dir"):
    flags.mark_flag_as_required(name)
  app.run(main)
