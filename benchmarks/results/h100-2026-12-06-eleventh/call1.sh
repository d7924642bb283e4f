set -u
R=$OUT; mkdir -p /tmp/o1 /tmp/o2
OUT=/tmp/o1 TESTS_S=300 WORKERS=3 FILES="tests/evaluate/test_harness_gpu.py tests/evaluate/test_ablation.py tests/evaluate/test_cuda_build.py" bash benchmarks/gpu_tests_call.sh
OUT=/tmp/o2 CHECK_S=275 JUDGE_S=265 L1=21,26 L2=91,96 bash benchmarks/device_check_call.sh
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader >> /tmp/o2/times.txt
tar czf $R/call1.tgz -C /tmp o1 o2
cat /tmp/o1/times.txt /tmp/o2/times.txt; tail -4 /tmp/o2/kb_l1.log /tmp/o2/kb_l2.log
