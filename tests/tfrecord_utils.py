"""Reading TFRecords of tf.train.Examples into plain dicts, for feature-by-feature comparison."""

import tensorflow as tf


def read_examples(path):
  out = []
  for record in tf.data.TFRecordDataset(path):
    example = tf.train.Example.FromString(record.numpy())
    features = {}
    for name, feature in example.features.feature.items():
      kind = feature.WhichOneof("kind")
      features[name] = list(getattr(feature, kind).value)
    out.append(features)
  return out
