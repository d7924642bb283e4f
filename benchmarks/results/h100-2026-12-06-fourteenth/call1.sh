#!/usr/bin/env bash
# one call: int4/int8 A/B (host_bound), GPU tests of the new dequant paths, the judge on int4, ncu on int4 if time is left
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl >/dev/null 2>&1 || exit 3
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; } > $OUT/call_times.txt
P4=workloads/int4_weight_only_linear.py; P8=workloads/int8_weight_only_linear.py
timeout 150 python3 benchmarks/host_bound.py --calls 100 --kernels 2 \
  --problem $P4 --candidate .ab/int4_weight_only_linear_cand.py --problem $P4 --candidate .ab/int4_new_cand.py \
  --problem $P4 --candidate .ab/int4_postscale_prefetch_cand.py \
  --problem $P8 --candidate .ab/int8_weight_only_linear_cand.py --problem $P8 --candidate .ab/int8_new_cand.py \
  --problem $P4 --candidate .ab/int4_weight_only_linear_cand.py --problem $P4 --candidate .ab/int4_new_cand.py \
  --out $OUT/hb_int.json > $OUT/hb_int.log 2>&1
echo "hb rc=$? $(date -u +%FT%TZ)" >> $OUT/call_times.txt
timeout -s INT 110 python3 -m pytest -m gpu -v -n 3 -p no:cacheprovider tests/agents/expert/test_gpu.py \
  -k "int4 or int8 or packed" > $OUT/gpu_tests.log 2>&1
echo "tests rc=$? $(date -u +%FT%TZ)" >> $OUT/call_times.txt
timeout 110 python3 -m egg eval $P4 .ab/int4_new_cand.py --shapes default --json --out $OUT/eval_int4_new > $OUT/eval_int4_new.json 2> $OUT/eval_int4_new.err
echo "eval rc=$? $(date -u +%FT%TZ)" >> $OUT/call_times.txt
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
timeout ${NCU_S:-60} $NCU --set full --nvtx --nvtx-include "egg-candidate/" --target-processes all -f \
  -o $OUT/ncu_int4_new python3 -m egg.profile.target $P4 .ab/int4_new_cand.py > $OUT/ncu_int4_new.log 2>&1
echo "ncu rc=$? $(date -u +%FT%TZ)" >> $OUT/call_times.txt
$NCU --import $OUT/ncu_int4_new.ncu-rep --page details --csv > $OUT/ncu_int4_new_details.csv 2>&1
cat $OUT/call_times.txt
grep -E 'PASSED|FAILED|passed|failed' $OUT/gpu_tests.log | sed -E 's/^.*(PASSED|FAILED)/\1/' | tail -20
python3 - <<'PY'
import json, os
d = json.load(open(os.environ["OUT"] + "/hb_int.json"))
for r in d["rows"]:
    print({k: ({m: v.get(m) for m in ("event_ms", "kernel_ms", "error")} if isinstance(v, dict) else v) for k, v in r.items()})
try:
    v = json.load(open(os.environ["OUT"] + "/eval_int4_new.json"))
    print({k: v.get(k) for k in ("accepted", "stage_failed", "reasons", "candidate_ms", "eager_ms", "compile_ms", "speedup_vs_compile", "floor_ms")})
except Exception as exc:
    print("no verdict", exc)
PY
grep -E '"(Duration|DRAM Throughput|Achieved Occupancy|Registers Per Thread|Compute \(SM\) Throughput|L2 Hit Rate|Issue Slots Busy|No Eligible)"' $OUT/ncu_int4_new_details.csv | awk -F'","' '{print $(NF-2)" = "$NF}' | head -12
