"""Where a run's label names come from, in order: --label_list, the output_dir being resumed
(label_list.txt), the init checkpoint (an HF directory's id2label, or the label_list.txt beside
one of our checkpoints), the training set; and the check that a --label_list agrees with the
checkpoint's names. No TensorFlow."""

from albert_tf import errors
from albert_tf.labels import LABEL_FILE, checkpoint_label_names, read_label_file
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


def check_checkpoint_labels(label_names, checkpoint, training):
  """Refuses label names (from --label_list) that disagree with those `checkpoint` was trained
  with (the label_list.txt beside it, or an HF directory's id2label): its head's logit k is the
  checkpoint's label k, so another order would tag every word with the wrong names, and another
  count cannot load. With `training`, other names of the same count are a new tag set to learn
  (the head is only a start) and pass.

  Args:
    label_names: the run's names, in id order.
    checkpoint: --init_checkpoint, or None.
    training: whether the run trains (--do_train).

  Raises:
    errors.CheckpointError: naming both label lists (or counts) and the fix.
  """
  names = checkpoint_label_names(checkpoint)
  if names is None or names == list(label_names):
    return
  label_names = list(label_names)
  fix = ("drop --label_list to use the checkpoint's labels, or give them in its order: "
         f"--label_list={','.join(names)}")
  if len(names) != len(label_names):
    raise errors.CheckpointError(
        f"--label_list has {len(label_names)} labels but --init_checkpoint={checkpoint} has "
        f"{len(names)} ({' '.join(names)}): its head cannot take {len(label_names)}; {fix}")
  if sorted(names) == sorted(label_names):
    raise errors.CheckpointError(
        f"--label_list orders the labels {' '.join(label_names)} but --init_checkpoint="
        f"{checkpoint} was trained with {' '.join(names)}: every id would get another tag; "
        f"{fix}")
  if not training:
    raise errors.CheckpointError(
        f"--label_list names {' '.join(label_names)} but --init_checkpoint={checkpoint} was "
        f"trained with {' '.join(names)}: it cannot predict other tags without --do_train; "
        f"{fix}")
