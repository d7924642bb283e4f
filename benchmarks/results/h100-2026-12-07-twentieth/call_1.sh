#!/usr/bin/env bash
# device call 1 (twentieth session): the judge on flash attention's one pass with and without the
# skip of key blocks a causal mask removes (transformers' eager attention with its additive mask, bf16;
# nanoGPT's tril buffer, fp32 3xTF32), then the GPU tests of what changed since they last ran (chained
# attention incl. the bf16 197 x 80 case the judge's exact route rejected, the masked-block skip) and
# those not run since they last changed (phase / implicit GEMMs, packed weights, cuda_build); each step
# bounded by what is left of BUDGET seconds, so the tarball always comes back (8 files a call)
set -u
start=$(date +%s); BUDGET=${BUDGET:-540}
left() { echo $(( BUDGET - ($(date +%s) - start) - 15 )); }
bounded() { local t=$1; local l; l=$(left); [ "$l" -lt "$t" ] && t=$l; echo $t; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl >/dev/null 2>&1 || exit 3
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1
D=benchmarks/results/h100-2026-12-07-twentieth/renders; L=/tmp/logs; mkdir -p $L
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } > $L/times.txt
ev() {  # problem render tag
  local t; t=$(bounded ${TE:-55}); [ "$t" -lt 20 ] && { echo "eval $3 skipped (budget)" >> $L/times.txt; return; }
  timeout -s INT $t python3 -m egg eval $1 $2 --shapes default --json > $L/eval_$3.json 2> $L/eval_$3.err
  echo "eval $3 rc=$? $(date -u +%FT%TZ)" >> $L/times.txt
}
C=tests/frontend/corpus/attention_mask
ev $C/hf_eager_additive.py $D/hf_chained_skip.py hf_skip
ev $C/hf_eager_additive.py $D/hf_chained_noskip.py hf_noskip
ev $C/nanogpt_tril.py $D/nanogpt_chained_skip.py nanogpt_skip
ev $C/nanogpt_tril.py $D/nanogpt_chained_noskip.py nanogpt_noskip
K="chained_attention or masked_key_blocks or upcast_operands or phase_gemms or implicit or packed_weights or cuda_build"
t=$(bounded ${T1:-200})
[ "$t" -ge 30 ] && timeout -s INT $t python3 -m pytest -m gpu -v -n 8 -p no:cacheprovider tests -k "$K" > $L/gpu.log 2>&1
echo "gpu rc=$? $(date -u +%FT%TZ)" >> $L/times.txt
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
