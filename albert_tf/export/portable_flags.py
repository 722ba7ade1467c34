"""The flags export_tflite and export_onnx share, and the model they name. No TensorFlow at
import: the binaries quiet its start-up first."""

from absl import app, flags

FLAGS = flags.FLAGS


def define_flags(quantize_choices):
  """--albert_config_file, --init_checkpoint, --output_file, --max_seq_length, --quantize."""
  flags.DEFINE_string("albert_config_file", None,
                      "The model's albert_config.json; optional for a Hugging Face "
                      "--init_checkpoint (its config.json is read).")
  flags.DEFINE_string("init_checkpoint", None,
                      "Checkpoint to export, any layout (ours, the released one, Hugging "
                      "Face's): a prefix or a directory. Its head is exported with it: a "
                      "classifier's probabilities, SQuAD v1's start/end logits, a token "
                      "classifier's logits. Without it, random weights (for benchmarks).")
  flags.DEFINE_string("output_file", None, "The file to write.")
  flags.DEFINE_integer("max_seq_length", 128,
                       "The longest request served (at most the config's "
                       "max_position_embeddings); shorter ones run at their own length.")
  flags.DEFINE_enum("quantize", "none", list(quantize_choices), "Weight quantization.")
  flags.mark_flag_as_required("output_file")


def model_from_flags():
  """The loaded model --albert_config_file and --init_checkpoint name."""
  from albert_tf.checkpoints.hf import model_config  # pylint: disable=import-outside-toplevel
  from albert_tf.export.portable import check_max_seq_length, load_exportable_model  # pylint: disable=import-outside-toplevel
  try:
    config, _ = model_config(FLAGS.albert_config_file, FLAGS.init_checkpoint)
    check_max_seq_length(config, FLAGS.max_seq_length)
  except (ValueError, FileNotFoundError) as e:
    raise app.UsageError(str(e)) from e
  return load_exportable_model(config, FLAGS.init_checkpoint)


def report(output_file, size, model):
  from albert_tf.export.portable import parameter_count  # pylint: disable=import-outside-toplevel
  float_bytes = 4 * parameter_count(model)
  print(f"exported {output_file}: {size:,} bytes, {size / float_bytes:.3f}x the float32 "
        f"weights ({float_bytes:,} bytes)")
