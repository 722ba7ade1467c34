"""run_ner's flags (run_classifier's where they mean the same) and the body of its main().
Imports no TensorFlow."""

from absl import flags

from albert_tf.core import bounds
from albert_tf.tasks.ner import settings as ner_settings
from albert_tf.training import flags as common_flags

# The flags defined below are the binary's own (absl files them under the module that calls
# define_flags), so that its --help lists them under its name.
flags.disclaim_key_flags()


def define_flags():
  """Defines run_ner's flags; their bounds (ner_settings.FLAG_BOUNDS) join cli's check."""
  flags.DEFINE_string("data_dir", None,
                      "The input data dir: train.txt, dev.txt, test.txt (or eng.train, "
                      "eng.testa, eng.testb) in CoNLL format.")
  flags.DEFINE_string("cached_dir", None,
                      "Where the cached training and dev feature files are kept (default: "
                      "output_dir). Regenerated when missing or stale.")
  flags.DEFINE_bool("do_train", False, "Whether to run training.")
  flags.DEFINE_bool("do_eval", False, "Whether to run eval on the dev set.")
  flags.DEFINE_bool("do_predict", False, "Whether to tag the test set.")
  flags.DEFINE_integer("eval_batch_size", 8, "Total batch size for eval.")
  flags.DEFINE_integer("train_step", 1000, "Total number of training steps to perform.")
  flags.DEFINE_integer("warmup_step", 0,
                       "number of steps to perform linear learning rate warmup for.")
  flags.DEFINE_integer("doc_stride", 128,
                       "A sentence longer than max_seq_length - 2 pieces is cut into windows "
                       "starting this many pieces apart; each word is predicted from the window "
                       "where it has the most context.")
  flags.DEFINE_string("label_list", None,
                      "Comma-separated tags in id order (default: the checkpoint's label names, "
                      "else the training set's tags, O first).")
  flags.DEFINE_float("dropout_prob", 0.1, "Dropout on the sequence output before the tagger.")
  flags.DEFINE_bool("char_level", False,
                    "Character-level tagging (Chinese): split each word's CJK characters into "
                    "words of their own, its tag spread over them (B-X then I-X; O stays O; "
                    "BIOES: E-X on the last, S-X as B-X ... E-X), each run of other characters "
                    "kept as one word. Files of one character a line read the same either way. "
                    "Predictions and metrics are per character, and the SavedModel splits raw "
                    "text into characters too.")
  flags.DEFINE_string("export_dir", None,
                      "The directory where the exported SavedModel will be stored.")
  common_flags.define_serving_precision_flag()
  common_flags.define_finetuning_flags(max_seq_length=128, learning_rate=5e-5)
  bounds.register(ner_settings.FLAG_BOUNDS)


def run_job():
  """What run_ner's main() does once the flags parse: settings from the flags, then the NER job
  (its TensorFlow imported only now, so that --help answers at once)."""
  job_settings = common_flags.classifier_settings(ner_settings.NerSettings, flags.FLAGS)
  job_settings.check_inputs()  # before the job loads TensorFlow
  with common_flags.running_job():
    from albert_tf.tasks.ner.job import NerJob
    NerJob(job_settings).run()
