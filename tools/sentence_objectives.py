"""The ALBERT paper's Table 5 (sentence-prediction objectives: None, NSP, SOP) at laptop scale.

  python tools/sentence_objectives.py --output_dir=work/sentence_objectives

From one corpus (default: the bundled sample corpus, plus the prose of the Python standard
library's docstrings: tools/docstring_corpus.py, PSF License, hundreds of documents on many
subjects), in --output_dir:
1. its documents split, seeded, into training and held-out ones (data/train.txt,
   data/heldout.txt): no held-out document is ever trained on;
2. a SentencePiece model trained on the training documents (tools/train_sentencepiece.py, the
   --config's vocabulary size) unless --spm_model_file is given; then create_pretraining_data's
   sentence-order records (its default) and next-sentence records (its --random_next_sentence:
   the second segment from another document half the time) of the training documents, and of
   the held-out ones;
3. three models pretrained identically (the same config, seeds, steps, batch, learning rate)
   with run_pretraining: None (the masked LM alone, --sentence_order_loss_weight=0, on the
   sentence-order records), NSP (on the next-sentence records), SOP (on the sentence-order
   records), in models/<objective>;
4. each model evaluated on the held-out sentence-order and next-sentence records (evals/): the
   sentence loss's accuracy on the next-sentence records is its NSP accuracy. Each held-out set
   is balanced first (a seeded sample of its majority label dropped: as many 0 as 1 labels), so
   that chance is 50% whatever the corpus's labels are (a one-sentence chunk is paired with a
   random segment and labelled 1, in the sentence-order records too, as in the original);
5. the table (held-out MLM, NSP, SOP accuracy per objective) printed beside the paper's, and
   written to table5.json.

Every step keeps its outputs: run again, it reuses the split, the vocabulary and the records, and
a model already trained to --train_steps is not trained again (a shorter one resumes). A
changed setting needs a new --output_dir. A mistake is one `error:` line, as the binaries'
(albert_tf.core.cli): exit status 2 for a flag, 1 for a file.
"""

import json
import os
import random
import subprocess
import sys
import time

from absl import flags

from albert_tf.core import cli, errors, io
from albert_tf.data.corpus import read_corpus_documents, write_corpus_documents

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import docstring_corpus

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_CORPUS = os.path.join(REPO_ROOT, "data", "sample", "corpus.txt")
DEFAULT_CONFIG = os.path.join(REPO_ROOT, "data", "configs", "tiny_quickstart.json")
TRAIN_SENTENCEPIECE = os.path.join(REPO_ROOT, "tools", "train_sentencepiece.py")

# The paper's Table 5 (ALBERT base, not shared; arXiv 1909.11942): the intrinsic accuracies, as
# fractions.
PAPER = {
    "None": {"mlm_accuracy": 0.549, "nsp_accuracy": 0.524, "sop_accuracy": 0.533},
    "NSP": {"mlm_accuracy": 0.545, "nsp_accuracy": 0.905, "sop_accuracy": 0.520},
    "SOP": {"mlm_accuracy": 0.540, "nsp_accuracy": 0.789, "sop_accuracy": 0.865},
}
OBJECTIVES = ("None", "NSP", "SOP")
# Which training records and sentence-loss weight each objective trains with.
TRAINING = {"None": ("sop", 0.0), "NSP": ("nsp", 1.0), "SOP": ("sop", 1.0)}
METRICS = ("mlm_accuracy", "nsp_accuracy", "sop_accuracy")
HEADERS = {"mlm_accuracy": "MLM acc", "nsp_accuracy": "NSP acc", "sop_accuracy": "SOP acc"}

# --quick: a few steps of everything, for the test suite (the numbers mean nothing); no XLA,
# whose compilation takes longer than a few steps.
QUICK = {"train_steps": 4, "batch_size": 8, "max_seq_length": 32, "dupe_factor": 1,
         "max_predictions_per_seq": 5, "heldout_dupe_factor": 1, "jit_compile": False,
         "stdlib_documents": 40}

FLAGS = flags.FLAGS


