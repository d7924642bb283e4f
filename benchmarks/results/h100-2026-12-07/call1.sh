#!/usr/bin/env bash
# one H100 call: top-k kept-key reductions A/B (host_bound), judged top-k, GPU tests of select/kept + the rest
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl >/dev/null 2>&1 || exit 3
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; } > $OUT/call_times.txt
P=workloads/topk_sampling_logits.py
timeout 150 python3 benchmarks/host_bound.py --calls 100 --kernels 1 \
  --problem $P --candidate .ab/topk_pass.py --problem $P --candidate .ab/topk_kept.py \
  --problem $P --candidate .ab/topk_pass_w16.py --problem $P --candidate .ab/topk_kept_w16.py \
  --problem $P --candidate .ab/topk_pass.py --problem $P --candidate .ab/topk_kept.py \
  --out $OUT/hb_topk.json > $OUT/hb_topk.log 2>&1
echo "hb rc=$? $(date -u +%FT%TZ)" >> $OUT/call_times.txt
timeout 100 python3 -m egg eval $P .ab/topk_kept.py --shapes default --json --out $OUT/eval_topk_kept > $OUT/eval_topk_kept.json 2> $OUT/eval_topk_kept.err
echo "eval rc=$? $(date -u +%FT%TZ)" >> $OUT/call_times.txt
timeout -s INT ${TESTS_S:-200} python3 -m pytest -m gpu -v -n 3 -p no:cacheprovider tests/agents/expert/test_gpu.py \
  -k "${TESTS_K:-kept or topk or kthvalue}" > $OUT/gpu_tests.log 2>&1
echo "tests rc=$? $(date -u +%FT%TZ)" >> $OUT/call_times.txt
cat $OUT/call_times.txt
grep -E 'PASSED|FAILED|ERROR|passed|failed' $OUT/gpu_tests.log | sed -E 's/^.*(PASSED|FAILED|ERROR)/\1/' | tail -30
python3 - <<'PY'
import json, os
d = json.load(open(os.environ["OUT"] + "/hb_topk.json"))
for r in d["rows"]:
    print({k: ({m: v.get(m) for m in ("event_ms", "kernel_ms", "error")} if isinstance(v, dict) else v) for k, v in r.items()})
try:
    v = json.load(open(os.environ["OUT"] + "/eval_topk_kept.json"))
    print({k: v.get(k) for k in ("accepted", "stage_failed", "reasons", "candidate_ms", "eager_ms", "compile_ms", "speedup_vs_compile", "floor_ms")})
except Exception as exc:
    print("no verdict", exc)
PY
