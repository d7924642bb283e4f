#!/usr/bin/env bash
# One device call that checks a tree's new kernels before a sweep (the device tool, from the
# repository root, with `.whl` and `.kb` carried; `bash ../shared/device/wheelhouse.sh` fills `.whl`):
#
#   [CHECK_S=540] [JUDGE_S=360] [TESTS_K="pytest -k expression"] [L1=1,2,6] [L2=46,35] [WORKLOADS=a,b] \
#       bash benchmarks/device_check_call.sh
#
# Runs, side by side on the one GPU (the judges' GPU lock and device lease keep their timings and
# memory apart), the judge at the expert default on the listed KernelBench level 1 and 2 ids (`egg
# kernelbench`, one process per level) and workloads (`benchmarks/expert_workloads.py --only`) for
# JUDGE_S seconds (default: two thirds of CHECK_S); then, with the device to themselves, the GPU tests
# (`pytest -m gpu` on tests/agents/expert/test_gpu.py, -k $TESTS_K, and
# tests/agents/expert/test_conv_gemm.py). The tests hold no device lease, so an evaluation beside them
# could not tell their memory from its own (2026-12-05: level 1 #36's kernel ablation ran out of memory
# beside the tests' 57 GB and the verdict blamed the candidate); hence one after the other. Everything lands in $OUT: gpu_tests.log, kb_l1.json and
# kb_l2.json (the suites' results.json), gpu_tests_conv_gemm.log, check_state.tgz (every run directory), workloads.json, the
# logs, and times.txt; CHECK_S bounds the whole call.
set -u
: "${OUT:?run me through the device tool}"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl >/dev/null 2>&1 || exit 3
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1
LIMIT=${CHECK_S:-540}
JUDGE_LIMIT=${JUDGE_S:-$(( LIMIT * 2 / 3 ))}
START=$(date +%s)
{ date -u +%FT%TZ; git rev-parse --short HEAD 2>/dev/null || echo "(no git)"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } > "$OUT/times.txt"
BUDGET=candidates=3,rounds=1,stage2_rounds=0,top_k=1
pids=()
for level in 1 2; do
  ids=$([ "$level" = 1 ] && echo "${L1:-}" || echo "${L2:-}")
  [ -z "$ids" ] && continue
  timeout -s INT "$JUDGE_LIMIT" python3 -m egg kernelbench --root .kb/KernelBench --level "$level" --ids "$ids" \
      --out "/tmp/check_l$level" --budget "$BUDGET" --device cuda > "$OUT/kb_l$level.log" 2>&1 & pids+=($!)
done
if [ -n "${WORKLOADS:-}" ]; then
  timeout -s INT "$JUDGE_LIMIT" python3 benchmarks/expert_workloads.py --only "$WORKLOADS" --out "$OUT/workloads.json" \
      > "$OUT/workloads.log" 2>&1 & pids+=($!)
fi
pack() {  # every verdict and report, for sweep_tables.py and the record
  for level in 1 2; do
    [ -d "/tmp/check_l$level" ] && cp "/tmp/check_l$level/results.json" "$OUT/kb_l$level.json" 2>/dev/null
  done
  tar czf "$OUT/check_state.tgz" -C /tmp $(cd /tmp && ls -d check_l1 check_l2 2>/dev/null) 2>/dev/null
}
for p in "${pids[@]}"; do wait "$p"; done
echo "judges done: $(date -u +%FT%TZ)" >> "$OUT/times.txt"
# Packed now as well as at the end: a call cut by the device tool's limit during the tests still
# brings the judged runs back (2026-12-06, eleventh session: a 330 s limit under CHECK_S=280 plus a
# 120 s step before it cut the call in the tests, and the verdicts' JSON never came back).
pack
LEFT=$(( LIMIT - ($(date +%s) - START) ))
if [ "$LEFT" -gt 20 ]; then
  timeout -s INT "$LEFT" python3 -m pytest -m gpu -v tests/agents/expert/test_gpu.py ${TESTS_K:+-k "$TESTS_K"} \
      > "$OUT/gpu_tests.log" 2>&1
  LEFT=$(( LIMIT - ($(date +%s) - START) ))
  [ "$LEFT" -gt 10 ] && timeout -s INT "$LEFT" python3 -m pytest -m gpu -v tests/agents/expert/test_conv_gemm.py \
      > "$OUT/gpu_tests_conv_gemm.log" 2>&1
fi
pack
date -u +%FT%TZ >> "$OUT/times.txt"
