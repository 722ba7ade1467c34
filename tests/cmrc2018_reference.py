"""Builds tests/testdata/cmrc2018/ from the official CMRC 2018 repository (ymcui/cmrc2018):
the fixture paragraphs, a WordPiece vocabulary covering them, and the references the tests
compare with, computed by the repository's own code (not albert_tf's):

  train.json, dev.json   a few SQuAD-style paragraphs (train: of cmrc2018_trial.json, as the
                         repository's cmrc2018_train.json is stored as a Git LFS-like blob that
                         cannot be read here; dev: of cmrc2018_dev.json). CC BY-SA 4.0.
  vocab.txt              [PAD] [UNK] [CLS] [SEP] [MASK], then every non-space character of the
                         fixture (both cases) but the three least frequent CJK characters (so
                         that [UNK] occurs), "##" + each ASCII letter and digit, and the first
                         three letters of each lower-cased ASCII word of 4+ letters (so that
                         words split into several pieces), sorted within each group.
  features_lower.json,   the baseline's read_squad_examples + convert_examples_to_features
  features_cased.json    (baseline/run_cmrc2018_drcd_baseline.py) with do_lower_case True/False,
                         max_seq_length 64, doc_stride 40, max_query_length 12.
  predictions.json,      a predictions file with hand-made answers (exact, extra punctuation,
  evaluation.json        English and digits in Chinese, partial, wrong, missing) and the
                         official baseline/cmrc2018_evaluate.py's EM and F1 on it, per question
                         and overall, with nltk's word_tokenize(preserve_line=True) (no punkt
                         data here: the condition albert_tf falls back to).

Usage (the repository from `git clone https://github.com/ymcui/cmrc2018` or a bare mirror):
  python3 tests/cmrc2018_reference.py --git_dir=/path/to/cmrc2018/.git \
      --out=tests/testdata/cmrc2018
"""

import argparse
import collections
import json
import os
import subprocess
import sys
import types

TRAIN_ARTICLES = (70, 73)  # of cmrc2018_trial.json: English words, spaces, digits
DEV_ARTICLES = (56, 83, 113)  # of cmrc2018_dev.json: a deer (figures), BCPL (English-heavy),
# Ethenol (formulas)
SIZES = dict(max_seq_length=64, doc_stride=40, max_query_length=12)


def git_show(git_dir, path):
  return subprocess.run(["git", f"--git-dir={git_dir}", "show", f"HEAD:{path}"], check=True,
                        capture_output=True).stdout.decode("utf-8")


def fake_tensorflow():
  """The TF1 calls the baseline makes at import and in its feature code, nothing else."""
  tf = types.ModuleType("tensorflow")

  class Flags:
    def __init__(self):
      self.FLAGS = types.SimpleNamespace()

    def _define(self, name, default, *args, **kwargs):
      setattr(self.FLAGS, name, default)
    DEFINE_string = DEFINE_bool = DEFINE_integer = DEFINE_float = _define
  tf.flags = Flags()
  tf.gfile = types.SimpleNamespace(Open=open, GFile=open)
  tf.set_random_seed = lambda seed: None
  tf.logging = types.SimpleNamespace(info=lambda *a, **k: None, warning=lambda *a, **k: None)
  return tf


def load_baseline(git_dir):
  sys.modules["tensorflow"] = fake_tensorflow()
  for name in ("modeling", "optimization"):  # the model code is not needed for features
    sys.modules[name] = types.ModuleType(name)
  modules = {}
  for name, path in (("tokenization", "baseline/tokenization.py"),
                     ("baseline", "baseline/run_cmrc2018_drcd_baseline.py"),
                     ("evaluate", "baseline/cmrc2018_evaluate.py")):
    module = types.ModuleType(name)
    source = compile(git_show(git_dir, path), path, "exec")
    exec(source, module.__dict__)
    sys.modules[name] = modules[name] = module
  return modules


def fixture(git_dir, path, articles):
  data = json.loads(git_show(git_dir, path))
  return {"version": data["version"], "data": [data["data"][i] for i in articles]}


