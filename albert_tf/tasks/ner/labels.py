"""Where a run's label names come from, in order: --label_list, the output_dir being resumed
(label_list.txt), the init checkpoint (an HF directory's id2label, or the label_list.txt beside
one of our checkpoints), the training set; and the check that a --label_list agrees with the
checkpoint's names. No TensorFlow."""

# check_checkpoint_labels is shared with run_classifier's own-data runs:
# albert_tf.checkpoints.labels.
from albert_tf.checkpoints.labels import LABEL_FILE, check_checkpoint_labels  # noqa: F401 -- shared
from albert_tf.checkpoints.labels import checkpoint_label_names, read_label_file
from albert_tf.tasks.ner import data


def resolve_labels(label_list, output_dir, init_checkpoint, train_sentences):
  """(label names, where they came from) of a run.

  Raises:
    NerDataError: no source gives them (a run without --do_train, --label_list or a labelled
      checkpoint).
  """
  if label_list:
    return data.parse_label_list(label_list), "--label_list"
  for names, source in ((read_label_file(output_dir), f"{output_dir}/{LABEL_FILE}"),
                        (checkpoint_label_names(init_checkpoint), init_checkpoint)):
    if names:
      return names, source
  if train_sentences is not None:
    return data.labels_of(train_sentences), "the training set"
  raise data.NerDataError(
      "no label list: give --label_list (comma-separated tags), or --do_train (the training "
      "set's tags), or an --output_dir / --init_checkpoint of a run_ner model")
