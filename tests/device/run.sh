#!/usr/bin/env bash
# The real-GPU check, for a machine with an NVIDIA GPU; every step is bounded and the whole script
# stops within 5 minutes. It builds gpumem, checks its queries and the process footprint of each
# allocation pattern against the real driver and NVML's per-process figure (real_gpu_check: a trace
# started before the context, cuMemAlloc, VMM released while mapped, stream-ordered pools, graph
# memory, runtime calls, exact without NVML), compares `gpumem list` with nvidia-smi (also under
# CUDA_VISIBLE_DEVICES=<uuid>), runs the seed's examples, and measures a PyTorch workload with
# `gpumem run` under each allocator backend (default, expandable_segments:True, cudaMallocAsync)
# against torch.cuda.max_memory_reserved(), then with torch.profiler holding CUPTI.
# Everything goes to one file: $1, else $OUT/device-check.txt, else ./device-check.txt.
# Where the machine cannot fetch packages, run tests/device/prepare.sh first and carry .device.
#
# CUPTI and the CUDA runtime are left to gpumem's own choice; where they come only with PyTorch's
# wheels (nvidia-cuda-cupti, nvidia-cuda-runtime), their folders are put on LD_LIBRARY_PATH.
#
# Dry run against the simulator (no GPU; the PyTorch steps are skipped when torch has no CUDA),
# reusing a build folder that has the sim, cli, inject and example targets:
#   DEVICE_CHECK_BUILD=build LD_LIBRARY_PATH=$PWD/build/sim PATH=$PWD/tests/device/dry-run:$PWD/build/sim:$PATH \
#   GPUMEM_SIM_STATE=/tmp/dry.state GPUMEM_SIM_CONFIG='{"devices":[{"name":"NVIDIA H200","context_mib":500}]}' \
#   tests/device/run.sh /tmp/device-check.txt
set -uo pipefail
cd "$(dirname "$0")/../.."
RESULT=${1:-${OUT:-.}/device-check.txt}
WORK=$(mktemp -d)
exec > >(tee "$RESULT") 2>&1
failures=0
DEADLINE=285  # seconds: the last step is cut short so that the script ends within 5 minutes
step() { echo; echo "== $* ($SECONDS s)"; }
# bounded LIMIT CMD…: runs CMD for at most LIMIT seconds, and never past the deadline.
bounded() {
  local limit=$1 left=$((DEADLINE - SECONDS))
  shift
  ((left < limit)) && limit=$left
  if ((limit <= 0)); then echo "FAIL (out of time): $*"; return 124; fi
  timeout -k 5 "$limit" "$@"
}
run() {
  local limit=$1
  shift
  bounded "$limit" "$@" || { echo "FAIL (status $?): $*"; failures=$((failures + 1)); }
}

step "machine"
date -u; bounded 20 nvidia-smi -L; bounded 20 nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1
bounded 40 python3 -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda, "available", torch.cuda.is_available())' 2>&1

