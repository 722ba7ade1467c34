"""The parameter counts of the paper's model variants (ALBERT paper, Tables 3 and 4).

  python tools/param_table.py --config=data/configs/albert_base_v2.json

Prints, for each parameter_sharing strategy and embedding size E in --embedding_sizes, the exact
parameter count of AlbertModel (embeddings, the E -> H projection when E != H, the encoder and
the pooler; no pretraining heads) next to the paper's rounded figure, where the paper gives one.
The counts come from `parameter_count`, a formula that
tests/checkpoints/test_parameter_sharing.py checks against built models; --build counts each
AlbertModel instead (slower: it builds every variant).

Importing this module loads neither TensorFlow nor albert_tf's models (the formula needs only
the config's sizes). A mistake is one `error:` line, as the binaries' (albert_tf.core.cli).
"""

import os
import sys

from absl import flags

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO_ROOT not in sys.path:
  sys.path.insert(0, REPO_ROOT)

from albert_tf.core import cli, errors  # noqa: E402 -- after the checkout is on sys.path
from albert_tf.core.config import PARAMETER_SHARING, AlbertConfig  # noqa: E402 -- after the checkout is on sys.path

FLAGS = flags.FLAGS

# The paper's ALBERT-base counts in millions, by (parameter_sharing, E): Table 3 (all-shared and
# not-shared for E = 64, 128, 256, 768) and Table 4 (every strategy at E = 768 and 128).
PAPER_MILLIONS = {
    ("all-shared", 64): 10, ("all-shared", 128): 12, ("all-shared", 256): 16,
    ("all-shared", 768): 31,
    ("not-shared", 64): 87, ("not-shared", 128): 89, ("not-shared", 256): 93,
    ("not-shared", 768): 108,
    ("shared-FFN", 128): 38, ("shared-FFN", 768): 57,
    ("shared-attention", 128): 64, ("shared-attention", 768): 83,
}


def parameter_count(config) -> int:
  """AlbertModel's parameter count (count_params()) for `config`, from the architecture.

  Args:
    config: an AlbertConfig (or anything with its sizes, parameter_sharing and
      num_parameter_groups).

  Returns:
    Embeddings (word, position and token-type tables of width E, their LayerNorm), the E -> H
    projection (none when E == H, as the original), the transformer's distinct blocks, the pooler.
  """
  e, h, i = config.embedding_size, config.hidden_size, config.intermediate_size
  layer_norm = 2 * h
  embeddings = (config.vocab_size + config.max_position_embeddings
                + config.type_vocab_size) * e + 2 * e
  projection = e * h + h if e != h else 0
  attention = 4 * (h * h + h) + layer_norm  # query, key, value, output dense; LayerNorm
  ffn = (h * i + i) + (i * h + h) + layer_norm  # intermediate, output dense; LayerNorm_1
  groups, layers = config.num_parameter_groups, config.num_hidden_layers
  per_block = {
      "all-shared": groups * (attention + ffn),
      "not-shared": groups * (attention + ffn),  # groups == layers
      "shared-attention": groups * attention + layers * ffn,
      "shared-FFN": groups * ffn + layers * attention,
  }[config.parameter_sharing]
  pooler = h * h + h
  return embeddings + projection + config.inner_group_num * per_block + pooler


def built_count(config) -> int:
  """count_params() of an AlbertModel built from `config` (every variable created)."""
  import albert_tf
  return albert_tf.AlbertModel(config).count_params()


def table(config, embedding_sizes, count=parameter_count) -> list:
  """Rows (parameter_sharing, E, exact count, the paper's millions or None) for every strategy
  and embedding size, `config` otherwise unchanged."""
  rows = []
  for sharing in PARAMETER_SHARING:
    for e in embedding_sizes:
      variant = config.replace(parameter_sharing=sharing, embedding_size=e)
      rows.append((sharing, e, count(variant), PAPER_MILLIONS.get((sharing, e))))
  return rows


def format_table(rows) -> str:
  """A Markdown table of `table`'s rows."""
  lines = ["| parameter_sharing | E | parameters | paper |", "|---|---|---|---|"]
  for sharing, e, count, paper in rows:
    lines.append(f"| {sharing} | {e} | {count:,} ({count / 1e6:.1f}M) | "
                 f"{f'{paper}M' if paper is not None else '-'} |")
  return "\n".join(lines)


def define_flags():
  flags.DEFINE_string("config", os.path.join(REPO_ROOT, "data", "configs",
                                             "albert_base_v2.json"),
                      "The albert_config.json whose variants are counted (the paper's are "
                      "ALBERT-base's).")
  flags.DEFINE_list("embedding_sizes", ["64", "128", "256", "768"], "The E values counted.")
  flags.DEFINE_bool("build", False, "Count built AlbertModels rather than by the formula.")


def embedding_sizes(values):
  """The --embedding_sizes as positive ints, else errors.UsageError naming the flag."""
  try:
    sizes = [int(e) for e in values]
  except ValueError:
    sizes = []
  if not sizes or min(sizes) < 1:
    raise errors.UsageError(f"--embedding_sizes={','.join(values)}: give positive integers "
                            "separated by commas, e.g. --embedding_sizes=128,768")
  return sizes


def main(argv):
  if len(argv) > 1:
    raise errors.UsageError(f"unexpected arguments {argv[1:]}: every setting is a --flag")
  sizes = embedding_sizes(FLAGS.embedding_sizes)
  try:
    config = AlbertConfig.from_json_file(FLAGS.config)
  except (FileNotFoundError, errors.ConfigError) as e:
    raise type(e)(f"--config={FLAGS.config}: {e}: give an albert_config.json") from None
  print(format_table(table(config, sizes, built_count if FLAGS.build else parameter_count)))


if __name__ == "__main__":
  define_flags()
  cli.run(main)
