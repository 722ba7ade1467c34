"""What a binary's start-up leaves in its process, printed as one JSON line: run as
`python3 tests/warm_env_probe.py [--training]` by tests/end_to_end/test_warm_start.py, fresh and
from the warm start, whose answers must be the same. With --training it starts as the training
binaries do (oneDNN turned on before TensorFlow loads), else as the others; then it loads
TensorFlow, as every binary that trains, evaluates or exports does (the import sets variables of
its own in os.environ, which a warm child has from its server). Not a test file."""

import json
import os
import sys

from albert_tf.core import onednn
from albert_tf.core.startup import quiet_tensorflow_startup

quiet_tensorflow_startup()
said = onednn.turn_on_for_training() if sys.argv[1:] == ["--training"] else None
import tensorflow  # noqa: E402,F401 -- loaded after the start-up, as the binaries load it
print(json.dumps({"environ": dict(os.environ), "said": said,
                  "child_environment": onednn.child_environment(), "argv": sys.argv,
                  "path0": sys.path[0], "file": __file__, "name": __name__}))
