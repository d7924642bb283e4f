#!/usr/bin/env bash
# device call 1 (twenty-second session; call 3 of the twenty-first, not run there, plus the screen test on the GPU): the mask pre-pass in fp32 (row maxima of the additive mask, as the
# hand edit) against the hand edit and the integer pre-pass of call 1, alternating, judged; then the GPU tests
# of the masked-block skip and the chained attention on this code, and the expert run of the hf problem
# pre-pass loop bounds, whole-K passes over N) judged on transformers' eager attention (bf16, additive
# mask) and nanoGPT's tril buffer (fp32), the GPU tests of the chained attention and masked-block skip
# on these renders, then a full expert `egg optimize` of the hf problem (stage 2 tunes on the GPU);
# every step bounded by what is left of BUDGET seconds, so the tarball always comes back
set -u
start=$(date +%s); BUDGET=${BUDGET:-540}
left() { echo $(( BUDGET - ($(date +%s) - start) - 15 )); }
bounded() { local t=$1; local l; l=$(left); [ "$l" -lt "$t" ] && t=$l; echo $t; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl >/dev/null 2>&1 || exit 3
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1
D=benchmarks/results/h100-2026-12-07-twentyfirst/renders; L=/tmp/logs; rm -rf $L; mkdir -p $L  # a warm machine keeps the last call's logs: only this call's go in the tarball
C=tests/frontend/corpus/attention_mask
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } > $L/times.txt
ev() {  # problem render tag
  local t; t=$(bounded ${TE:-70}); [ "$t" -lt 20 ] && { echo "eval $3 skipped (budget)" >> $L/times.txt; return; }
  timeout -s INT $t python3 -m egg eval $1 $2 --shapes default --json > $L/eval_$3.json 2> $L/eval_$3.err
  echo "eval $3 rc=$? $(date -u +%FT%TZ)" >> $L/times.txt
}
H=benchmarks/results/h100-2026-12-07-twentieth/renders
ev $C/hf_eager_additive.py $D/hf_eager_additive_float_bounds.py float_1
ev $C/hf_eager_additive.py $H/hf_prepass_bk128.py hand_1
ev $C/hf_eager_additive.py $D/hf_eager_additive_float_bounds.py float_2
ev $C/hf_eager_additive.py $D/hf_eager_additive_triton-matmul-chained.py int_1
t=$(bounded ${T1:-90})
[ "$t" -ge 30 ] && timeout -s INT $t python3 -m pytest -m gpu -v -n 8 -p no:cacheprovider tests -k "chained_attention or masked_key_blocks or screens_a_gemm" > $L/gpu.log 2>&1
echo "gpu rc=$? $(date -u +%FT%TZ)" >> $L/times.txt
t=$(bounded ${T2:-100})  # the expert run again: its tuners now say why a screened config failed
[ "$t" -ge 60 ] && timeout -s INT $t python3 -m egg optimize $C/hf_eager_additive.py --llm none --device cuda --shapes default --budget wall=3m --no-memory --out /tmp/logs/run_hf > $L/opt.log 2>&1
echo "optimize rc=$? $(date -u +%FT%TZ)" >> $L/times.txt
tar czf $OUT/logs.tgz -C /tmp logs
cat $L/times.txt; grep -cE " PASSED" $L/gpu.log; grep -E " (FAILED|ERROR)" $L/gpu.log | head -10; tail -1 $L/gpu.log; grep -A3 'rejected (no candidate)' $L/opt.log | cut -c1-400; grep speedup $L/opt.log
python3 - <<'PY'
import glob, json, os
for f in sorted(glob.glob("/tmp/logs/eval_*.json")):
    try:
        d = json.load(open(f))
        print(os.path.basename(f), d.get("accepted"), d.get("candidate_ms"), d.get("compile_ms"), d.get("eager_ms"), d.get("reasons"))
    except Exception as e:
        print(os.path.basename(f), "unreadable", e)
PY
