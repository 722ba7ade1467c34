"""Exports a checkpoint as an ONNX file (tf2onnx), dynamic batch and length, each shared weight
once.

  python -m albert_tf.export_onnx --albert_config_file=model/albert_config.json \
      --init_checkpoint=model --output_file=albert.onnx --quantize=dynamic_range

Inputs input_ids, input_mask, segment_ids int32 [batch, length]; outputs sequence_output,
pooled_output and the checkpoint's head outputs (see export.portable).

--init_checkpoint is required (a fine-tuning output_dir exports its model.ckpt-best); --head
names the head where the checkpoint's can be read two ways (a classifier's [L, H] and a
tagger's); --random_weights exports fresh weights, for size/speed benchmarks only.
"""

from absl import flags

from albert_tf import cli
from albert_tf.export import portable_flags
from albert_tf.startup import quiet_tensorflow_startup

FLAGS = portable_flags.FLAGS
portable_flags.define_flags(("none", "dynamic_range"))
flags.DEFINE_integer("opset", 17, "The ONNX opset to target.")
flags.DEFINE_bool("ort_optimize", False,
                  "Apply ONNX Runtime's transformer fusions (attention, LayerNorm, GELU): "
                  "faster in ONNX Runtime, but the file then needs ONNX Runtime's own ops.")


def main(argv):
  del argv
  quiet_tensorflow_startup()  # before anything imports TensorFlow
  # pylint: disable-next=import-outside-toplevel
  from albert_tf.export.onnx import export_onnx, require_dependencies
  require_dependencies(FLAGS.quantize, FLAGS.ort_optimize)  # before the model loads
  model = portable_flags.model_from_flags()
  size = export_onnx(model, FLAGS.output_file, FLAGS.max_seq_length, FLAGS.quantize,
                     FLAGS.opset, FLAGS.ort_optimize)
  portable_flags.report(FLAGS.output_file, size, model)


def run():
  """The entry point (`python -m albert_tf.export_onnx`, `albert-export-onnx`)."""
  cli.run(main, required_flags=("output_file",))


if __name__ == "__main__":
  run()
