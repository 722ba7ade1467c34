#!/usr/bin/env bash
# The end-to-end run on the bundled sample corpus: SentencePiece model, pretraining data,
# a tiny ALBERT pretrained for a few hundred LAMB steps, then evaluated. About 2-4 minutes on a
# 2-core CPU. Everything is written under ${WORK:-work/quickstart}. Seeded throughout
# (SentencePiece on one thread, the records' masks, the weights, the data order): every run
# gives the README's table. It runs the installed package (`pip install -e .` or the wheel): the
# albert-* entry points, and python3 as found on PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
WORK=${WORK:-work/quickstart}
STEPS=${STEPS:-400}
rm -rf "$WORK" && mkdir -p "$WORK"

# Hold out the last documents of the corpus for evaluation.
python3 - "$WORK" <<'PY'
import sys
docs = open("data/sample/corpus.txt", encoding="utf-8").read().strip("\n").split("\n\n")
out = sys.argv[1]
open(f"{out}/train.txt", "w", encoding="utf-8").write("\n\n".join(docs[:-6]) + "\n")
open(f"{out}/eval.txt", "w", encoding="utf-8").write("\n\n".join(docs[-6:]) + "\n")
PY

echo "== 1/4 SentencePiece model"
python3 tools/train_sentencepiece.py --input="$WORK/train.txt" --model_prefix="$WORK/spm" \
  --vocab_size=2000 --num_threads=1 --random_seed=1

echo "== 2/4 create_pretraining_data"
for split in train eval; do
  dupe=$([ "$split" = train ] && echo 10 || echo 1)
  albert-create-pretraining-data --input_file="$WORK/$split.txt" \
    --output_file="$WORK/$split.tfrecord" --spm_model_file="$WORK/spm.model" \
    --vocab_file=unused --max_seq_length=64 --max_predictions_per_seq=10 --dupe_factor=$dupe
done

echo "== 3/4 run_pretraining (eval before training, at step 0)"
common=(--albert_config_file=data/configs/tiny_quickstart.json --max_seq_length=64
        --max_predictions_per_seq=10 --output_dir="$WORK/model" --eval_batch_size=64
        --max_eval_steps=8 --random_seed=1)
albert-run-pretraining "${common[@]}" --input_file="$WORK/eval.tfrecord" \
  --do_train=false --do_eval
mv "$WORK/model/eval_results.txt" "$WORK/eval_results_step0.txt"
albert-run-pretraining "${common[@]}" --input_file="$WORK/train.tfrecord" \
  --train_batch_size=64 --optimizer=lamb --learning_rate=0.005 --num_train_steps="$STEPS" \
  --num_warmup_steps=40 --save_checkpoints_steps=200 --iterations_per_loop=50 --jit_compile \
  --data_seed=1

echo "== 4/4 evaluate on held-out documents"
albert-run-pretraining "${common[@]}" --input_file="$WORK/eval.tfrecord" \
  --do_train=false --do_eval
echo "held-out metrics at step 0:"; cat "$WORK/eval_results_step0.txt"
echo "held-out metrics after training:"; cat "$WORK/model/eval_results.txt"
