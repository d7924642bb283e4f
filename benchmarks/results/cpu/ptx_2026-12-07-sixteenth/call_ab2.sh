#!/usr/bin/env bash
# one short call: top-k KEPT_STORE A/B (host_bound), the judge on the kept-store render, GPU tests of kept keys
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl >/dev/null 2>&1 || exit 3
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; } > $OUT/call_times.txt
P=workloads/topk_sampling_logits.py
timeout 120 python3 benchmarks/host_bound.py --calls 60 --kernels 1 \
  --problem $P --candidate .ab/topk_store.py --problem $P --candidate .ab/topk_default.py \
  --problem $P --candidate .ab/topk_old_default.py --problem $P --candidate .ab/topk_store_w8.py \
  --problem $P --candidate .ab/topk_store.py --problem $P --candidate .ab/topk_default.py \
  --out $OUT/hb_topk.json > $OUT/hb_topk.log 2>&1
echo "hb rc=$? $(date -u +%FT%TZ)" >> $OUT/call_times.txt
timeout 90 python3 -m egg eval $P .ab/topk_store.py --shapes default --json --out $OUT/eval_topk_store > $OUT/eval_topk_store.json 2> $OUT/eval_topk_store.err
echo "eval rc=$? $(date -u +%FT%TZ)" >> $OUT/call_times.txt
timeout -s INT ${TESTS_S:-100} python3 -m pytest -m gpu -v -n 3 -p no:cacheprovider tests/agents/expert/test_gpu.py \
  -k "${TESTS_K:-kept_keys}" > $OUT/gpu_tests.log 2>&1
echo "tests rc=$? $(date -u +%FT%TZ)" >> $OUT/call_times.txt
cat $OUT/call_times.txt
grep -E 'PASSED|FAILED|ERROR|passed|failed' $OUT/gpu_tests.log | sed -E 's/^.*::(.*) (PASSED|FAILED|ERROR).*/\2 \1/' | tail -8
python3 - <<'PY'
import json, os
d = json.load(open(os.environ["OUT"] + "/hb_topk.json"))
for r in d["rows"]:
    print({k: ({m: v.get(m) for m in ("event_ms", "kernel_ms", "error")} if isinstance(v, dict) else v) for k, v in r.items()})
try:
    v = json.load(open(os.environ["OUT"] + "/eval_topk_store.json"))
    print({k: v.get(k) for k in ("accepted", "stage_failed", "reasons", "candidate_ms", "eager_ms", "compile_ms", "speedup_vs_compile")})
except Exception as exc:
    print("no verdict", exc)
PY
