"""Writes tests/testdata/ner/seqeval_reference.json: what seqeval 1.2.2 (the reference the NER
entity metric follows; albert_tf never imports it) returns on the cases
tests/tasks/ner/test_ner_data.py checks albert_tf.tasks.ner.metrics against. The suite reads the
file instead of importing seqeval, whose scikit-learn dependency Keras would then import in every
TensorFlow process the suite starts (1.4-2 s each on a 2-thread AVX2 EPYC, docs/speed.md#start-up).

  entities   2,000 random tag sequences (0-9 tags of IOB1, IOB2 and IOBES over PER and LOC, and
             a stray I-MISC) and seqeval's get_entities of each: [type, first, last].
  scores     gold and predicted tag lists with seqeval's precision, recall, F1 (micro), accuracy
             and each type's precision, recall and F1: hand-made sentences (I- after O, I- of
             another type, IOB1, IOBES, E- alone, no entity), 50 random sets of 6 sentences, and
             ner/dev.txt's tags against a copy with each tag replaced with probability 0.1.

Usage, with seqeval==1.2.2 installed (it needs scikit-learn) and albert_tf importable:
  python3 -m venv /tmp/seqeval && /tmp/seqeval/bin/pip install seqeval==1.2.2
  PYTHONPATH=. /tmp/seqeval/bin/python tests/seqeval_reference.py \
      --out=tests/testdata/ner/seqeval_reference.json
"""

import argparse
import importlib.metadata
import json
import os
import random
import warnings

from seqeval import metrics
from seqeval.metrics.sequence_labeling import get_entities

from albert_tf.tasks.ner import data

TAGS = ["O", "B-PER", "I-PER", "E-PER", "S-PER", "B-LOC", "I-LOC", "E-LOC", "S-LOC", "I-MISC"]
NER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "testdata", "ner")

HAND_MADE = (
    [["O", "I-PER", "I-PER", "O"], ["B-LOC", "I-PER"], ["S-PER", "B-LOC", "E-LOC"], ["O", "O"],
     ["I-MISC", "B-MISC", "I-MISC"]],
    [["O", "B-PER", "I-PER", "O"], ["B-LOC", "B-PER"], ["S-PER", "B-LOC", "I-LOC"],
     ["E-PER", "O"], ["I-MISC", "I-MISC", "I-MISC"]])


def scores(gold, predicted):
  """seqeval's figures for one (gold, predicted) pair of tag lists, by albert_tf's key names."""
  out = {"precision": metrics.precision_score(gold, predicted, zero_division=0),
         "recall": metrics.recall_score(gold, predicted, zero_division=0),
         "f1": metrics.f1_score(gold, predicted, zero_division=0),
         "accuracy": metrics.accuracy_score(gold, predicted)}
  report = metrics.classification_report(gold, predicted, output_dict=True, zero_division=0)
  for entity_type, figures in report.items():
    if not entity_type.endswith(" avg"):
      out.update({f"{entity_type}_precision": figures["precision"],
                  f"{entity_type}_recall": figures["recall"],
                  f"{entity_type}_f1": figures["f1-score"]})
  return {key: float(value) for key, value in out.items()}


def cases():
  rng = random.Random(0)
  entities = []
  for _ in range(2000):
    tags = [rng.choice(TAGS) for _ in range(rng.randint(0, 9))]
    entities.append({"tags": tags, "entities": [list(e) for e in get_entities(tags)]})
  pairs = [HAND_MADE]
  for _ in range(50):
    gold = [[rng.choice(TAGS) for _ in range(rng.randint(1, 8))] for _ in range(6)]
    pairs.append((gold, [[rng.choice(TAGS) for _ in s] for s in gold]))
  dev = data.read_split(NER, "dev")
  names = data.labels_of(dev)
  rng = random.Random(1)
  gold = [list(s.tags) for s in dev]
  pairs.append((gold, [[t if rng.random() < 0.9 else rng.choice(names) for t in s]
                       for s in gold]))
  return {"seqeval": importlib.metadata.version("seqeval"),
          "entities": entities,
          "scores": [{"gold": g, "predicted": p, "scores": scores(g, p)} for g, p in pairs]}


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--out", required=True, help="the JSON file to write")
  args = parser.parse_args()
  with warnings.catch_warnings():
    # seqeval warns of tags outside its scheme (E-, S- read leniently); that is the point.
    warnings.simplefilter("ignore")
    reference = cases()
  tmp = args.out + ".tmp"
  with open(tmp, "w", encoding="utf-8") as f:
    json.dump(reference, f, separators=(",", ":"))
    f.write("\n")
  os.replace(tmp, args.out)
  print(f"wrote {args.out}: {len(reference['entities'])} tag sequences, "
        f"{len(reference['scores'])} gold/predicted sets")


if __name__ == "__main__":
  main()
