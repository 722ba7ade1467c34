"""Exports a checkpoint as a TFLite (LiteRT) file: builtin ops only, each shared weight once.

  python -m albert_tf.export_tflite --albert_config_file=model/albert_config.json \
      --init_checkpoint=model --output_file=albert.tflite --quantize=dynamic_range

Signature serving_default: input_ids, input_mask, segment_ids int32 [batch, length] ->
sequence_output, pooled_output and the checkpoint's head outputs (see export.portable). Run it
with ai_edge_litert.interpreter.Interpreter(...).get_signature_runner("serving_default").

--init_checkpoint is required (a fine-tuning output_dir exports its model.ckpt-best); --head
names the head where the checkpoint's can be read two ways (a classifier's [L, H] and a
tagger's); --random_weights exports fresh weights, for size/speed benchmarks only.

An existing --output_file is refused, before any work, unless --overwrite; the file is written
atomically.
"""

from albert_tf.core import cli
from albert_tf.export import portable_flags
from albert_tf.export.staging import check_output_file
from albert_tf.core.startup import quiet_tensorflow_startup

FLAGS = portable_flags.FLAGS
portable_flags.define_flags(("none", "float16", "dynamic_range"))


def main(argv):
  del argv
  quiet_tensorflow_startup()  # before anything imports TensorFlow
  # Before any work: a conversion takes minutes.
  check_output_file(FLAGS.output_file, FLAGS.overwrite, "--output_file")
  from albert_tf.export.tflite import export_tflite
  model = portable_flags.model_from_flags()
  size = export_tflite(model, FLAGS.output_file, FLAGS.max_seq_length, FLAGS.quantize,
                       overwrite=FLAGS.overwrite)
  portable_flags.report(FLAGS.output_file, size, model)


def run():
  """The entry point (`python -m albert_tf.export_tflite`, `albert-export-tflite`)."""
  cli.run(main, required_flags=("output_file",))


if __name__ == "__main__":
  run()