def define_flags():
  """The tool's flags (defined when it runs, not when a test imports it: absl holds one
  set of flags a process, and create_pretraining_data's --spm_model_file is another)."""
  flags.DEFINE_string("output_dir", None, "Where the data, the models and table5.json go.")
  flags.DEFINE_string("corpus", DEFAULT_CORPUS,
                      "Corpus file(s), comma-separated (one sentence a line, blank lines between "
                      "documents). Default: the bundled sample corpus.")
  flags.DEFINE_bool("stdlib_docstrings", True,
                    "Add the Python standard library's docstrings to --corpus, each docstring "
                    "with 3 sentences of prose or more a document (tools/docstring_corpus.py).")
  flags.DEFINE_string("config", DEFAULT_CONFIG, "The albert_config.json of the three models.")
  flags.DEFINE_string("spm_model_file", None,
                      "A SentencePiece model of the --config's vocabulary size. Default: one "
                      "trained on the training documents.")
  flags.DEFINE_float("heldout_fraction", 0.2, "Fraction of the documents held out for evaluation.",
                     lower_bound=0.0, upper_bound=1.0)
  flags.DEFINE_integer("train_steps", 600, "Training steps of each model.", lower_bound=1)
  flags.DEFINE_integer("batch_size", 64, "Training batch size.", lower_bound=1)
  flags.DEFINE_integer("max_seq_length", 64, "Sequence length of the records and the models.",
                       lower_bound=8)
  flags.DEFINE_integer("max_predictions_per_seq", 10, "Masked positions per sequence.",
                       lower_bound=1)
  flags.DEFINE_integer("dupe_factor", 10,
                       "Passes over the training documents (each with new pairs and masks); the "
                       "held-out records take 10 (more pairs and masks of the same documents: a "
                       "steadier accuracy).", lower_bound=1)
  flags.DEFINE_float("learning_rate", 0.005, "Peak learning rate (LAMB).", lower_bound=0.0)
  flags.DEFINE_integer("warmup_steps", None, "Warmup steps (default: a tenth of --train_steps).",
                       lower_bound=0)
  flags.DEFINE_integer("seed", 1, "Seed of the split, the vocabulary, the records, the weights "
                       "and the data order: the same for the three models.")
  flags.DEFINE_bool("quick", False, "A few steps on short sequences (a check that everything "
                    "runs, in under a minute): overrides --train_steps, --batch_size, "
                    "--max_seq_length, --max_predictions_per_seq, --dupe_factor; no XLA; 40 of "
                    "the standard library's documents.")


HELDOUT_DUPE_FACTOR = 10


def log(message, start):
  print(f"[sentence_objectives {time.time() - start:7.1f}s] {message}", flush=True)


def split_documents(documents, heldout_fraction, seed):
  """Splits documents, seeded, into training and held-out ones.

  Args:
    documents: the corpus's documents (any items).
    heldout_fraction: the fraction held out (rounded, at least 2 held out and 2 kept: the
      next-sentence records of each part draw their random segments from another document of
      that part).
    seed: the shuffle's seed.

  Returns:
    (train, heldout): two lists of documents in corpus order, together the whole corpus.

  Raises:
    errors.UsageError: fewer than 4 documents.
  """
  if len(documents) < 4:
    raise errors.UsageError(
        f"--corpus has {len(documents)} documents: give at least 4 (blank lines between "
        "documents), 2 to train on and 2 to hold out")
  count = min(max(2, round(len(documents) * heldout_fraction)), len(documents) - 2)
  order = list(range(len(documents)))
  random.Random(seed).shuffle(order)
  heldout = set(order[:count])
  return ([d for i, d in enumerate(documents) if i not in heldout],
          [d for i, d in enumerate(documents) if i in heldout])


def format_table(rows):
  """The table printed: each measured accuracy (percent) beside the paper's.

  Args:
    rows: [{"objective": name, "measured": {metric: fraction}, "paper": {metric: fraction}}]:
      the objectives of OBJECTIVES, and "chance" (measured only, no paper).

  Returns:
    The table as Markdown text, one row per objective.
  """
  lines = ["| objective | " + " | ".join(f"{HEADERS[m]} (paper)" for m in METRICS) + " |",
           "|---|" + "---|" * len(METRICS)]
  for row in rows:
    cells = []
    for metric in METRICS:
      value = row["measured"].get(metric)
      cell = "-" if value is None else f"{100 * value:.1f}"
      paper = row.get("paper", {}).get(metric)
      cells.append(cell if paper is None else f"{cell} ({100 * paper:.1f})")
    lines.append(f"| {row['objective']} | " + " | ".join(cells) + " |")
  return "\n".join(lines) + "\n"


