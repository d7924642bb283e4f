#!/usr/bin/env bash
# device call 1 (eighteenth session): the upcast GPU tests, the judge on every short_seq_attention
# structure (the new 16-bit-products variant beside the others), then the GPU tests not named since they changed
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl >/dev/null 2>&1 || exit 3
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1
R=benchmarks/results/h100-2026-12-07-eighteenth/renders
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } > $OUT/times.txt
timeout -s INT ${T1:-150} python3 -m pytest -m gpu -v -n 4 -p no:cacheprovider tests -k "upcast or short_seq" > $OUT/gpu_upcast.log 2>&1
echo "upcast rc=$? $(date -u +%FT%TZ)" >> $OUT/times.txt
for v in triton-matmul-halves triton-matmul-3xtf32 fused triton-matmul-ieee less-fused; do
  timeout -s INT ${TE:-75} python3 -m egg eval workloads/short_seq_attention.py $R/ssa_$v.py --shapes default --json > $OUT/eval_$v.json 2> $OUT/eval_$v.err
  echo "eval $v rc=$? $(date -u +%FT%TZ)" >> $OUT/times.txt
done
K2="structures_compile or online_softmax or phase_gemms or rounding_the_input or packed_weights or swiglu or cuda_build"
timeout -s INT ${T2:-150} python3 -m pytest -m gpu -v -n 6 -p no:cacheprovider tests -k "$K2" > $OUT/gpu_expert.log 2>&1
echo "expert rc=$? $(date -u +%FT%TZ)" >> $OUT/times.txt
timeout -s INT ${T3:-120} python3 -m pytest -m gpu -v -n 4 -p no:cacheprovider tests -k "harness_gpu" > $OUT/gpu_harness.log 2>&1
echo "harness rc=$? $(date -u +%FT%TZ)" >> $OUT/times.txt
cat $OUT/times.txt
python3 - <<'PY'
import json, glob, os
for f in sorted(glob.glob(os.environ["OUT"] + "/eval_*.json")):
    try:
        d = json.load(open(f)); print(os.path.basename(f), json.dumps(d)[:600])
    except Exception as e: print(os.path.basename(f), "unreadable", e)
PY
for f in $OUT/gpu_*.log; do echo "== $f"; grep -cE ' PASSED' $f; grep -E ' (FAILED|ERROR)' $f | head -8; tail -1 $f; done
