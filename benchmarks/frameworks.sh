#!/usr/bin/env bash
# Wall time of `whichdevice matmul --quick` and `whichdevice train --quick` per framework on
# this machine (CPU only here). Prints one markdown row per (framework, command).
# Usage: bash benchmarks/frameworks.sh [frameworks...]   (default: all that train, + jax for matmul)
set -uo pipefail
WD=${WHICHDEVICE:-whichdevice}
OUT=$(mktemp -d)
fws=("$@"); [ ${#fws[@]} -eq 0 ] && fws=(tensorflow keras-jax keras-torch torch jax)
echo "| framework | command | wall s | exit |"
echo "| --- | --- | ---: | ---: |"
for fw in "${fws[@]}"; do
  for cmd in matmul train; do
    [ "$fw" = jax ] && [ "$cmd" = train ] && continue   # jax has matmul only
    t0=$(date +%s.%N)
    $WD $cmd --quick --framework "$fw" --out "$OUT/$fw-$cmd" > "$OUT/$fw-$cmd.log" 2>&1
    rc=$?
    t1=$(date +%s.%N)
    printf '| %s | %s --quick | %.1f | %d |\n' "$fw" "$cmd" "$(echo "$t1 - $t0" | bc)" "$rc"
  done
done
echo "logs: $OUT" >&2
