#!/usr/bin/env bash
# The first-command issue's figures: a new user's install and first command, as CI checks them (.ci/fresh-user:
# a fresh venv, `pip install ".[tensorflow]"` alone, every --help, `whichdevice run --budget 25`).
# Prints the machine's load before and after and the wall time of each part.
# Usage: bash benchmarks/fresh_install.sh   (from the repository root)
set -euo pipefail
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)  ($(nproc) cores, $(date -u '+%Y-%m-%d %H:%M UTC'))"
start=$(date +%s)
bash .ci/fresh-user 2>&1 | grep -E "^fresh install|Answer:|Record:" || { echo "fresh install FAILED"; exit 1; }
echo "fresh-user wall: $(( $(date +%s) - start )) s"
echo "load after:  $(cut -d' ' -f1-3 /proc/loadavg)"
