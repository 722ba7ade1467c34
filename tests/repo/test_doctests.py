"""The `Example:` blocks of the public API's docstrings run as written (doctest)."""

import doctest
import importlib

import pytest

# The modules whose docstrings hold examples: the config, the models, the optimizers, the spill.
MODULES = ["albert_tf.core.config", "albert_tf.models.encoder", "albert_tf.models.pretrainer",
           "albert_tf.tasks.classifier.model", "albert_tf.optimization.optimizers",
           "albert_tf.optimization.schedules", "albert_tf.data.spill"]


@pytest.mark.parametrize("module_name", MODULES)
def test_docstring_examples(module_name):
  module = importlib.import_module(module_name)
  result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
  assert result.attempted > 0, f"{module_name} has no examples"
  assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed (see above)"
