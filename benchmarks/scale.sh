#!/usr/bin/env bash
# The `scale` issue: `whichdevice scale --devices 1,2` per framework on this machine (CPU replicas):
# wall time, the load before and after (`uptime`), and the verdict lines. The records, plots and
# HTML reports stay in OUT (printed at the end); `whichdevice report RECORD` re-renders a table.
# Usage: bash benchmarks/scale.sh [frameworks...]   (default: torch keras-jax tensorflow)
set -uo pipefail
WD=${WHICHDEVICE:-whichdevice}
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"
fws=("$@"); [ ${#fws[@]} -eq 0 ] && fws=(torch keras-jax tensorflow)
echo "| framework | wall s | exit | load before | load after |"
echo "| --- | ---: | ---: | --- | --- |"
for fw in "${fws[@]}"; do
  before=$(uptime | sed 's/.*load average: //')
  t0=$(date +%s.%N)
  $WD scale --framework "$fw" --devices 1,2 --min-time 0.1 --out "$OUT/$fw" > "$OUT/$fw.log" 2>&1
  rc=$?
  t1=$(date +%s.%N)
  after=$(uptime | sed 's/.*load average: //')
  printf '| %s | %.1f | %d | %s | %s |\n' "$fw" "$(echo "$t1 - $t0" | bc)" "$rc" "$before" "$after"
done
echo
for fw in "${fws[@]}"; do grep -h "^$fw: " "$OUT/$fw.log"; done
echo "records, plots, HTML and logs: $OUT" >&2
