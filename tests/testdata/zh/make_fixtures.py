"""Writes the zh fixtures from the made-up sentences: ner/{train,dev,test}.txt (one character a
line, BIO tags), ner_words/{train,dev,test}.txt (one word a line, each entity one word tagged
B-TYPE, for --char_level) and vocab.txt (the specials, then every character of the sentences and
corpus.txt, then four English pieces, then ## and each character). Run from this directory: python3 make_fixtures.py"""

import os

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
ENGLISH = ["ip", "##hone", "py", "##thon"]  # iPhone, Python: a word and a ## piece


def read(path):
  sentences = []
  for line in open(path, encoding="utf-8"):
    line = line.strip()
    if line and not line.startswith("#"):
      sentences.append([tuple(w.split("/")) if "/" in w else (w, None) for w in line.split()])
  return sentences


def write(path, rows_per_sentence):
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with open(path, "w", encoding="utf-8", newline="\n") as f:
    for rows in rows_per_sentence:
      f.write("".join(f"{word} {tag}\n" for word, tag in rows) + "\n")


def char_rows(sentence):
  return [(c, "O" if t is None else ("B-" if k == 0 else "I-") + t)
          for word, t in sentence for k, c in enumerate(word)]


def word_rows(sentence):
  return [(word, "O" if t is None else "B-" + t) for word, t in sentence]


def main():
  chars = set()
  for split, source in (("train", "sentences.txt"), ("dev", "dev_sentences.txt"),
                        ("test", "test_sentences.txt")):
    sentences = read(source)
    write(f"ner/{split}.txt", [char_rows(s) for s in sentences])
    write(f"ner_words/{split}.txt", [word_rows(s) for s in sentences])
    chars.update(c for s in sentences for word, _ in s for c in word)
  chars.update(c for c in open("corpus.txt", encoding="utf-8").read() if not c.isspace()
               and not c.isascii())
  chars.update("，。")
  with open("vocab.txt", "w", encoding="utf-8", newline="\n") as f:
    # "##" + each character, as Google's Chinese vocab.txt has them: pretraining data must
    # never use them (the plain characters' ids are written).
    f.write("".join(f"{t}\n" for t in SPECIALS + sorted(chars) + ENGLISH
                    + [f"##{c}" for c in sorted(chars) if not c.isascii()]))


if __name__ == "__main__":
  main()
