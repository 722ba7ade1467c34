"""Exports a checkpoint as an ONNX file (tf2onnx), dynamic batch and length, each shared weight
once.

  python -m albert_tf.export_onnx --albert_config_file=model/albert_config.json \
      --init_checkpoint=model --output_file=albert.onnx --quantize=dynamic_range

  python -m albert_tf.export_onnx --init_checkpoint=mrpc_output --output_file=albert.onnx \
      --quantize=static --calibration_data=mrpc_output/mrpc_train.tf_record

--quantize=static fixes the int8 activations' ranges from --calibration_examples examples of
--calibration_data (a TFRecord of input_ids/input_mask/segment_ids features, as the fine-tuning
binaries cache them: export.calibration), --quant_format=qdq|qoperator (see export.onnx).

Inputs input_ids, input_mask, segment_ids int32 [batch, length]; outputs sequence_output,
pooled_output and the checkpoint's head outputs (see export.portable).

--init_checkpoint is required (a fine-tuning output_dir exports its model.ckpt-best); --head
names the head where the checkpoint's can be read two ways (a classifier's [L, H] and a
tagger's); --random_weights exports fresh weights, for size/speed benchmarks only.

An existing --output_file is refused, before any work, unless --overwrite; the file is written
atomically. ONNX Runtime's quantizer notices are shown with --verbose only.
"""

from absl import flags

from albert_tf.core import cli
from albert_tf.core import errors, path_checks
from albert_tf.export import portable_flags
from albert_tf.export.staging import check_output_file
from albert_tf.core.startup import quiet_tensorflow_startup

FLAGS = portable_flags.FLAGS
portable_flags.define_flags(("none", "dynamic_range", "static"))
flags.DEFINE_integer("opset", 17, "The ONNX opset to target.")
flags.DEFINE_bool("ort_optimize", False,
                  "Apply ONNX Runtime's transformer fusions (attention and GELU, where it "
                  "finds them) before quantizing; the file then needs ONNX Runtime's own ops.")
flags.DEFINE_string("calibration_data", None,
                    "--quantize=static: a TFRecord of the task's features (int64 input_ids, "
                    "input_mask, segment_ids of at most --max_seq_length values, as "
                    "run_classifier or create_pretraining_data writes them) that fixes the int8 "
                    "activations' ranges.")
flags.DEFINE_integer("calibration_examples", 128,
                     "--quantize=static: how many of --calibration_data's first examples to "
                     "calibrate on.", lower_bound=1)
flags.DEFINE_bool("reduce_range", True,
                  "int8 files: weights in 7 bits, as ONNX Runtime advises for CPUs without VNNI "
                  "(AVX2), where its int8 kernel adds pairs of products in int16 that 8-bit "
                  "weights overflow, silently (ALBERT-base: cosine to float32 0.987 against "
                  "0.9994). --noreduce_range: 8-bit weights, for files that run only on CPUs "
                  "with VNNI or AMX-INT8 (cosine 0.9998 there).")
flags.DEFINE_enum("quant_format", "qdq", ["qdq", "qoperator"],
                  "--quantize=static: how the file spells int8: qdq (QuantizeLinear/"
                  "DequantizeLinear around float ops, fused by ONNX Runtime at load; its "
                  "recommended CPU format) or qoperator (QLinearMatMul ops).")


def main(argv):
  del argv
  quiet_tensorflow_startup()  # before anything imports TensorFlow
  # Before any work: a conversion takes minutes.
  check_output_file(FLAGS.output_file, FLAGS.overwrite, "--output_file")
  check_calibration_flags()
  from albert_tf.export.onnx import check_fusions, export_onnx, require_dependencies
  check_fusions(FLAGS.quantize, FLAGS.ort_optimize)
  require_dependencies(FLAGS.quantize, FLAGS.ort_optimize)  # before the model loads
  model = portable_flags.model_from_flags()
  calibration = calibration_from_flags(model.config)  # before the conversion
  size = export_onnx(model, FLAGS.output_file, FLAGS.max_seq_length, FLAGS.quantize,
                     FLAGS.opset, FLAGS.ort_optimize, calibration, FLAGS.quant_format,
                     FLAGS.reduce_range, overwrite=FLAGS.overwrite, verbose=FLAGS.verbose)
  portable_flags.report(FLAGS.output_file, size, model)


def check_calibration_flags():
  """Raises errors.UsageError for --calibration_data given without --quantize=static, or
  --noreduce_range without int8."""
  if FLAGS.quantize == "none" and not FLAGS.reduce_range:
    raise errors.UsageError("--noreduce_range with --quantize=none: the weights' range is for "
                            "int8 files; drop the flag or give --quantize")
  if FLAGS.quantize != "static" and FLAGS.calibration_data:
    raise errors.UsageError(f"--calibration_data={FLAGS.calibration_data} with "
                            f"--quantize={FLAGS.quantize}: calibration is for --quantize=static;"
                            " drop the flag or quantize statically")
  if FLAGS.quantize == "static":  # before TensorFlow loads; a remote file is left to the reader
    path_checks.check_data_file("calibration_data", FLAGS.calibration_data,
                                "give a TFRecord of the task's features (input_ids, input_mask, "
                                "segment_ids)")


def calibration_from_flags(config):
  """--calibration_data's examples for --quantize=static (None otherwise), checked against the
  model's AlbertConfig `config` (its ids must be the model's).

  Raises:
    errors.UsageError: --calibration_data missing for --quantize=static, or naming no file.
    errors.DataFormatError: a file read_calibration_examples refuses.
  """
  from albert_tf.export.calibration import read_calibration_examples
  if FLAGS.quantize != "static":
    return None
  return read_calibration_examples(FLAGS.calibration_data, config, FLAGS.max_seq_length,
                                   FLAGS.calibration_examples)


def run():
  """The entry point (`python -m albert_tf.export_onnx`, `albert-export-onnx`)."""
  cli.run(main, required_flags=("output_file",))


if __name__ == "__main__":
  run()
