#!/usr/bin/env bash
# The GPU acceptance run (the every-claim-true issue): every framework path and every GPU-only fix, on a machine with an NVIDIA
# GPU, within 8 minutes (plus up to 7 for the every-framework issue's placement and pitfalls, run last). Any session lent a GPU
# runs this first and commits what it writes.
#
#   bash benchmarks/gpu_acceptance.sh [OUT]        # OUT defaults to gpu-acceptance-<UTC time>
#
# Needs: whichdevice importable (pip install . , or PYTHONPATH=src with its dependencies), torch and jax with
# their CUDA builds, keras 3. TensorFlow is not needed (most PyTorch GPU boxes have none).
# Offline GPU machine: the shared offline-wheels.sh script puts the project's wheel and the pure-Python
# packages it needs into .whl/; install them there with
#   python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
#   export PYTHONPATH=/tmp/site
#
# Each step runs under its own time limit; a step that fails is recorded (rc, wall, log) and the next one runs.
# At the end benchmarks/gpu_acceptance_check.py reads every record and prints, per record, what was measured,
# what was not measured (skipped) and what failed with its message, then checks the issue-#39 properties
# (no case failed, DataLoader and pin_memory cases measured on the GPU, answer lines naming their framework).
# Copy OUT's records to tests/data/gpu_acceptance/ (README.md there says how) and commit them.
#
# WHICHDEVICE_ALLOW_NO_GPU=1 lets it run on a CPU-only machine (to check the script itself; its records are not
# acceptance records). WHICHDEVICE_BUDGET (default 20) sets the per-device budget of run and the Keras diagnose,
# WHICHDEVICE_TORCH_BUDGET (default 45) that of the torch diagnose.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-gpu-acceptance-$(date -u +%Y%m%d-%H%M)}
mkdir -p "$out" || exit 2
out=$(cd "$out" && pwd)
py=${PYTHON:-python3}
budget=${WHICHDEVICE_BUDGET:-20}
torch_budget=${WHICHDEVICE_TORCH_BUDGET:-45}
summary="$out/steps.tsv"
printf 'step\trc\twall_s\n' >"$summary"

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  if [ "${WHICHDEVICE_ALLOW_NO_GPU:-}" != 1 ]; then
    echo "gpu_acceptance: no NVIDIA GPU here (nvidia-smi -L failed); set WHICHDEVICE_ALLOW_NO_GPU=1 to run it anyway" >&2
    exit 2
  fi
  echo "gpu_acceptance: no NVIDIA GPU: running the paths on the CPU only (not an acceptance run)"
fi

{
  date -u +"%Y-%m-%d %H:%M:%S UTC"
  nvidia-smi -L 2>/dev/null || echo "no nvidia-smi"
  nvidia-smi --query-gpu=name,driver_version,memory.total,utilization.gpu --format=csv 2>/dev/null
  echo "cores: $(nproc)  load: $(cut -d' ' -f1-3 /proc/loadavg)"
  "$py" - <<'EOF'
import importlib, platform
print("python", platform.python_version())
for m in ("whichdevice", "torch", "jax", "keras"):
    try:
        mod = importlib.import_module(m)
        print(m, getattr(mod, "__version__", "?"))
    except Exception as e:  # noqa: BLE001
        print(m, "not importable:", type(e).__name__)
EOF
} >"$out/machine.txt" 2>&1
cat "$out/machine.txt"

step() {  # step NAME LIMIT_S CMD...
  local name=$1 limit=$2
  shift 2
  local t0 t1 rc
  t0=$(date +%s.%N)
  echo "== $name: $* (limit ${limit} s, load $(cut -d' ' -f1 /proc/loadavg))"
  timeout --kill-after=10 "$limit" "$@" >"$out/$name.log" 2>&1
  rc=$?
  t1=$(date +%s.%N)
  awk -v n="$name" -v r="$rc" -v a="$t0" -v b="$t1" 'BEGIN { printf "%s\t%s\t%.1f\n", n, r, b - a }' >>"$summary"
  tail -n 25 "$out/$name.log"
  echo "-- $name: rc $rc"
}

