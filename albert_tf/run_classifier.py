"""ALBERT fine-tuning on GLUE classification tasks (the original's run_classifier flags), or on
your own CSV, TSV or JSONL files (single-label, multi-label or regression).

  python -m albert_tf.run_classifier --task_name=MNLI --data_dir=glue_data \
      --spm_model_file=30k-clean.model --albert_config_file=albert_config.json \
      --init_checkpoint=albert_base/model.ckpt-best --output_dir=out --do_train --do_eval \
      --do_predict --max_seq_length=128 --train_batch_size=128 --learning_rate=3e-5 \
      --train_step=10000 --warmup_step=1000 --save_checkpoints_steps=500

Outputs, as the original: cached features `<cached_dir or output_dir>/<task>_train.tf_record`,
`<task>_eval.tf_record` and `<output_dir>/predict.tf_record`; checkpoints model.ckpt-<step>, each
evaluated (eval_results.txt, best_trial.txt) with the best kept as model.ckpt-best (the original
TF1 layout); test_results.tsv and submit_results.tsv; with --export_dir a SavedModel
(<export_dir>/<timestamp>/) that takes raw text. Batches are cut to their longest real sequence
(--dynamic_length), training batches grouped by length.

Your own data, instead of --task_name and --data_dir:

  python -m albert_tf.run_classifier --train_file=train.csv --dev_file=dev.csv \
      --test_file=test.csv --text_column=sentence --label_column=label ...

CSV, TSV or JSONL by extension (or --data_format); columns by header name or JSON key, or by
0-based index for a headerless CSV/TSV (every column given as a number). Labels from
--label_list or the training file (sorted), saved as classifier_labels.json in output_dir;
--label_type=float is regression (Pearson and MSE, as STS-B); a JSON list of labels, or
--label_separator, is multi-label (sigmoid, binary cross-entropy, --threshold; micro and macro
F1; the best checkpoint by micro_f1). Cached features are <file name>_train.tf_record and
<file name>_eval.tf_record.
"""

from albert_tf.core import cli
from albert_tf.tasks.classifier import flags as classifier_flags

classifier_flags.define_flags()


def main(argv):
  del argv
  classifier_flags.run_job()


def run():
  """The entry point (`python -m albert_tf.run_classifier`, `albert-run-classifier`)."""
  cli.run(main, required_flags=("output_dir",))


if __name__ == "__main__":
  run()
