#!/usr/bin/env bash
# device call 1 (nineteenth session): every GPU test not run since it last changed (chained attention,
# welford / online-softmax structures, phase / implicit GEMMs, packed weights, cuda_build), then the judge
# on the chained short_seq render, the halves render, and the passes over N (flash attention in two
# passes) on the corpus's 1024-token attentions beside their fused (cuBLAS bmm) renders; logs in one
# tarball (8 files a call)
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl >/dev/null 2>&1 || exit 3
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1
D=benchmarks/results/h100-2026-12-07-nineteenth/renders; L=/tmp/logs; mkdir -p $L
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; git log -1 --format=%h 2>/dev/null; } > $L/times.txt
K="softmax_online_nan or welford or phase_gemms or implicit or packed_weights or cuda_build or chained"
timeout -s INT ${T1:-200} python3 -m pytest -m gpu -v -n 8 -p no:cacheprovider tests -k "$K" > $L/gpu.log 2>&1
echo "gpu rc=$? $(date -u +%FT%TZ)" >> $L/times.txt
ev() {  # problem render tag
  timeout -s INT ${TE:-55} python3 -m egg eval $1 $2 --shapes default --json > $L/eval_$3.json 2> $L/eval_$3.err
  echo "eval $3 rc=$? $(date -u +%FT%TZ)" >> $L/times.txt
}
C=tests/frontend/corpus/attention_mask
ev workloads/short_seq_attention.py benchmarks/results/cpu/ptx_2026-12-07-eighteenth/ssa_chained.py ssa_chained
ev workloads/short_seq_attention.py benchmarks/results/h100-2026-12-07-eighteenth/renders/ssa_triton-matmul-halves.py ssa_halves
ev $C/hf_eager_additive.py $D/hf_eager_additive_triton-matmul-chained.py hf_chained
ev $C/hf_eager_additive.py $D/hf_eager_additive_fused.py hf_fused
ev $C/nanogpt_tril.py $D/nanogpt_tril_triton-matmul-chained.py nanogpt_chained
ev $C/nanogpt_tril.py $D/nanogpt_tril_chained-3xtf32.py nanogpt_chained_3xtf32
tar czf $OUT/logs.tgz -C /tmp logs
cat $L/times.txt; grep -cE " PASSED" $L/gpu.log; grep -E " (FAILED|ERROR)" $L/gpu.log | head -10; tail -1 $L/gpu.log
python3 - <<'PY'
import glob, json, os
for f in sorted(glob.glob("/tmp/logs/eval_*.json")):
    try:
        d = json.load(open(f))
        print(os.path.basename(f), d.get("accepted"), d.get("candidate_ms"), d.get("compile_ms"), d.get("eager_ms"), d.get("reasons"))
    except Exception as e:
        print(os.path.basename(f), "unreadable", e)
PY
