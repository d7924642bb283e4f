#!/usr/bin/env bash
# device call 3 (eighteenth session): the GPU tests calls 1-2 ran out of time for; logs in one tarball
# (a call returns at most 8 files)
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl >/dev/null 2>&1 || exit 3
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1
L=$OUT/logs; mkdir -p $L
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } > $L/times.txt
timeout -s INT ${T1:-190} python3 -m pytest -m gpu -v -n 4 -p no:cacheprovider tests -k "clock_check_holds or flush_the_clock or illegal_memory or strict_fp32 or memory_peak or fp64_run" > $L/gpu_harness_rest.log 2>&1
echo "harness_rest rc=$? $(date -u +%FT%TZ)" >> $L/times.txt
K2="scan or softmax_online_nan or topk_threshold_tied or welford or online_softmax_with or phase_gemms or rounding_the_input or packed_weights or cuda_build"
timeout -s INT ${T2:-200} python3 -m pytest -m gpu -v -n 8 -p no:cacheprovider tests -k "$K2" > $L/gpu_expert.log 2>&1
echo "expert rc=$? $(date -u +%FT%TZ)" >> $L/times.txt
tar czf $OUT/logs.tgz -C $OUT logs
cat $L/times.txt
for f in $L/gpu_*.log; do echo "== $f"; grep -cE ' PASSED' $f; grep -E ' (FAILED|ERROR)' $f | head -8; tail -1 $f; done
