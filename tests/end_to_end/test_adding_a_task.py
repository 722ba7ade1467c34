"""docs/adding-a-task.md, followed: a toy task written in a temporary folder (a task package and
its binary on sys.path, outside albert_tf) defines its flags, bounds and settings as the doc
says; its --help lists its own flags under the binary, its bounds are checked by cli and by its
settings with the one-line messages of albert_tf's tasks, and its binary trains two steps on the
fixture model with MRPC's bundled rows."""

import os
import subprocess
import sys
import textwrap

import pytest

from albert_tf.core import errors, settings
from helpers import ORIGINAL_MODEL, REPO_ROOT, TESTDATA

CONFIG = os.path.join(ORIGINAL_MODEL, "albert_config.json")
SPM = os.path.join(TESTDATA, "original_pretraining_data", "30k-clean-tiny.model")
MRPC = os.path.join(TESTDATA, "original_finetuning", "glue", "glue_data", "MRPC")

# The toy task "pairs": whether two sentences say the same, read from MRPC's TSV columns, with
# a flag of its own (--pair_dropout), in the files the doc names.
TASK_FILES = {
    "pairs_task/__init__.py": '''
        """Whether two sentences say the same: a toy task on the shared classifier model."""

        MODELS = {}  # its model is albert_tf.AlbertClassifier: no class of its own
        ''',
    "pairs_task/data.py": '''
        """MRPC-format TSV files (label, two ids, two sentences) to examples."""

        import csv
        import dataclasses
        import os

        from albert_tf.finetuning.text_data import TextProcessor


        @dataclasses.dataclass
        class PairExample:
          guid: str
          text_a: str
          text_b: str
          label: str


        class PairsProcessor(TextProcessor):

          def get_labels(self):
            return ["0", "1"]

          def get_examples(self, data_dir, split):
            with open(os.path.join(data_dir, f"{split}.tsv"), encoding="utf-8") as f:
              rows = list(csv.reader(f, delimiter="\\t", quotechar=None))[1:]
            return [PairExample(f"{split}-{i}", self.process_text(row[3]),
                                self.process_text(row[4]), row[0])
                    for i, row in enumerate(rows)]
        ''',
    "pairs_task/features.py": '''
        """Examples to the classifier's feature records."""

        from albert_tf.data.tfrecords import AtomicTFRecordWriter, encode_example, int64_feature
        from albert_tf.finetuning.text_data import PaddingInputExample, pack_pair


        def write_features(examples, label_list, max_seq_length, tokenizer, path):
          with AtomicTFRecordWriter(path) as writer:
            for example in examples:
              if isinstance(example, PaddingInputExample):
                ids = mask = segments = [0] * max_seq_length
                label, real = 0, 0
              else:
                a = tokenizer.tokenize(example.text_a)[:max_seq_length // 2 - 2]
                b = tokenizer.tokenize(example.text_b)[:max_seq_length // 2 - 1]
                ids, mask, segments = pack_pair(tokenizer, a, b, max_seq_length)
                label, real = label_list.index(example.label), 1
              writer.write(encode_example({
                  "input_ids": int64_feature(ids), "input_mask": int64_feature(mask),
                  "segment_ids": int64_feature(segments), "label_ids": int64_feature([label]),
                  "is_real_example": int64_feature([real])}))
        ''',
    "pairs_task/settings.py": '''
        """The toy task's settings and the bounds of its own flags. No TensorFlow."""

        import dataclasses

        from albert_tf.core import bounds
        from albert_tf.finetuning.settings import ClassificationSettings

        FLAG_BOUNDS = {"pair_dropout": bounds.DROPOUT}


        @dataclasses.dataclass(kw_only=True)
        class PairsSettings(ClassificationSettings):
          task_name: str = "pairs"
          pair_dropout: float = 0.1
          FIELD_BOUNDS = FLAG_BOUNDS

          def check_inputs(self):
            pass
        ''',
    "pairs_task/flags.py": '''
        """run_pairs' flags and the body of its main(). No TensorFlow."""

        from absl import flags

        from albert_tf.core import bounds
        from albert_tf.training import flags as common_flags
        from pairs_task import settings as pairs_settings

        flags.disclaim_key_flags()


        def define_flags():
          flags.DEFINE_string("data_dir", None, "The folder of train.tsv and dev.tsv.")
          flags.DEFINE_string("task_name", "pairs", "The name of the task.")
          flags.DEFINE_bool("do_train", False, "Whether to run training.")
          flags.DEFINE_bool("do_eval", False, "Whether to run eval on the dev set.")
          flags.DEFINE_bool("do_predict", False, "Whether to predict the dev set.")
          flags.DEFINE_integer("eval_batch_size", 8, "Total batch size for eval.")
          flags.DEFINE_integer("train_step", 1000, "Total number of training steps.")
          flags.DEFINE_integer("warmup_step", 0, "Steps of linear learning rate warmup.")
          flags.DEFINE_float("pair_dropout", 0.1, "Dropout on the pooled output.")
          common_flags.define_finetuning_flags(max_seq_length=64, learning_rate=1e-3)
          bounds.register(pairs_settings.FLAG_BOUNDS)


        def run_job():
          job_settings = common_flags.classifier_settings(pairs_settings.PairsSettings,
                                                          flags.FLAGS)
          job_settings.check_inputs()
          with common_flags.running_job():
            from pairs_task.job import PairsJob
            PairsJob(job_settings).run()
        ''',
    "pairs_task/job.py": '''
        """The toy task's job: the shared classification job with its processor, model and
        features."""

        import albert_tf
        from albert_tf.finetuning.classification import ClassificationJob
        from pairs_task.data import PairsProcessor
        from pairs_task.features import write_features


        class PairsJob(ClassificationJob):

          def make_processor(self):
            s = self.settings.tokenizer
            return PairsProcessor(bool(s.spm_model_file), s.do_lower_case)

          def make_model(self):
            return albert_tf.AlbertClassifier(self.config, len(self.label_list),
                                              dropout_rate=self.settings.pair_dropout)

          def convert(self, examples, path):
            write_features(examples, self.label_list, self.settings.model.max_seq_length,
                           self.tokenizer, path)
        ''',
    "run_pairs.py": '''
        """A toy task: whether two sentences say the same.

          python -m run_pairs --data_dir=MRPC --output_dir=out --do_train --do_eval
        """

        from albert_tf.core import cli
        from pairs_task import flags as pairs_flags

        pairs_flags.define_flags()


        def main(argv):
          del argv
          pairs_flags.run_job()


        def run():
          cli.run(main, required_flags=("data_dir", "output_dir"))


        if __name__ == "__main__":
          run()
        ''',
}