def read_eval_results(path):
  """eval_results.txt ("key = value" lines) as {key: float}."""
  results = {}
  with open(path, encoding="utf-8") as f:
    for line in f:
      key, _, value = line.partition(" = ")
      if value:
        results[key.strip()] = float(value)
  return results


def balance_records(path, out_path, seed):
  """Writes the records of `path` with as many 0 as 1 sentence labels to `out_path`
  (atomically): every record of the rarer label and a seeded sample of the other's, in file
  order. Returns the labels written."""
  import tensorflow as tf
  from albert_tf.data import tfrecords
  labels = record_labels(path)
  by_label = {0: [i for i, y in enumerate(labels) if y == 0],
              1: [i for i, y in enumerate(labels) if y == 1]}
  count = min(len(by_label[0]), len(by_label[1]))
  if count == 0:
    raise errors.UsageError(f"{path}: every held-out record has the same sentence label: give "
                            "a larger corpus or more held-out documents (--heldout_fraction)")
  rng = random.Random(seed)
  kept = set(rng.sample(by_label[0], count)) | set(rng.sample(by_label[1], count))
  with tfrecords.AtomicTFRecordWriter(out_path) as writer:
    for i, record in enumerate(tf.data.TFRecordDataset(path).as_numpy_iterator()):
      if i in kept:
        writer.write(record)
  return [labels[i] for i in sorted(kept)]


def record_labels(path):
  """The sentence labels (next_sentence_labels, 0 or 1) of a TFRecord file of
  create_pretraining_data, in order."""
  import tensorflow as tf
  spec = {"next_sentence_labels": tf.io.FixedLenFeature([1], tf.int64)}
  return [int(tf.io.parse_single_example(r, spec)["next_sentence_labels"][0])
          for r in tf.data.TFRecordDataset(path)]


