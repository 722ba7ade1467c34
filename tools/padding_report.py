"""How much of existing pretraining records is padding, and what packing them would give.

  python tools/padding_report.py --input_file='records/*.tfrecord' [--max_sequences_per_row=4]
      [--json]

For each TFRecord file (and in total, for several), without TensorFlow: the records, their
max_seq_length, the mean real length (input_mask ones), the real-token fraction (real tokens over
records x max_seq_length), a histogram of the lengths, and what run_pretraining --pack_sequences
with --max_sequences_per_row would give: the rows the records fill when each window of 256 of
them (in file order) is packed first-fit decreasing into rows of max_seq_length, at most that
many sequences a row, and the gain in real tokens per row (records per packed row). A gain near
1 means the records hardly pad: packing would not pay.

--json prints one JSON object instead: {"files": [{"file": ..., "records": ...,
"real_token_fraction": ..., "sequences_per_row": ..., "histogram": [...]}, ...], "total": {...}}.
A mistake is one `error:` line, as the binaries' (albert_tf.core.cli): exit status 2 for a flag
or a missing file, 1 for a file that is not a TFRecord file of tf.train.Examples.
"""

import json
import os
import sys

from absl import flags

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO_ROOT not in sys.path:
  sys.path.insert(0, REPO_ROOT)

from albert_tf.core import cli, errors, path_checks  # noqa: E402 -- after the checkout is on sys.path
from albert_tf.core import io as files  # noqa: E402 -- after the checkout is on sys.path
from albert_tf.data import padding  # noqa: E402 -- after the checkout is on sys.path

FLAGS = flags.FLAGS
flags.DEFINE_string("input_file", None,
                    "TFRecord files of create_pretraining_data (or of a fine-tuning task): "
                    "comma-separated files or globs.")
flags.DEFINE_integer("max_sequences_per_row", padding.DEFAULT_MAX_SEQUENCES_PER_ROW,
                     "As run_pretraining's flag: the most sequences a packed row holds.",
                     lower_bound=1)
flags.DEFINE_bool("json", False, "Print one JSON object instead of the text report.")


def _percent(count, total):
  return f" ({100 * count / total:.1f}%)" if count and total else ""


def _bucket_label(bounds):
  low, high = bounds
  if low == 0:
    return f"<={high}"
  return str(high) if low == high else f"{low}-{high}"


def describe(name, stats):
  """The text report on one file's (or the total's) PaddingStats: a list of lines."""
  if not stats.records:
    return [f"{name}: no records"]
  length = stats.max_seq_length
  lines = [f"{name}: {stats.records} records of max_seq_length "
           f"{length if length else 'differing between files'}",
           f"  mean real length {stats.mean_length:.1f} tokens, real-token fraction "
           f"{stats.real_token_fraction:.3f}"]
  if length and stats.histogram is not None:
    lines.append("  lengths: " + "  ".join(
        f"{_bucket_label(bounds)}: {n}{_percent(n, stats.records)}"
        for bounds, n in zip(padding.bucket_bounds(length), stats.histogram)))
  gain = stats.sequences_per_row
  verdict = (": packing would gain little" if gain < padding.WORTHWHILE_SEQUENCES_PER_ROW
             else "")
  lines.append(f"  packed, at most {stats.max_sequences_per_row} sequences a row (first-fit "
               f"decreasing, windows of {padding.PACKING_WINDOW} records): "
               f"{stats.packed_rows} rows, {stats.rows_per_record:.3f} a record, "
               f"{gain:.2f}x the real tokens per row{verdict}")
  return lines


def file_stats(path):
  """padding.file_stats of `path`, a malformed file's error naming --input_file."""
  try:
    return padding.file_stats(path, FLAGS.max_sequences_per_row)
  except errors.DataFormatError as e:
    raise errors.DataFormatError(f"--input_file: {e}") from None


def main(argv):
  if len(argv) > 1:
    raise errors.UsageError(f"unexpected arguments {argv[1:]}: every setting is a --flag")
  fix = "give TFRecord files (files or globs, comma-separated)"
  path_checks.check_input_patterns("input_file", FLAGS.input_file, fix)
  paths = files.expand_input_patterns(FLAGS.input_file)
  per_file = [(path, file_stats(path)) for path in paths]
  total = padding.PaddingStats.combine(stats for _, stats in per_file)
  if FLAGS.json:
    print(json.dumps({"files": [dict(file=path, **stats.to_dict()) for path, stats in per_file],
                      "total": total.to_dict()}, indent=1))
    return
  lines = []
  for path, stats in per_file:
    lines += describe(path, stats)
  if len(per_file) > 1:
    lines += describe(f"total ({len(per_file)} files)", total)
  print("\n".join(lines))


if __name__ == "__main__":
  cli.run(main, required_flags=("input_file",))
