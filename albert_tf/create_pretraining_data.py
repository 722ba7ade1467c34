"""Creates ALBERT pretraining TFRecords (n-gram masked LM, sentence order) from raw text.

  python -m albert_tf.create_pretraining_data --input_file=corpus.txt \
      --output_file=train.tfrecord --spm_model_file=30k-clean.model --vocab_file=unused

Same flags and, for the same inputs and seed, the same records as the original. `--num_workers`
processes input files in parallel, one output file per input file, file i seeded with
random_seed + i; `--beam_pipeline_options` does the same as an Apache Beam pipeline (DirectRunner,
Dataflow, Flink, Spark), reading and writing through Beam's FileSystems. `--output_file=out/` (an
existing directory, or any path ending in '/', created if missing) writes
`out/<input base name>.tfrecord` per input.

Flags that would write useless records (no masked positions, no instances) and outputs that would
be one file (inputs with the same base name into one directory) are refused before any work.
Outputs are written as `.<name>.tmp-<pid>` beside them and renamed when complete: a failed run
leaves neither a temporary nor a partial output. The last line says how much of what was written
is padding (real tokens over records x max_seq_length) and how many sequences a row
run_pretraining --pack_sequences would fit (tools/padding_report.py measures existing files).
"""

from absl import app, flags

from albert_tf.core import cli, errors, path_checks

from albert_tf.core.settings import TokenizerSettings, from_values
from albert_tf.core.startup import quiet_tensorflow_startup

from albert_tf.core import io as files
from albert_tf.data import padding
from albert_tf.data.instances import InstanceOptions
from albert_tf.tokenization.chinese_words import SEGMENTERS
from albert_tf.data.pretraining_data import (GenerationSettings, Progress,
                                             check_one_output_per_input, check_output_files,
                                             check_settings, default_output_files, generate,
                                             generate_per_file)

FLAGS = flags.FLAGS

flags.DEFINE_string("input_file", None,
                    "Input raw text file (or comma-separated list of files; globs allowed).")
flags.DEFINE_string("output_file", None,
                    "Output TF example file (or comma-separated list of files), or a directory "
                    "(an existing one, or a path ending in '/', created if missing) for "
                    "<input base name>.tfrecord per input.")
flags.DEFINE_string("vocab_file", None,
                    "The vocabulary file that the ALBERT model was trained on.")
flags.DEFINE_string("spm_model_file", None, "The model file for sentence piece tokenization.")
flags.DEFINE_string("input_file_mode", "r", "The data format of the input file (kept for "
                    "compatibility; input is read as UTF-8 text).")
flags.DEFINE_bool("do_lower_case", True,
                  "Whether to lower case the input text. Should be True for uncased models and "
                  "False for cased models.")
flags.DEFINE_bool("do_whole_word_mask", True,
                  "Whether to use whole word masking rather than per-WordPiece masking.")
flags.DEFINE_bool("whole_word_mask", None,
                  "The same setting as --do_whole_word_mask (BERT's and ALBERT's name), default "
                  "True: mask every piece of a word together (WordPiece: a word and its ## "
                  "pieces, as BERT; SentencePiece: ALBERT's start-piece rule); an n-gram is "
                  "then a run of whole words. Giving both names with different values "
                  "is an error.")
flags.DEFINE_enum("chinese_word_segmentation", None, list(SEGMENTERS),
                  "Segment each line into Chinese words so that whole-word masking masks a word "
                  "whole: the later characters of a multi-character word are joined to it as "
                  "## pieces would be, their ids (and masked-LM labels) those of the plain "
                  "characters (the Chinese BERT-wwm scheme). Needs a WordPiece --vocab_file and "
                  "the chinese extra (jieba).")
flags.DEFINE_bool("do_permutation", False, "Whether to do the permutation training.")
flags.DEFINE_bool("favor_shorter_ngram", True,
                  "Whether to set higher probabilities for sampling shorter ngrams.")
flags.DEFINE_bool("random_next_sentence", False,
                  "Whether to use the sentence that's right before the current sentence as the "
                  "negative sample for next sentence prection, rather than using sentences from "
                  "other random documents.")
flags.DEFINE_integer("max_seq_length", 512, "Maximum sequence length.")
flags.DEFINE_integer("ngram", 3, "Maximum number of ngrams to mask.")
flags.DEFINE_integer("max_predictions_per_seq", 20,
                     "Maximum number of masked LM predictions per sequence.")
flags.DEFINE_integer("random_seed", 12345, "Random seed for data generation.")
flags.DEFINE_integer("dupe_factor", 40,
                     "Number of times to duplicate the input data (with different masks).")
flags.DEFINE_float("masked_lm_prob", 0.15, "Masked LM probability.")
flags.DEFINE_float("short_seq_prob", 0.1,
                   "Probability of creating sequences which are shorter than the maximum length.")
flags.DEFINE_integer("num_workers", 0,
                     "If > 0, process input files in parallel with this many processes, one "
                     "output file per input file (file i seeded with random_seed + i).")