def settings_from_flags():
  values = {name: getattr(FLAGS, name) for name in
            ("train_steps", "batch_size", "max_seq_length", "max_predictions_per_seq",
             "dupe_factor")}
  values.update(heldout_dupe_factor=HELDOUT_DUPE_FACTOR, jit_compile=True,
                # 0: every document found.
                stdlib_documents=0 if FLAGS.stdlib_docstrings else None)
  if FLAGS.quick:
    values.update(QUICK)
    if not FLAGS.stdlib_docstrings:
      values["stdlib_documents"] = None
  values["warmup_steps"] = (FLAGS.warmup_steps if FLAGS.warmup_steps is not None
                            else values["train_steps"] // 10)
  values.update(learning_rate=FLAGS.learning_rate, seed=FLAGS.seed,
                heldout_fraction=FLAGS.heldout_fraction, config=FLAGS.config,
                corpus=FLAGS.corpus)
  return values


def config_vocab_size(path):
  try:
    with open(path, encoding="utf-8") as f:
      return int(json.load(f)["vocab_size"])
  except (ValueError, KeyError, TypeError) as e:
    raise errors.DataFormatError(f"--config={path}: not an albert_config.json with a "
                                 f"vocab_size ({e}): give a model config") from None


def train_vocabulary(train_file, prefix, vocab_size, seed):
  """tools/train_sentencepiece.py on the training documents (one thread: reproducible)."""
  result = subprocess.run(
      [sys.executable, TRAIN_SENTENCEPIECE, f"--input={train_file}", f"--model_prefix={prefix}",
       f"--vocab_size={vocab_size}", "--num_threads=1", f"--random_seed={seed}"],
      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, check=False)
  if result.returncode:
    lines = result.stderr.strip().splitlines()
    raise errors.DataFormatError(
        f"--corpus: training the SentencePiece model of --config's vocab_size {vocab_size} on "
        f"the training documents failed ({lines[-1] if lines else result.returncode}): give a "
        "larger corpus, or a --spm_model_file of that vocabulary size")


def make_records(text_file, record_file, spm_model_file, s, next_sentence, dupe_factor):
  """create_pretraining_data's records of text_file (sentence order, or next sentence)."""
  from albert_tf.data.instances import InstanceOptions
  from albert_tf.core.settings import TokenizerSettings
  from albert_tf.data.pretraining_data import GenerationSettings, Progress, generate
  generate([text_file], [record_file], GenerationSettings(
      tokenizer=TokenizerSettings(spm_model_file=spm_model_file), dupe_factor=dupe_factor,
      random_seed=s["seed"],
      instance=InstanceOptions(max_seq_length=s["max_seq_length"],
                               max_predictions_per_seq=s["max_predictions_per_seq"],
                               random_next_sentence=next_sentence)),
           progress=Progress(label=f" {os.path.basename(record_file)}"))


def job_settings(s, output_dir, input_file, **given):
  from albert_tf.core import settings
  return settings.PretrainingSettings(
      output_dir=output_dir, input_file=input_file,
      max_predictions_per_seq=s["max_predictions_per_seq"],
      model=settings.ModelSettings(albert_config_file=s["config"],
                                   max_seq_length=s["max_seq_length"],
                                   init_checkpoint=given.pop("init_checkpoint", None)),
      run=settings.RunSettings(random_seed=s["seed"], data_seed=s["seed"]),
      train=settings.TrainSettings(
          optimizer="lamb", learning_rate=s["learning_rate"],
          num_train_steps=s["train_steps"], num_warmup_steps=s["warmup_steps"],
          train_batch_size=s["batch_size"], save_checkpoints_steps=s["train_steps"],
          iterations_per_loop=min(50, s["train_steps"]), keep_checkpoint_max=1,
          jit_compile=s["jit_compile"]),
      **given)


def pretrain(s, model_dir, input_file, sentence_weight):
  """Trains one model to s["train_steps"] in model_dir (resuming; nothing when it is there)."""
  if os.path.exists(os.path.join(model_dir, f"model.ckpt-{s['train_steps']}.index")):
    return False
  from albert_tf.tasks.pretraining.job import PretrainingJob
  PretrainingJob(job_settings(s, model_dir, input_file,
                              sentence_order_loss_weight=sentence_weight)).run()
  return True


def evaluate(s, model_dir, eval_dir, input_file, records):
  """run_pretraining --do_train=false --do_eval --init_checkpoint=model_dir on input_file:
  every record once (but a last partial batch). Returns eval_results.txt as {key: float}."""
  from albert_tf.tasks.pretraining.job import PretrainingJob
  batch = min(64, records)
  PretrainingJob(job_settings(s, eval_dir, input_file, init_checkpoint=model_dir,
                              do_train=False, do_eval=True, eval_batch_size=batch,
                              max_eval_steps=records // batch)).run()
  return read_eval_results(os.path.join(eval_dir, "eval_results.txt"))


def chance_row(labels):
  """Accuracy of always answering the majority label of each held-out record set."""
  def majority(values):
    return max(sum(values), len(values) - sum(values)) / len(values)
  return {"objective": "chance",
          "measured": {"nsp_accuracy": majority(labels["nsp"]),
                       "sop_accuracy": majority(labels["sop"])}}


def run_table(s, output_dir, start):
  """Steps 1-5 of the module docstring. Returns the table5.json object."""
  documents = []
  for path in s["corpus"].split(","):
    documents += read_corpus_documents(path, "--corpus")
  sources = {"corpus": len(documents)}
  if s["stdlib_documents"] is not None:
    stdlib = docstring_corpus.sample(docstring_corpus.documents(), s["stdlib_documents"],
                                     s["seed"])
    documents += stdlib
    sources["stdlib_docstrings"] = len(stdlib)
  train_docs, heldout_docs = split_documents(documents, s["heldout_fraction"], s["seed"])
  data_dir = os.path.join(output_dir, "data")
  io.makedirs(data_dir)
  texts = {"train": os.path.join(data_dir, "train.txt"),
           "heldout": os.path.join(data_dir, "heldout.txt")}
  write_corpus_documents(train_docs, texts["train"])
  write_corpus_documents(heldout_docs, texts["heldout"])
  log(f"split {len(documents)} documents ({', '.join(f'{n} from {k}' for k, n in sources.items())})"
      f": {len(train_docs)} to train on, {len(heldout_docs)} held out", start)

  spm_model_file = FLAGS.spm_model_file
  if spm_model_file is None:
    spm_model_file = os.path.join(data_dir, "spm.model")
    if not os.path.exists(spm_model_file):
      train_vocabulary(texts["train"], os.path.join(data_dir, "spm"),
                       config_vocab_size(s["config"]), s["seed"])
  records = {}
  for part in ("train", "heldout"):
    for kind in ("sop", "nsp"):
      path = os.path.join(data_dir, f"{part}_{kind}.tfrecord")
      if not os.path.exists(path):
        make_records(texts[part], path, spm_model_file, s, kind == "nsp",
                     s["dupe_factor"] if part == "train" else s["heldout_dupe_factor"])
      records[part, kind] = path
  labels = {}
  for kind in ("sop", "nsp"):
    balanced = os.path.join(data_dir, f"heldout_{kind}_balanced.tfrecord")
    labels[kind] = (record_labels(balanced) if os.path.exists(balanced) else
                    balance_records(records["heldout", kind], balanced, s["seed"]))
    records["heldout", kind] = balanced
  log(f"records: vocabulary {spm_model_file}; held-out {len(labels['sop'])} sentence-order, "
      f"{len(labels['nsp'])} next-sentence (each half label 0, half label 1)", start)

  rows = []
  for objective in OBJECTIVES:
    kind, weight = TRAINING[objective]
    model_dir = os.path.join(output_dir, "models", objective)
    trained = pretrain(s, model_dir, records["train", kind], weight)
    log(f"{objective}: {'trained' if trained else 'already trained'} ({s['train_steps']} steps "
        f"on the {kind} records, sentence loss weight {weight})", start)
    results = {kind: evaluate(s, model_dir,
                              os.path.join(output_dir, "evals", f"{objective}_{kind}"),
                              records["heldout", kind], len(labels[kind]))
               for kind in ("sop", "nsp")}
    rows.append({
        "objective": objective,
        "measured": {"mlm_accuracy": results["sop"]["masked_lm_accuracy"],
                     "nsp_accuracy": results["nsp"]["sentence_order_accuracy"],
                     "sop_accuracy": results["sop"]["sentence_order_accuracy"]},
        "paper": PAPER[objective]})
    log(f"{objective}: evaluated on the held-out records", start)
  rows.append(chance_row(labels))
  return {"rows": rows, "settings": s, "spm_model_file": spm_model_file,
          "documents": {"train": len(train_docs), "heldout": len(heldout_docs),
                        "sources": sources, "python": sys.version.split()[0]},
          "heldout_records": {kind: len(labels[kind]) for kind in labels},
          "chance": "accuracy of always answering one label: the held-out records are balanced"}


def check_flags():
  if not FLAGS.output_dir.strip():
    raise errors.UsageError("--output_dir is empty: give the directory to write to")
  if os.path.isfile(FLAGS.output_dir):
    raise errors.UsageError(f"--output_dir={FLAGS.output_dir} is a file: give a directory")
  if not os.path.isfile(FLAGS.config):
    raise FileNotFoundError(f"--config: no such file: {FLAGS.config}: give an "
                            "albert_config.json")
  if FLAGS.spm_model_file is not None and not os.path.isfile(FLAGS.spm_model_file):
    raise FileNotFoundError(f"--spm_model_file: no such file: {FLAGS.spm_model_file}: give a "
                            "SentencePiece model, or leave the flag out to train one")


def main(argv):
  if len(argv) > 1:
    raise errors.UsageError(f"unexpected arguments {argv[1:]}: every setting is a --flag")
  check_flags()
  start = time.time()
  s = settings_from_flags()
  from albert_tf.core import onednn
  from albert_tf.core.startup import quiet_tensorflow_startup
  quiet_tensorflow_startup()
  onednn.turn_on_for_training()  # as run_pretraining: before TensorFlow loads
  table = run_table(s, FLAGS.output_dir, start)
  table["wall_seconds"] = round(time.time() - start, 1)
  path = os.path.join(FLAGS.output_dir, "table5.json")
  io.write_text_atomically(path, json.dumps(table, indent=2) + "\n")
  print(format_table(table["rows"]), end="")
  log(f"wrote {path}", start)


if __name__ == "__main__":
  define_flags()
  cli.run(main, required_flags=("output_dir",))
