#!/usr/bin/env bash
# One check of an accelerator, in one call of a few minutes (a GPU machine is lent rarely and for
# minutes, so it runs everything once and reports everything):
#   1. the model-fixture and LAMB-update tests under pytest, float32 with TF32 off
#      (NVIDIA_TF32_OVERRIDE=0), at the fixture's 1e-5;
#   2. the fixture's 4 LAMB updates under a MirroredStrategy over two logical devices of one GPU
#      (two logical CPUs without a GPU), within 1e-5 of the original's;
#   3. base-shape training steps (batch 32, seq 512) with mixed_bfloat16 and XLA: step time,
#      TFLOP/s and MFU;
#   4. a sweep of the same step on records it makes from the sample corpus cut into short
#      documents: batch 32-256 at seq 512, 128-1024 at seq 128, each unpacked and packed, until
#      memory runs out; MFU, sequences/s and real tokens/s per point, the best MFU against the
#      goal (>= 0.45 of the bf16 datasheet peak).
# Parts 2 to 4 are tools/device_check.py, which takes this script's arguments and prints the
# PASS/FAIL summary. Exits non-zero when any part failed.
#
#   bash tools/device_check.sh --output_json=device_check.json   # GPU machine
#   bash tools/device_check.sh --tiny                            # CPU, tiny shapes (the suite's)
#
# DEVICE_CHECK_TEST_TIMEOUT (seconds, default 180) bounds part 1, --part_timeout_s (default 180)
# parts 2 and 3, --sweep_budget_s (default 200) the sweep's points (its part: two minutes more).
set -u -o pipefail

cd "$(dirname "$0")/.." || exit 2
PYTHON=${PYTHON:-python3}

if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
fi

# Part 1's tests; DEVICE_CHECK_TESTS replaces them (space-separated pytest ids: the suite's own
# test of this script runs one, the full list being already in the suite).
read -r -a tests <<< "${DEVICE_CHECK_TESTS:-tests/models/test_model_fixture.py tests/optimization/test_optimization.py \
tests/end_to_end/test_run_pretraining.py::test_runner_losses_match_the_original_per_update}"

echo "== device check: fixture tests (float32, TF32 off) =="
# No .pytest_cache: the check may run in a read-only or shared checkout.
if NVIDIA_TF32_OVERRIDE=0 timeout "${DEVICE_CHECK_TEST_TIMEOUT:-180}" "$PYTHON" -m pytest -q \
    -p no:cacheprovider "${tests[@]}"; then
  fixture_tests=passed
else
  fixture_tests=failed
fi

"$PYTHON" tools/device_check.py --fixture_tests="$fixture_tests" "$@"
