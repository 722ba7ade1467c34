"""Exports an ALBERT checkpoint, or its tokenizer, as a TF Hub-format SavedModel: what Model
Garden's export_tfhub wrote for albert_en_base/3 and albert_en_preprocess/3, so that code
written against those (tensorflow_hub.load, hub.KerasLayer, Keras 3's TFSMLayer, TF Serving)
runs on your checkpoint.

  python -m albert_tf.export_tfhub --export_type=model --albert_config_file=albert_config.json \
      --init_checkpoint=model.ckpt-best --spm_model_file=30k-clean.model --export_path=hub/encoder
  python -m albert_tf.export_tfhub --export_type=preprocessing \
      --spm_model_file=30k-clean.model --default_seq_length=128 --export_path=hub/preprocess

--export_type=model_with_mlm adds the `.mlm` object (MLM logits). --init_checkpoint is any layout
we read (the released TF1 one, ours, a Hugging Face directory or a keras-hub preset, whose config
and SentencePiece model are then the defaults of --albert_config_file and --spm_model_file).
--export_type=preprocessing needs only the tokenizer flags; its --default_seq_length is checked
against the encoder's max_position_embeddings (--albert_config_file's or --init_checkpoint's
config when given, else the released models' 512). saved_model.pb lands directly in
--export_path (absent or empty, checked before any work; no version folder), written
atomically; see albert_tf.export.tfhub and albert_tf.export.tfhub_preprocessing for the
interfaces.
"""

import functools

from absl import app, flags

from albert_tf.core import cli, errors, settings
from albert_tf.core.config import AlbertConfig, check_max_seq_length
from albert_tf.training import flags as common_flags
from albert_tf.export.staging import check_output_dir
from albert_tf.core.startup import quiet_tensorflow_startup

FLAGS = flags.FLAGS
flags.DEFINE_enum("export_type", "model", ["model", "model_with_mlm", "preprocessing"],
                  "What to export: the encoder (model), the encoder with its `.mlm` object "
                  "(model_with_mlm), or the text preprocessing (preprocessing).")
flags.DEFINE_string("export_path", None,
                    "The SavedModel's directory (absent or empty); saved_model.pb goes there.")
flags.DEFINE_integer("default_seq_length", 128,
                     "preprocessing: the length of the root call's outputs and the default "
                     "seq_length of bert_pack_inputs; at most the encoder's "
                     "max_position_embeddings (the config of --albert_config_file or "
                     "--init_checkpoint, else the released models' 512).")
common_flags.define_export_model_flags()
# Model Garden's export_tfhub names.
flags.DEFINE_alias("sp_model_file", "spm_model_file")
flags.DEFINE_alias("model_checkpoint_path", "init_checkpoint")
flags.DEFINE_alias("bert_config_file", "albert_config_file")


@functools.cache
def opened_checkpoint():
  """--init_checkpoint, opened once (checkpoints.open_checkpoint), or None: the tokenizer, the
  config and the weights below are asked of it."""
  from albert_tf.checkpoints import open_checkpoint
  return open_checkpoint(FLAGS.init_checkpoint)


def tokenizer_settings():
  """The tokenizer to ship, a settings.TokenizerSettings: --spm_model_file or --vocab_file (the
  SentencePiece model of an HF directory or keras-hub preset --init_checkpoint by default:
  checkpoints.spm_model_file; or the tokenizer a fine-tuning output_dir kept:
  checkpoints.companions) and --do_lower_case. Raises UsageError when no file is known."""
  spm_model, vocab_file = common_flags.export_tokenizer_files(
      FLAGS.spm_model_file, FLAGS.vocab_file, opened_checkpoint())
  return settings.TokenizerSettings(spm_model_file=spm_model,
                                    vocab_file=None if spm_model else vocab_file,
                                    do_lower_case=FLAGS.do_lower_case)


def export_preprocessing(tokenizer):
  from albert_tf.export.tfhub import save_hub_model
  from albert_tf.export.tfhub_preprocessing import HubPreprocessor
  check_default_seq_length()
  root = HubPreprocessor(tokenizer, FLAGS.default_seq_length)
  return save_hub_model(root, FLAGS.export_path, flag="--export_path")


def encoder_config():
  """(config, where it came from) of the encoder a preprocessing export feeds: the config of
  --albert_config_file or --init_checkpoint (and its file), else the released models'."""
  from albert_tf.checkpoints import model_config
  if FLAGS.albert_config_file or FLAGS.init_checkpoint:
    try:
      return model_config(FLAGS.albert_config_file, opened_checkpoint())
    except errors.UsageError:
      pass  # an --init_checkpoint without a config (the original layout): as if none were given
  # Every released ALBERT (v1, v2, the Chinese ones) takes base v2's 512 positions.
  return (AlbertConfig.from_preset("base"),
          "the released models' configs, --albert_config_file not given")


def check_default_seq_length():
  """Raises UsageError unless --default_seq_length holds a packed pair and fits the encoder: a
  longer input exports, then fails in the encoder's position embeddings."""
  length = FLAGS.default_seq_length
  if length < 3:
    raise errors.UsageError(f"--default_seq_length={length}: a packed pair needs at least 3 "
                            "positions ([CLS] and two [SEP]); give 3 or more")
  check_max_seq_length(length, *encoder_config(), flag="--default_seq_length")


def export_encoder(tokenizer):
  from albert_tf.checkpoints import load_checkpoint, model_config
  from albert_tf.export.tfhub import HubEncoder, check_mlm_head, save_hub_model
  from albert_tf.models import AlbertModel, AlbertPretrainer
  from albert_tf.training import memory
  config, config_file = model_config(FLAGS.albert_config_file, opened_checkpoint())
  # Before the model is built: one that cannot fit is refused, not killed by the OOM killer.
  memory.check_model_build(config, "exporting the TF Hub encoder",
                           seq_length=config.max_position_embeddings, batch_size=0,
                           config_file=config_file)
  with_mlm = FLAGS.export_type == "model_with_mlm"
  model = AlbertPretrainer(config) if with_mlm else AlbertModel(config)
  report = load_checkpoint(model, opened_checkpoint())
  print(f"loaded {FLAGS.init_checkpoint}: {report}")
  if with_mlm:
    check_mlm_head(report, FLAGS.init_checkpoint)
  if any(name.startswith("bert/pooler/") for name in report.missing):
    print(f"WARNING: {FLAGS.init_checkpoint} has no pooler (as HF's AlbertForQuestionAnswering): "
          "pooled_output is computed by freshly initialised weights")
  root = HubEncoder(model, tokenizer, config_file)
  return save_hub_model(root, FLAGS.export_path, flag="--export_path")


def main(argv):
  del argv
  quiet_tensorflow_startup()  # before anything imports TensorFlow
  check_output_dir(FLAGS.export_path, "--export_path")  # before any work
  if FLAGS.export_type != "preprocessing" and not FLAGS.init_checkpoint:
    raise app.UsageError(f"--export_type={FLAGS.export_type} needs --init_checkpoint")
  tokenizer = tokenizer_settings()
  if FLAGS.export_type == "preprocessing":
    path = export_preprocessing(tokenizer)
  else:
    path = export_encoder(tokenizer)
  print(f"exported {path}")


def run():
  """The entry point (`python -m albert_tf.export_tfhub`, `albert-export-tfhub`)."""
  cli.run(main, required_flags=("export_path",))


if __name__ == "__main__":
  run()