@pytest.fixture(scope="module")
def toy_task(tmp_path_factory):
  """The folder holding the toy task's package and binary, on sys.path for this module's tests
  (and on PYTHONPATH for its binary's runs)."""
  root = tmp_path_factory.mktemp("toy_task")
  for name, text in TASK_FILES.items():
    path = root / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
  sys.path.insert(0, str(root))
  yield root
  sys.path.remove(str(root))
  for module in [m for m in sys.modules if m == "pairs_task" or m.startswith("pairs_task.")]:
    del sys.modules[module]


def _run_pairs(root, argv, timeout=120):
  env = dict(os.environ, PYTHONPATH=os.pathsep.join(
      [str(root), REPO_ROOT] + ([os.environ["PYTHONPATH"]] if "PYTHONPATH" in os.environ else [])))
  return subprocess.run([sys.executable, "-m", "run_pairs"] + argv, cwd=str(root), env=env,
                        capture_output=True, text=True, timeout=timeout)


def _settings(**given):
  from pairs_task.settings import PairsSettings
  return PairsSettings(output_dir="out", data_dir=MRPC, model=settings.ModelSettings(), **given)


def test_its_settings_check_its_own_bounds_and_the_shared_ones(toy_task):
  del toy_task
  assert _settings(pair_dropout=0.0).pair_dropout == 0.0
  with pytest.raises(errors.UsageError, match=r"^pair_dropout=1.0: must be between 0.0 and 0.999$"):
    _settings(pair_dropout=1.0)
  with pytest.raises(errors.UsageError, match=r"^eval_batch_size=0: must be at least 1$"):
    _settings(eval_batch_size=0)


def test_its_help_lists_its_flags_under_its_binary(toy_task):
  result = _run_pairs(toy_task, ["--help"])
  assert result.returncode == 0, result.stderr[-3000:]
  assert result.stdout.startswith("A toy task: whether two sentences say the same.")
  own = result.stdout.split("\nrun_pairs:\n")[1].split("\n\n")[0]
  assert "--pair_dropout: Dropout on the pooled output." in own
  assert "--train_step" in own and "--learning_rate" not in own  # shared: training.flags'
  assert "\nalbert_tf.training.flags (shared):\n" in result.stdout


@pytest.mark.parametrize("flag, line", [
    ("--pair_dropout=1.5", "error: --pair_dropout=1.5: must be between 0.0 and 0.999"),
    ("--train_step=0", "error: --train_step=0: must be at least 1 (the number of updates "
                       "--do_train makes)"),
])
def test_its_flags_out_of_bounds_are_one_usage_error_line(toy_task, flag, line):
  result = _run_pairs(toy_task, [f"--data_dir={MRPC}", f"--output_dir={toy_task / 'out'}", flag])
  assert result.returncode == errors.USAGE_EXIT_CODE, result.stderr[-3000:]
  assert result.stderr.strip().splitlines()[-1] == line
  assert not (toy_task / "out").exists()


@pytest.mark.slow
def test_its_binary_trains_and_evaluates_on_the_fixture_model(toy_task, tmp_path):
  out = tmp_path / "out"
  result = _run_pairs(toy_task, [
      f"--data_dir={MRPC}", f"--output_dir={out}", "--do_train", "--do_eval",
      f"--albert_config_file={CONFIG}", f"--spm_model_file={SPM}",
      f"--init_checkpoint={os.path.join(ORIGINAL_MODEL, 'model.ckpt-0')}",
      "--max_seq_length=48", "--train_batch_size=4", "--train_step=2", "--warmup_step=1",
      "--save_checkpoints_steps=2", "--random_seed=7", "--pair_dropout=0.0"], timeout=600)
  assert result.returncode == 0, result.stderr[-3000:]
  assert (out / "model.ckpt-2.index").exists() and (out / "model.ckpt-best.index").exists()
  with open(out / "eval_results.txt", encoding="utf-8") as f:
    results = dict(line.split(" = ") for line in f.read().splitlines() if " = " in line)
  # The 12 dev rows: an accuracy of k / 12, and the step the results are of.
  accuracy = float(results["eval_accuracy"])
  assert 0.0 <= accuracy <= 1.0 and round(accuracy * 12, 4) == round(accuracy * 12)
  assert int(results["global_step"]) == 2 and float(results["eval_loss"]) > 0.0
  assert os.path.exists(out / "pairs_train.tf_record")