def make_vocab(datasets):
  counts = collections.Counter()
  words = set()
  for data in datasets:
    for article in data["data"]:
      for p in article["paragraphs"]:
        texts = [p["context"]] + [q["question"] for q in p["qas"]]
        texts += [a["text"] for q in p["qas"] for a in q["answers"]]
        for text in texts:
          counts.update(c for c in text if not c.isspace())
          word = ""
          for c in text.lower() + " ":
            if c.isascii() and c.isalpha():
              word += c
            else:
              if len(word) >= 4:
                words.add(word[:3])
              word = ""
  cjk = sorted((c for c in counts if "\u4e00" <= c <= "\u9fff"), key=lambda c: (counts[c], c))
  chars = set(counts) - set(cjk[:3])
  chars |= {c.lower() for c in chars} | {c.upper() for c in chars if c.isascii()}
  alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
  return (["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + sorted(chars)
          + sorted("##" + c for c in alnum) + sorted(words - chars))


def features(baseline, vocab_file, train_file, dev_file, do_lower_case):
  flags = baseline["baseline"].FLAGS
  flags.vocab_file, flags.do_lower_case = vocab_file, do_lower_case
  out = {}
  for name, path, is_training in (("train", train_file, True), ("dev", dev_file, False)):
    examples = baseline["baseline"].read_squad_examples(path, is_training)
    found = []
    baseline["baseline"].convert_examples_to_features(
        examples, None, SIZES["max_seq_length"], SIZES["doc_stride"],
        SIZES["max_query_length"], is_training, found.append)
    out[name] = {
        "examples": [{"qas_id": e.qas_id, "doc_tokens": e.doc_tokens,
                      "start_position": e.start_position, "end_position": e.end_position}
                     for e in examples],
        "features": [{
            "unique_id": f.unique_id, "example_index": f.example_index,
            "doc_span_index": f.doc_span_index, "tokens": f.tokens,
            "token_to_orig_map": {str(k): v for k, v in f.token_to_orig_map.items()},
            "token_is_max_context": {str(k): v for k, v in f.token_is_max_context.items()},
            "input_ids": f.input_ids, "input_mask": f.input_mask,
            "segment_ids": f.segment_ids, "input_span_mask": f.input_span_mask,
            "start_position": f.start_position, "end_position": f.end_position}
                     for f in found]}
  out["settings"] = dict(SIZES, do_lower_case=do_lower_case)
  return out


def tricky_predictions(dev):
  """One made-up prediction per dev question but the last (left out: scores 0)."""
  variants = [
      lambda a: a,                       # exact
      lambda a: a + "。",                 # an extra mark the evaluator drops
      lambda a: a.upper() + " ",         # case and spaces
      lambda a: a[: max(1, len(a) // 2)],  # partial
      lambda a: "BCPL语言1966年",          # English and digits inside Chinese
      lambda a: "（" + a + "）——",         # marks it drops and one (—) it keeps
      lambda a: "U.S. Army. Then more",  # sentence ends (punkt would split them)
      lambda a: "wrong",
  ]
  qas = [q for article in dev["data"] for p in article["paragraphs"] for q in p["qas"]]
  return collections.OrderedDict(
      (q["id"], variants[i % len(variants)](q["answers"][0]["text"]))
      for i, q in enumerate(qas[:-1]))


def evaluation(baseline, dev, predictions):
  import nltk
  evaluate = baseline["evaluate"]
  plain = nltk.word_tokenize
  evaluate.nltk = types.SimpleNamespace(
      word_tokenize=lambda s: plain(s, preserve_line=True))
  f1, em, total, skip = evaluate.evaluate(dev, predictions)
  per_question = {}
  for article in dev["data"]:
    for p in article["paragraphs"]:
      for q in p["qas"]:
        if q["id"] in predictions:
          answers = [a["text"] for a in q["answers"]]
          per_question[q["id"]] = {
              "f1": evaluate.calc_f1_score(answers, predictions[q["id"]]),
              "em": evaluate.calc_em_score(answers, predictions[q["id"]])}
  return {"f1": f1, "exact_match": em, "total": total, "skip": skip,
          "per_question": per_question, "word_tokenize": "preserve_line=True"}


def write_json(path, value, compact=False):
  with open(path, "w", encoding="utf-8") as f:
    if compact:  # one feature a line
      f.write(json.dumps(value, ensure_ascii=False, separators=(",", ":")).replace(
          '{"unique_id"', '\n{"unique_id"'))
    else:
      json.dump(value, f, ensure_ascii=False, indent=1)
    f.write("\n")


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--git_dir", required=True)
  parser.add_argument("--out", required=True)
  args = parser.parse_args()
  os.makedirs(args.out, exist_ok=True)
  train = fixture(args.git_dir, "squad-style-data/cmrc2018_trial.json", TRAIN_ARTICLES)
  dev = fixture(args.git_dir, "squad-style-data/cmrc2018_dev.json", DEV_ARTICLES)
  paths = {name: os.path.join(args.out, f"{name}.json") for name in ("train", "dev")}
  write_json(paths["train"], train)
  write_json(paths["dev"], dev)
  vocab_file = os.path.join(args.out, "vocab.txt")
  with open(vocab_file, "w", encoding="utf-8") as f:
    f.write("".join(token + "\n" for token in make_vocab([train, dev])))
  baseline = load_baseline(args.git_dir)
  for name, lower in (("features_lower.json", True), ("features_cased.json", False)):
    write_json(os.path.join(args.out, name),
               features(baseline, vocab_file, paths["train"], paths["dev"], lower), compact=True)
  predictions = tricky_predictions(dev)
  write_json(os.path.join(args.out, "predictions.json"), predictions)
  write_json(os.path.join(args.out, "evaluation.json"), evaluation(baseline, dev, predictions))


if __name__ == "__main__":
  main()