flags.DEFINE_string("beam_pipeline_options", None,
                    "If set, run as an Apache Beam pipeline with these comma-separated pipeline "
                    "options (e.g. \"--runner=DataflowRunner,--project=P,--region=R,"
                    "--temp_location=gs://b/tmp\"): one element per input file, one output "
                    "file per input file, file i seeded with random_seed + i as with "
                    "--num_workers.")


def whole_word_mask_from_flags():
  """The whole-word-masking setting of --whole_word_mask and --do_whole_word_mask (one setting
  under two names).

  Raises:
    errors.UsageError: both given, with different values.
  """
  ours, theirs = FLAGS.whole_word_mask, FLAGS["do_whole_word_mask"]
  if ours is None:
    return theirs.value
  if theirs.present and theirs.value != ours:
    raise errors.UsageError(
        f"--whole_word_mask={ours} and --do_whole_word_mask={theirs.value} disagree: they are "
        "one setting under two names; give one of them")
  return ours


def settings_from_flags():
  return GenerationSettings(
      tokenizer=from_values(TokenizerSettings, FLAGS), ngram=FLAGS.ngram,
      favor_shorter_ngram=FLAGS.favor_shorter_ngram, dupe_factor=FLAGS.dupe_factor,
      random_seed=FLAGS.random_seed,
      instance=InstanceOptions(
          max_seq_length=FLAGS.max_seq_length, short_seq_prob=FLAGS.short_seq_prob,
          masked_lm_prob=FLAGS.masked_lm_prob,
          max_predictions_per_seq=FLAGS.max_predictions_per_seq,
          do_whole_word_mask=whole_word_mask_from_flags(), do_permutation=FLAGS.do_permutation,
          random_next_sentence=FLAGS.random_next_sentence),
      chinese_word_segmentation=FLAGS.chinese_word_segmentation)


def main(argv):
  del argv
  quiet_tensorflow_startup()  # before anything imports TensorFlow
  # Before Beam or TensorFlow loads; a remote pattern is left to the expansion below.
  path_checks.check_input_patterns("input_file", FLAGS.input_file,
                                   "give text files (files or globs, comma-separated)")
  settings = settings_from_flags()
  if FLAGS.beam_pipeline_options and FLAGS.num_workers > 0:
    raise app.UsageError("--num_workers and --beam_pipeline_options both parallelise over input "
                         "files: give one of them (the Beam runner's own options set its "
                         "workers, e.g. --direct_num_workers)")
  if FLAGS.beam_pipeline_options:
    # Before anything is read: without the beam extra, one line naming it.
    errors.require_installed("apache_beam", "beam",
                            "create_pretraining_data --beam_pipeline_options")
    from albert_tf.data import beam_runner
    with beam_runner.quiet_beam():  # Beam's import and its local workers print notices
      _generate(settings)
  else:
    _generate(settings)


def _generate(settings):
  """Checks the inputs and outputs, then generates (in one of the three ways).

  Args:
    settings: the GenerationSettings of the flags.
  """
  isdir, match_remote = files.isdir, None
  if FLAGS.beam_pipeline_options:
    from albert_tf.data import beam_generation
    isdir, match_remote = beam_generation.is_local_dir, beam_generation.match_pattern
  try:
    check_settings(settings)
    input_files = files.expand_input_patterns(FLAGS.input_file, match_remote)
    output_files = default_output_files(input_files, FLAGS.output_file, isdir)
    check_output_files(input_files, output_files, isdir)
    if FLAGS.beam_pipeline_options or FLAGS.num_workers > 0:
      check_one_output_per_input(input_files, output_files,
                                 "--beam_pipeline_options" if FLAGS.beam_pipeline_options
                                 else "--num_workers")
  except ValueError as e:
    raise app.UsageError(str(e)) from None
  if FLAGS.beam_pipeline_options:
    stats = beam_generation.run_pipeline(input_files, output_files, settings,
                                         FLAGS.beam_pipeline_options)
  elif FLAGS.num_workers > 0:
    stats = generate_per_file(input_files, output_files, settings, FLAGS.num_workers)
  else:
    stats = generate(input_files, output_files, settings, Progress())
  Progress().log(f"done: {stats}")
  Progress().log(padding.summary_line(written_stats(stats, settings)))


def written_stats(stats, settings):
  """The padding.PaddingStats of the records a run wrote, from its counts.

  Args:
    stats: generate's (or the per-file modes' summed) counts: instances, real_tokens,
      packed_rows.
    settings: the run's GenerationSettings.
  """
  length = settings.instance.max_seq_length
  return padding.PaddingStats(
      records=stats["instances"], real_tokens=stats["real_tokens"],
      positions=stats["instances"] * length, packed_rows=stats["packed_rows"],
      max_seq_length=length)


def run():
  """The entry point (`python -m albert_tf.create_pretraining_data`,
  `albert-create-pretraining-data`)."""
  cli.run(main, required_flags=("input_file", "output_file"))


if __name__ == "__main__":
  run()
