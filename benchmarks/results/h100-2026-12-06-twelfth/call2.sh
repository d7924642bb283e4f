#!/usr/bin/env bash
# 2026-12-06 twelfth session, call 2: ONLINE_MAX row vs lane on cross-entropy, the lane GPU tests
# the judge's peak per phase, then row vs lane on KernelBench level 1 #23/#24
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl >/dev/null 2>&1 || exit 3
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; } > $OUT/call1_times.txt
timeout 140 python3 benchmarks/config_probe.py workloads/cross_entropy_large_vocab.py --reps 15 --grid '[{}, {"ONLINE_MAX": "lane"}, {"ONLINE_MAX": "lane", "RBLOCK": 4096}, {"ONLINE_MAX": "lane", "RBLOCK": 1024}, {"RBLOCK": 4096}]' --out $OUT/call1_probe_ce.json > $OUT/call1_probe_ce.log 2>&1
date -u +%FT%TZ >> $OUT/call1_times.txt
timeout 80 python3 -m pytest -m gpu -v -p no:cacheprovider tests/agents/expert/test_gpu.py -k "running_max_per_lane" > $OUT/call1_gpu_tests.log 2>&1
date -u +%FT%TZ >> $OUT/call1_times.txt