tm="$here/tests/torch_models"
km="$here/tests/diagnose_corpus"
ac="$here/tests/audit_corpus"
cd "$out" || exit 2

# Most telling first, so a cut-short run still shows them.
# 1. diagnose of a corpus torch CNN: its DataLoader cases (num_workers, pin_memory) and cudnn.benchmark are the
#    GPU-only fixes, and the loader pairs need a budget that fits three worker start-ups a side
step diag_torch_cnn 160 "$py" -m whichdevice diagnose --framework torch --model "$tm/cnn.py:SmallCNN" \
  --input-shape 1,28,28 --classes 10 --budget "$torch_budget" --out "$out" --json "$out/diag_torch_cnn.json" --verbose
# 2. audit of the corpus GPU scripts (torch and JAX; the TensorFlow ones need TensorFlow): the launch cost measured
#    on this GPU, the plain-tensor re-run's corrected ratio
for s in "$ac"/torch_*.py "$ac"/jax_*.py; do
  n=$(basename "$s" .py)
  step "audit_$n" 45 "$py" -m whichdevice audit "$s" --timeout 30 --out "$out" --json "$out/audit_$n.json"
done
# 3. the default suite on both GPU frameworks (seeds 000-002, the batch sweep, the fixes)
step run 170 "$py" -m whichdevice run --framework torch,keras-jax --budget "$budget" --out "$out" --json "$out/run.json" --verbose
# 4. diagnose of a corpus Keras convnet on JAX
step diag_keras_jax 90 "$py" -m whichdevice diagnose --framework keras-jax --model "$km/cnn_functional_categorical.py:build" \
  --budget "$budget" --out "$out" --json "$out/diag_keras_jax.json" --verbose
# 5. train and matmul (seeds 000-002 alone), torch
step train_torch 80 "$py" -m whichdevice train --framework torch --quick --out "$out" --json "$out/train_torch.json"
step matmul_torch 50 "$py" -m whichdevice matmul --framework torch --quick --out "$out" --json "$out/matmul_torch.json"
# 6. pipeline on each framework's own loader (the every-framework issue): the DataLoader ladder with pin_memory + non_blocking (its
#    GPU-only rung) and Keras' PyDataset (tf.data too where TensorFlow is installed)
step pipeline_torch 150 "$py" -m whichdevice pipeline --framework torch --quick --out "$out" --json "$out/pipeline_torch.json"
step pipeline_keras_jax 150 "$py" -m whichdevice pipeline --framework keras-jax --quick --out "$out" \
  --json "$out/pipeline_keras_jax.json"
# 7. calibrate from the framework's own ops (profiles saved under $out/home), and predict on the torch profile
#    calibrated here (its GPU, and this machine's CPU costs)
for f in torch keras-jax; do
  n=$(echo "$f" | tr - _)
  step "calibrate_$n" 120 env WHICHDEVICE_HOME="$out/home" "$py" -m whichdevice calibrate --framework "$f" \
    --name "accept-$f" --out "$out" --json "$out/calibrate_$n.json"
done
step predict_torch 120 env WHICHDEVICE_HOME="$out/home" "$py" -m whichdevice predict --framework torch --quick \
  --profile accept-torch --out "$out" --json "$out/predict_torch.json"
# 6. The every-framework issue: placement (torch.profiler + dispatch mode; JAX's Perfetto trace: ops per device, copies pageable or
#    pinned, syncs) and pitfalls (the no-sync mistake measured on the GPU) for torch and Keras-on-JAX
for fw in torch keras-jax; do
  step "placement_$fw" 60 "$py" -m whichdevice placement --framework "$fw" --quick --out "$out" --json "$out/placement_$fw.json"
  step "pitfalls_$fw" 150 "$py" -m whichdevice pitfalls --framework "$fw" --quick --out "$out" --json "$out/pitfalls_$fw.json"
done

echo "== steps (rc, wall s)"
cat "$summary"
"$py" "$here/benchmarks/gpu_acceptance_check.py" "$out" | tee "$out/check.txt"
