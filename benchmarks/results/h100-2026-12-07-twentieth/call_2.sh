#!/usr/bin/env bash
# device call 2 (twentieth session): why the masked-block skip left transformers' bf16 attention at
# 0.157 ms (0.159 without it) while nanoGPT's fp32 one fell 0.706 -> 0.481: the judge on a hand edit
# that reloads the mask after the K loop instead of keeping it live, ncu (speed of light, instruction
# counts, launch stats) on the three renders, then the GPU tests call 1 ran out of time for; each step
# bounded by what is left of BUDGET seconds, so the tarball always comes back
set -u
start=$(date +%s); BUDGET=${BUDGET:-420}
left() { echo $(( BUDGET - ($(date +%s) - start) - 15 )); }
bounded() { local t=$1; local l; l=$(left); [ "$l" -lt "$t" ] && t=$l; echo $t; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl >/dev/null 2>&1 || exit 3
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1
D=benchmarks/results/h100-2026-12-07-twentieth/renders; L=/tmp/logs; mkdir -p $L
C=tests/frontend/corpus/attention_mask
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } > $L/times.txt
t=$(bounded 50); timeout -s INT $t python3 -m egg eval $C/hf_eager_additive.py $D/hf_skip_reload.py --shapes default --json > $L/eval_hf_reload.json 2> $L/eval_hf_reload.err
echo "eval hf_reload rc=$? $(date -u +%FT%TZ)" >> $L/times.txt
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for r in hf_chained_skip hf_chained_noskip hf_skip_reload; do
  t=$(bounded 40); [ "$t" -lt 15 ] && break
  timeout $t $NCU --section SpeedOfLight --section InstructionStats --section LaunchStats --section Occupancy \
    --nvtx --nvtx-include "egg-candidate/" --target-processes all --csv --page details \
    python3 -m egg.profile.target $C/hf_eager_additive.py $D/$r.py > $L/ncu_$r.csv 2> $L/ncu_$r.err
  echo "ncu $r rc=$? $(date -u +%FT%TZ)" >> $L/times.txt
done
K="phase_gemms or implicit or packed_weights or cuda_build"
t=$(bounded 400)
[ "$t" -ge 30 ] && timeout -s INT $t python3 -m pytest -m gpu -v -n 8 -p no:cacheprovider tests -k "$K" > $L/gpu.log 2>&1
echo "gpu rc=$? $(date -u +%FT%TZ)" >> $L/times.txt
tar czf $OUT/logs.tgz -C /tmp logs
cat $L/times.txt; grep -cE " PASSED" $L/gpu.log; grep -E " (FAILED|ERROR)" $L/gpu.log | head -10; tail -1 $L/gpu.log
python3 -c "
import json; d=json.load(open('/tmp/logs/eval_hf_reload.json')); print('hf_reload', d.get('accepted'), d.get('candidate_ms'), d.get('generated_gpu_ms'), d.get('compile_ms'), d.get('reasons'))" 2>&1 | tail -1
for r in hf_chained_skip hf_chained_noskip hf_skip_reload; do echo "== $r"; grep -E '"(Duration|Executed Instructions|Registers Per Thread|Achieved Occupancy|Compute \(SM\) Throughput|Memory Throughput)"' $L/ncu_$r.csv | awk -F'","' '{print $(NF-2)": "$NF}' | head -8; done
