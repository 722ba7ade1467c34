"""How the input pipelines are tuned: tf.data's defaults, without its autotuning model.

The model runs in a background thread of each iterator that sleeps between its optimizations,
the sleep doubling as the iterator ages up to a minute. Deleting the iterator waits for that
sleep to end (TensorFlow 2.21 destroys the thread before cancelling it): a training run sat idle
for up to a minute after its last checkpoint, and each evaluation's iterator up to about its own
age. Without the model, the parallel maps run at tf.data's default parallelism (the host's
cores, at most 16) and prefetch(AUTOTUNE) sizes its buffer with tf.data's prefetch autotuner,
which needs no thread. The elements and their order are the same.
"""

import tensorflow as tf


def without_autotuning_model(dataset):
  """`dataset` with tf.data's autotuning model off (see the module docstring)."""
  options = tf.data.Options()
  options.autotune.enabled = False
  return dataset.with_options(options)
