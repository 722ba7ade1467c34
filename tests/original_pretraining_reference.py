"""A plain, string-token re-statement of the original create_pretraining_data algorithm, for
tests: it keeps the original's data structures (token strings, lists of n-gram lists,
numpy.random.RandomState.choice), none of albert_tf's id-based shortcuts."""

import random

import numpy as np

from albert_tf.tokenization import preprocess_text

_SPECIAL = set('!"#$%&\"()*+,-./:;?@[\\]^_`{|}~')


def _is_start_sp(piece):
  if piece.startswith("\u2581") or piece.startswith("<") or piece in _SPECIAL:
    return True
  return not all(c.lower() in set("abcdefghijklmnopqrstuvwxyz") | _SPECIAL for c in piece)


def read_documents(paths, tokenizer, do_lower_case):
  docs = [[]]
  for path in paths:
    with open(path, "rb") as f:
      for raw in f.read().split(b"\n"):
        line = raw.decode("utf-8")
        line = preprocess_text(line, lower=do_lower_case) if tokenizer.sp_model else line.strip()
        if not line:
          docs.append([])
        tokens = tokenizer.tokenize(line) if line else []
        if tokens:
          docs[-1].append(tokens)
  return [d for d in docs if d]


def masked_lm(tokens, a, rng, np_rng, vocab_words, is_start):
  cand, boundary = [], [0] * len(tokens)
  for i, tok in enumerate(tokens):
    if tok in ("[CLS]", "[SEP]"):
      boundary[i] = 1
      continue
    if a["do_whole_word_mask"] and cand and not is_start(tok):
      cand[-1].append(i)
    else:
      cand.append([i])
      if is_start(tok):
        boundary[i] = 1
  out = list(tokens)
  k = min(a["max_predictions_per_seq"], max(1, int(round(len(tokens) * a["masked_lm_prob"]))))
  ngrams = np.arange(1, a["ngram"] + 1, dtype=np.int64)
  pvals = 1.0 / np.arange(1, a["ngram"] + 1)
  pvals /= pvals.sum(keepdims=True)
  if not a["favor_shorter_ngram"]:
    pvals = pvals[::-1]
  ngram_lists = [[cand[i:i + n] for n in ngrams] for i in range(len(cand))]
  rng.shuffle(ngram_lists)

  masked = []
  covered = set()
  for sets in ngram_lists:
    if len(masked) >= k:
      break
    n = np_rng.choice(ngrams, p=pvals / pvals.sum(keepdims=True))
    idx = sum(sets[n - 1], [])
    n -= 1
    while len(masked) + len(idx) > k and n != 0:
      idx = sum(sets[n - 1], [])
      n -= 1
    if len(masked) + len(idx) > k or any(i in covered for i in idx):
      continue
    for i in idx:
      covered.add(i)
      if rng.random() < 0.8:
        out[i] = "[MASK]"
      elif rng.random() < 0.5:
        out[i] = tokens[i]
      else:
        out[i] = vocab_words[rng.randint(0, len(vocab_words) - 1)]
      masked.append((i, tokens[i]))
  rng.shuffle(ngram_lists)
  masked.sort()
  return out, [i for i, _ in masked], [t for _, t in masked], boundary


def truncate(ta, tb, max_num, rng):
  while len(ta) + len(tb) > max_num:
    t = ta if len(ta) > len(tb) else tb
    if rng.random() < 0.5:
      del t[0]
    else:
      t.pop()


def instances_from_document(docs, di, a, rng, np_rng, vocab_words, is_start):
  doc = docs[di]
  max_num = a["max_seq_length"] - 3
  target = max_num
  if rng.random() < a["short_seq_prob"]:
    target = rng.randint(2, max_num)
  out, chunk, length, i = [], [], 0, 0
  while i < len(doc):
    chunk.append(doc[i])
    length += len(doc[i])
    if i == len(doc) - 1 or length >= target:
      a_end = rng.randint(1, len(chunk) - 1) if len(chunk) >= 2 else 1
      ta = [t for s in chunk[:a_end] for t in s]
      tb = []
      if len(chunk) == 1 or (a["random_next_sentence"] and rng.random() < 0.5):
        rand_next = True
        for _ in range(10):
          rdi = rng.randint(0, len(docs) - 1)
          if rdi != di:
            break
        rdoc = docs[rdi]
        for s in rdoc[rng.randint(0, len(rdoc) - 1):]:
          tb.extend(s)
          if len(tb) >= target - len(ta):
            break
        i -= len(chunk) - a_end
      elif not a["random_next_sentence"] and rng.random() < 0.5:
        rand_next = True
        tb = [t for s in chunk[a_end:] for t in s]
        ta, tb = tb, ta
      else:
        rand_next = False
        tb = [t for s in chunk[a_end:] for t in s]
      truncate(ta, tb, max_num, rng)
      tokens = ["[CLS]"] + ta + ["[SEP]"] + tb + ["[SEP]"]
      segments = [0] * (len(ta) + 2) + [1] * (len(tb) + 1)
      tokens, pos, labels, boundary = masked_lm(tokens, a, rng, np_rng, vocab_words, is_start)
      out.append((tokens, segments, pos, labels, boundary, rand_next))
      chunk, length = [], 0
    i += 1
  return out


def generate_examples(paths, tokenizer, a):
  """Returns the list of feature dicts the original would write (one output file)."""
  rng = random.Random(a["random_seed"])
  np_rng = np.random.RandomState(a["random_seed"])
  is_start = _is_start_sp if tokenizer.sp_model else (lambda p: not p.startswith("##"))
  docs = read_documents(paths, tokenizer, a["do_lower_case"])
  rng.shuffle(docs)
  vocab_words = list(tokenizer.vocab.keys())
  insts = []
  for _ in range(a["dupe_factor"]):
    for di in range(len(docs)):
      insts.extend(instances_from_document(docs, di, a, rng, np_rng, vocab_words, is_start))
  rng.shuffle(insts)
  examples = []
  L, P = a["max_seq_length"], a["max_predictions_per_seq"]
  for tokens, segments, pos, labels, boundary, rand_next in insts:
    ids = tokenizer.convert_tokens_to_ids(tokens)
    pad = L - len(ids)
    lab = tokenizer.convert_tokens_to_ids(labels)
    examples.append({
        "input_ids": ids + [0] * pad, "input_mask": [1] * len(ids) + [0] * pad,
        "segment_ids": segments + [0] * pad, "token_boundary": boundary + [0] * pad,
        "masked_lm_positions": pos + [0] * (P - len(pos)),
        "masked_lm_ids": lab + [0] * (P - len(lab)),
        "masked_lm_weights": [1.0] * len(lab) + [0.0] * (P - len(lab)),
        "next_sentence_labels": [1 if rand_next else 0]})
  return examples
