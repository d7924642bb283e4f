#!/usr/bin/env bash
# Judged KernelBench runs at the working tree, the sweep's budget (run by the device tool)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl >/dev/null 2>&1 || exit 3
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1
date -u +%FT%TZ > $OUT/times.txt
for spec in $SPECS; do  # level:ids
  lvl=${spec%%:*}; ids=${spec#*:}
  timeout -s INT ${EACH_S:-200} python3 -m egg kernelbench --root .kb/KernelBench --level $lvl --ids $ids --out /tmp/kb_l${lvl}_${ids//,/_} \
     --budget candidates=5,rounds=1,stage2_rounds=1,top_k=1 --profile roofline --device cuda > $OUT/kb_l${lvl}_${ids//,/_}.log 2>&1
  echo "$spec rc=$? $(date -u +%FT%TZ)" >> $OUT/times.txt
done
cd /tmp && tar czf $OUT/judged.tgz --exclude='*.pt' --exclude='*.so' --exclude='*.cubin' kb_l* 2>/dev/null
python3 - <<'PY'
import glob, json
for f in sorted(glob.glob("/tmp/kb_l*/suite.json")):
    for r in json.load(open(f))["results"]:
        print(r["level"], r["problem_name"], r["correctness"], r.get("candidate_ms"), r.get("compile_ms"), r.get("eager_ms"),
              r.get("speedup_vs_compile"), (r.get("reasons") or [""])[0][:150])
PY
