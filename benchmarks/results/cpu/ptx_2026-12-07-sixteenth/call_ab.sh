#!/usr/bin/env bash
# one call: top-k KEPT_STORE A/B (host_bound), judged renders, GPU tests of kept keys + bf16 implicit gemm
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl >/dev/null 2>&1 || exit 3
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; } > $OUT/call_times.txt
P=workloads/topk_sampling_logits.py
timeout 170 python3 benchmarks/host_bound.py --calls 100 --kernels 1 \
  --problem $P --candidate .ab/topk_default.py --problem $P --candidate .ab/topk_store.py --problem $P --candidate .ab/topk_old_default.py \
  --problem $P --candidate .ab/topk_store_w8.py --problem $P --candidate .ab/topk_store_r4096.py \
  --problem $P --candidate .ab/topk_default.py --problem $P --candidate .ab/topk_store.py --problem $P --candidate .ab/topk_old_default.py \
  --out $OUT/hb_topk.json > $OUT/hb_topk.log 2>&1
echo "hb rc=$? $(date -u +%FT%TZ)" >> $OUT/call_times.txt
for n in topk_store topk_default; do
  timeout 100 python3 -m egg eval $P .ab/$n.py --shapes default --json --out $OUT/eval_$n > $OUT/eval_$n.json 2> $OUT/eval_$n.err
  echo "eval $n rc=$? $(date -u +%FT%TZ)" >> $OUT/call_times.txt
done
timeout -s INT ${TESTS_S:-150} python3 -m pytest -m gpu -v -n 2 -p no:cacheprovider tests/agents/expert/test_gpu.py \
  -k "${TESTS_K:-kept_keys or bf16_implicit_gemm}" > $OUT/gpu_tests.log 2>&1
echo "tests rc=$? $(date -u +%FT%TZ)" >> $OUT/call_times.txt
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for n in topk_store; do
  timeout ${NCU_S:-45} $NCU --set full --nvtx --nvtx-include "egg-candidate/" --target-processes all -f \
    -o $OUT/ncu_$n python3 -m egg.profile.target $P .ab/$n.py > $OUT/ncu_$n.log 2>&1
  echo "ncu $n rc=$? $(date -u +%FT%TZ)" >> $OUT/call_times.txt
  $NCU --import $OUT/ncu_$n.ncu-rep --page details --csv > $OUT/ncu_${n}_details.csv 2>&1
done
cat $OUT/call_times.txt
grep -E 'PASSED|FAILED|ERROR|passed|failed' $OUT/gpu_tests.log | sed -E 's/^.*::(.*) (PASSED|FAILED|ERROR).*/\2 \1/' | tail -12
python3 - <<'PY'
import json, os
d = json.load(open(os.environ["OUT"] + "/hb_topk.json"))
for r in d["rows"]:
    print({k: ({m: v.get(m) for m in ("event_ms", "kernel_ms", "error")} if isinstance(v, dict) else v) for k, v in r.items()})
for n in ("topk_store", "topk_default"):
    try:
        v = json.load(open(os.environ["OUT"] + f"/eval_{n}.json"))
        print(n, {k: v.get(k) for k in ("accepted", "stage_failed", "reasons", "candidate_ms", "eager_ms", "compile_ms", "speedup_vs_compile")})
    except Exception as exc:
        print(n, "no verdict", exc)
PY
for n in topk_store topk_default; do echo "== ncu $n"; grep -E '"(Duration|DRAM Throughput|Achieved Occupancy|Registers Per Thread|Compute \(SM\) Throughput|L2 Hit Rate|Issue Slots Busy|No Eligible|Memory Throughput)"' $OUT/ncu_${n}_details.csv | awk -F'","' '{print $(NF-2)" = "$NF}' | head -12; done
