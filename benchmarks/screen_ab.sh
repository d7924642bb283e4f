#!/usr/bin/env bash
# The A/B of tuning by measurement (issue 13): the same problems through the expert agents' default
# budget, arm A as shipped (stage-2 tuners screen their configs on the GPU, agents/expert/screen.py)
# and arm B with benchmarks/packs/no_screen (the packs' order, unmeasured: the tuners before the
# screen), side by side on one GPU. The judge's and the screen's GPU lock keep every timing apart;
# each lane has its own cache directory, so no arm's transition memory learns from the other.
#
#   bash benchmarks/screen_ab.sh OUT SECONDS GROUP [GROUP ...]
#
# GROUP: comma-separated workload names (benchmarks/expert_workloads.py --only), one lane per group
# and arm. Lanes start no new problem after SECONDS - START_BEFORE_END (default 210) seconds and are
# interrupted at SECONDS; call again with the same OUT to resume (finished rows are kept).
# PROBLEMS=DIR runs problem files of DIR instead of workloads/. Results: OUT/{a,b}-N.json, the run
# directories' reports and candidate sources in OUT/runs.tgz. On the device tool keep OUT outside $OUT
# and tar it into one file there: a call returns a limited number of files (call 1 of 2026-12-03's fifth
# session lost arm B's second lane file that way).
set -u
S=${1:?OUT}; SECS=${2:?SECONDS}; shift 2
mkdir -p "$S"
export PYTHONUNBUFFERED=1
start_before=$(( SECS - ${START_BEFORE_END:-210} ))
i=0
for group in "$@"; do
    i=$(( i + 1 ))
    for arm in a b; do
        extra=()
        [ "$arm" = b ] && extra=(--principles benchmarks/packs/no_screen)
        [ -n "${PROBLEMS:-}" ] && extra+=(--problems "$PROBLEMS")
        EGG_CACHE_DIR="$S/cache-$arm-$i" timeout -s INT -k 20 "$SECS" python3 benchmarks/expert_workloads.py \
            --only "$group" --out "$S/$arm-$i.json" --resume --deadline "$start_before" --profile roofline \
            --runs "$S/runs/$arm-$i" "${extra[@]}" > "$S/$arm-$i.log" 2>&1 &
    done
done
wait
( cd "$S" && find runs -name '*.json' -o -name '*.py' | tar czf runs.tgz -T - 2>/dev/null )
for f in "$S"/[ab]-*.json; do
    python3 - "$f" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))
rows = rows.get("rows", rows.get("partial", []))
for r in rows:
    print(sys.argv[1].rsplit("/", 1)[-1], r.get("workload"), r.get("best_ms"), r.get("compile_ms"),
          r.get("speedup_vs_compile"), round(r.get("wall_s") or 0), r.get("error") or r.get("skipped") or "")
PY
done