step "build"
BUILD=${DEVICE_CHECK_BUILD:-build-device}
if [ -z "${DEVICE_CHECK_BUILD:-}" ]; then
  PREFIX=$WORK/root
  for deb in .device/debs/*.deb; do [ -f "$deb" ] && dpkg -x "$deb" "$PREFIX"; done
  bounded 60 cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PREFIX/usr" \
    -DGPUMEM_BUILD_TESTS=OFF -DGPUMEM_BUILD_BENCH=OFF -DGPUMEM_BUILD_PYTHON=OFF >"$WORK/cmake.log" 2>&1 ||
    { tail -n 30 "$WORK/cmake.log"; echo "FAIL configure"; exit 1; }
fi
bounded 150 cmake --build "$BUILD" -j "$(nproc)" --target gpumem_cli gpumem_inject real_gpu_check seed_examples \
  >>"$WORK/cmake.log" 2>&1 || { tail -n 30 "$WORK/cmake.log"; echo "FAIL build"; exit 1; }
echo "built in $BUILD"
# NVIDIA's libraries shipped in PyTorch's wheels: their folders, for gpumem's own choice to find.
WHEELS=$(bounded 30 python3 -c 'import glob, os, nvidia
seen = []
for lib in ("libcupti.so*", "libcudart.so*"):
    for path in sorted(glob.glob(os.path.join(list(nvidia.__path__)[0], "**", lib), recursive=True)):
        folder = os.path.dirname(path)
        if folder not in seen: seen.append(folder)
print(":".join(seen))' 2>/dev/null)
[ -n "$WHEELS" ] && export LD_LIBRARY_PATH=$WHEELS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
echo "CUPTI and runtime folders from PyTorch's wheels: ${WHEELS:-none}"
echo "ldconfig: $(ldconfig -p 2>/dev/null | awk '/libcupti.so|libcudart.so/{printf "%s ", $NF}')"
echo "GPUMEM_CUPTI_LIBRARY=${GPUMEM_CUPTI_LIBRARY:-unset (gpumem chooses)}"
G=$BUILD/bin/gpumem

step "gpumem list vs nvidia-smi"
bounded 20 nvidia-smi --query-gpu=index,uuid,memory.total,memory.used,memory.free --format=csv >"$WORK/smi.csv"
cat "$WORK/smi.csv"
bounded 20 $G list
bounded 20 $G list --json >"$WORK/list.json"
run 20 python3 tests/device/compare.py list "$WORK/smi.csv" "$WORK/list.json"

step "each allocation pattern on the real driver (real_gpu_check)"
run 60 "$BUILD/examples/real_gpu_check"

step "CUDA_VISIBLE_DEVICES=<uuid of the last GPU>"
UUID=$(tail -n 1 "$WORK/smi.csv" | cut -d, -f2 | tr -d ' ')
CUDA_VISIBLE_DEVICES=$UUID bounded 20 $G list --json >"$WORK/list-uuid.json"
run 20 python3 -c "import json,sys; d=json.load(open('$WORK/list-uuid.json'))['devices']; ok=len(d)==1 and d[0]['uuid']=='$UUID'; print(('PASS' if ok else 'FAIL')+' ordinal 0 is', d[0]['uuid'] if d else None); sys.exit(not ok)"
CUDA_VISIBLE_DEVICES=$UUID run 60 "$BUILD/examples/real_gpu_check"

step "the seed's examples"
run 30 "$BUILD/examples/seed_examples"

if bounded 40 python3 -c 'import sys, torch; sys.exit(not torch.cuda.is_available())' 2>/dev/null; then
  for backend in default expandable_segments:True backend:cudaMallocAsync; do
    step "PyTorch ($backend) under gpumem run vs torch.cuda.max_memory_reserved"
    name=${backend//[:.]/-}
    if [ "$backend" = default ]; then unset PYTORCH_CUDA_ALLOC_CONF; else export PYTORCH_CUDA_ALLOC_CONF=$backend; fi
    run 45 $G run --json "$WORK/$name.json" --plot "${OUT:-$WORK}/torch-$name.svg" -- python3 tests/device/torch_workload.py >"$WORK/$name.out"
    cat "$WORK/$name.out"; cat "$WORK/$name.json"
    run 20 python3 tests/device/compare.py torch "$WORK/$name.json" "$WORK/$name.out" "$backend"
  done
  unset PYTORCH_CUDA_ALLOC_CONF

  step "PyTorch with torch.profiler active"
  run 45 $G run --json "$WORK/prof.json" -- python3 tests/device/torch_workload.py --profiler >"$WORK/prof.out"
  cat "$WORK/prof.out"
  # Informational: which of gpumem and the profiler gets CUPTI is what this step records.
  bounded 20 python3 tests/device/compare.py torch "$WORK/prof.json" "$WORK/prof.out" "profiler, auto"
  run 45 $G run --mode sampled --json "$WORK/prof-sampled.json" -- python3 tests/device/torch_workload.py --profiler >"$WORK/prof-sampled.out"
  run 20 python3 tests/device/compare.py torch "$WORK/prof-sampled.json" "$WORK/prof-sampled.out" "profiler, sampled"
else
  step "PyTorch"
  echo "SKIP: torch is missing or has no CUDA here"
fi

step "result"
echo "$failures failed"
rm -rf "$WORK"
exit $((failures > 0))
