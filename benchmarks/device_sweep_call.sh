#!/usr/bin/env bash
# One device call of a sweep that spans calls (and sessions) at one frozen commit (issue 13), run
# by the `device` tool from the repository root with `.whl`, `.kb` and `.frozen` carried:
#
#   COMMIT=<sha> SWEEP_S=500 [STATE=path/to/sweep.tgz] [LANES=3] [KB_SPLIT=2] [TESTS_K=expr TESTS_S=90] \
#       bash benchmarks/device_sweep_call.sh
#
# Before the first call: `git archive $COMMIT -- . ':!benchmarks/results' | tar x -C .frozen` (and
# `.frozen/` in .git/info/exclude), `bash ../shared/device/wheelhouse.sh` for `.whl`. Each call
# installs the wheels, restores /tmp/sweep from STATE when the machine is fresh (a warm machine keeps
# /tmp/sweep between back-to-back calls), runs benchmarks/h200_sweep.sh from `.frozen` for SWEEP_S
# seconds and leaves $OUT/sweep.tgz (packed every 60 s and at the end: copy it back as the next
# call's STATE) and $OUT/times.txt. The KernelBench checkout is `.kb/KernelBench`.
# LANES=3 (the levels side by side) and KB_SPLIT>1 on level 1 need a commit with the device lease
# (egg/evaluate/device_lease.py, c2c4ba5); at older commits use LANES=2 and KB_SPLIT=1 on level 1.
# TESTS_K runs `pytest -m gpu tests/agents/expert/test_gpu.py -k TESTS_K` from the working tree for
# TESTS_S seconds after the sweep has stopped (never beside its timings), into $OUT/gpu_tests.log.
set -u
: "${COMMIT:?the frozen commit}" "${OUT:?run me through the device tool}"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl >/dev/null 2>&1 || exit 3
export PYTHONUNBUFFERED=1
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } > "$OUT/times.txt"
if [ ! -d /tmp/sweep ] && [ -n "${STATE:-}" ] && [ -f "$STATE" ]; then tar xzf "$STATE" -C /tmp; fi
( cd .frozen && PYTHONPATH=$PWD:/tmp/site EGG_COMMIT=$COMMIT PACK=$OUT/sweep.tgz LANES=${LANES:-2} \
    KB_SPLIT=${KB_SPLIT:-1} bash benchmarks/h200_sweep.sh /tmp/sweep ../.kb/KernelBench "${SWEEP_S:-500}" ) > "$OUT/sweep.log" 2>&1
date -u +%FT%TZ >> "$OUT/times.txt"
if [ -n "${TESTS_K:-}" ]; then
  PYTHONPATH=$PWD:/tmp/site timeout -s INT "${TESTS_S:-90}" python3 -m pytest -m gpu -v tests/agents/expert/test_gpu.py \
      -k "$TESTS_K" > "$OUT/gpu_tests.log" 2>&1
  date -u +%FT%TZ >> "$OUT/times.txt"
fi
