"""The flags export_tflite and export_onnx share, and the model they name. No TensorFlow at
import: the binaries quiet its start-up first."""

from absl import flags

from albert_tf.core import errors
from albert_tf.export import staging
from albert_tf.export.portable_heads import HEADS

FLAGS = flags.FLAGS


def define_flags(quantize_choices):
  """--albert_config_file, --init_checkpoint, --random_weights, --head, --output_file,
  --overwrite, --max_seq_length, --quantize."""
  flags.DEFINE_string("albert_config_file", None,
                      "The model's albert_config.json; optional for a Hugging Face "
                      "--init_checkpoint (its config.json is read), a keras-hub preset, and a "
                      "run's output_dir or a prefix in it (its albert_config.json).")
  flags.DEFINE_string("init_checkpoint", None,
                      "Checkpoint to export, any layout (ours, the released one, Hugging "
                      "Face's): a prefix or a directory. Its head is exported with it: a "
                      "classifier's probabilities, SQuAD v1's start/end logits, a token "
                      "classifier's logits. Required, unless --random_weights.")
  flags.DEFINE_bool("random_weights", False,
                    "Export freshly initialised weights instead of a checkpoint's (no "
                    "--init_checkpoint): for file-size and speed benchmarks only, its outputs "
                    "mean nothing.")
  flags.DEFINE_enum("head", "auto", list(HEADS),
                    "The head to export with the encoder: auto (the checkpoint's), none (the "
                    "encoder alone), classifier (probabilities [B, L]), squad_v1 (start/end "
                    "logits [B, T]), token_classifier (run_ner's logits [B, T, L]). Give it when "
                    "the checkpoint's head can be read two ways (a classifier's output_weights "
                    "and a tagger's have the same names and shapes).")
  flags.DEFINE_string("output_file", None, "The file to write.")
  staging.define_overwrite_flag()
  flags.DEFINE_integer("max_seq_length", 128,
                       "The longest request served (at most the config's "
                       "max_position_embeddings); shorter ones run at their own length.")
  flags.DEFINE_enum("quantize", "none", list(quantize_choices), "Weight quantization.")
  flags.mark_flag_as_required("output_file")


def model_from_flags():
  """The loaded model --albert_config_file and --init_checkpoint name (or, with
  --random_weights, a freshly initialised encoder).

  Raises:
    errors.UsageError: neither --init_checkpoint nor --random_weights, or both; a config or
      --max_seq_length that cannot work.
    errors.CheckpointError: as export.portable.load_exportable_model.
  """
  from albert_tf.checkpoints import model_config, open_checkpoint
  from albert_tf.export.portable import check_serving_length, load_exportable_model
  from albert_tf.training import memory
  if FLAGS.random_weights and FLAGS.init_checkpoint:
    raise errors.UsageError(f"--init_checkpoint={FLAGS.init_checkpoint} and --random_weights: "
                            "give one (random weights are for size/speed benchmarks only)")
  if not FLAGS.random_weights and not FLAGS.init_checkpoint:
    raise errors.UsageError("--init_checkpoint is not given: name the checkpoint to export (a "
                            "prefix or a directory), or give --random_weights for a size/speed "
                            "benchmark with freshly initialised weights")
  if FLAGS.random_weights and FLAGS.head != "auto":
    raise errors.UsageError(f"--head={FLAGS.head} with --random_weights: random weights export "
                            "the encoder alone; drop --head")
  checkpoint = open_checkpoint(FLAGS.init_checkpoint)  # the config and weights are asked of it
  try:
    config, config_file = model_config(FLAGS.albert_config_file, checkpoint)
    check_serving_length(config, FLAGS.max_seq_length, config_file)
  except (ValueError, FileNotFoundError) as e:
    if isinstance(e, errors.AlbertError):
      raise
    raise errors.UsageError(str(e)) from e
  # Before the model is built: one that cannot fit is refused, not killed by the OOM killer.
  memory.check_model_build(config, "exporting the portable model",
                           seq_length=FLAGS.max_seq_length, config_file=config_file)
  return load_exportable_model(config, checkpoint, FLAGS.head)


def report(output_file, size, model):
  from albert_tf.export.portable import parameter_count
  float_bytes = 4 * parameter_count(model)
  print(f"exported {output_file}: {size:,} bytes, {size / float_bytes:.3f}x the float32 "
        f"weights ({float_bytes:,} bytes)")
