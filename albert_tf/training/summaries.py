"""TensorBoard scalars written with core TensorFlow (tf.summary.scalar needs the tensorboard
package installed; tf.summary.write with the scalar plugin's metadata does not)."""

import tensorflow as tf
from tensorflow.core.framework import summary_pb2

_SCALAR_METADATA = summary_pb2.SummaryMetadata(
    plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars"),
    data_class=summary_pb2.DATA_CLASS_SCALAR)


def write_scalars(writer, step, values):
  """Writes {tag: float} at `step` and flushes."""
  with writer.as_default():
    for tag, value in values.items():
      tf.summary.write(tag, tf.constant(float(value), tf.float32), step=step,
                       metadata=_SCALAR_METADATA)
  writer.flush()
