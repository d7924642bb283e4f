set -u
R=$OUT; mkdir -p /tmp/o1 /tmp/o2
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl >/dev/null 2>&1 || exit 3
{ date -u +%FT%TZ; PYTHONPATH=$PWD:/tmp/site timeout 120 python3 .ab/peak.py; date -u +%FT%TZ; } > /tmp/o1/peak.txt 2>/tmp/o1/peak.err
OUT=/tmp/o2 CHECK_S=280 JUDGE_S=200 L1=31,36,76 TESTS_K="strided_transposed or implicit_gemms_rounding or bf16" bash benchmarks/device_check_call.sh
tar czf $R/call2.tgz -C /tmp o1 o2
cat /tmp/o1/peak.txt; tail -2 /tmp/o1/peak.err; cat /tmp/o2/times.txt; tail -n 4 /tmp/o2/kb_l1.log; grep -E "passed|failed" /tmp/o2/gpu_tests*.log | tail -n 3
