#!/usr/bin/env bash
# The real-GPU check, for a machine with an NVIDIA GPU (about 3 minutes): builds gpumem, checks
# its queries and exact peaks against the real driver (real_gpu_check), compares `gpumem list`
# with nvidia-smi (also under CUDA_VISIBLE_DEVICES=<uuid>), and measures PyTorch workloads with
# `gpumem run` against torch.cuda's own counters, with and without torch.profiler holding CUPTI.
# Everything goes to one file: $1, else $OUT/device-check.txt, else ./device-check.txt.
# Where the machine cannot fetch packages, run tests/device/prepare.sh first and carry .device.
set -uo pipefail
cd "$(dirname "$0")/../.."
RESULT=${1:-${OUT:-.}/device-check.txt}
WORK=$(mktemp -d)
exec > >(tee "$RESULT") 2>&1
failures=0
step() { echo; echo "== $*"; }
run() { "$@" || { echo "FAIL (status $?): $*"; failures=$((failures + 1)); }; }

step "machine"
date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1
python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda)' 2>&1

step "build"
PREFIX=$WORK/root
for deb in .device/debs/*.deb; do [ -f "$deb" ] && dpkg -x "$deb" "$PREFIX"; done
cmake -S . -B build-device -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PREFIX/usr" \
  -DGPUMEM_BUILD_TESTS=OFF -DGPUMEM_BUILD_BENCH=OFF -DGPUMEM_BUILD_PYTHON=OFF >"$WORK/cmake.log" 2>&1 &&
  cmake --build build-device -j "$(nproc)" --target gpumem_cli gpumem_inject real_gpu_check seed_examples \
    >>"$WORK/cmake.log" 2>&1 || { tail -n 30 "$WORK/cmake.log"; echo "FAIL build"; exit 1; }
echo "built"
# CUPTI comes with PyTorch's wheels (nvidia-cuda-cupti) where the toolkit is not installed.
CUPTI=${GPUMEM_CUPTI_LIBRARY:-}
[ -n "$CUPTI" ] || CUPTI=$(ldconfig -p | awk '/libcupti.so/{print $NF; exit}')
[ -n "$CUPTI" ] || CUPTI=$(python3 -c 'import glob, os, nvidia; print(next(iter(sorted(glob.glob(os.path.join(list(nvidia.__path__)[0], "**", "libcupti.so*"), recursive=True))), ""))' 2>/dev/null)
[ -n "$CUPTI" ] && export GPUMEM_CUPTI_LIBRARY=$CUPTI
echo "CUPTI: ${CUPTI:-not found}"
G=build-device/bin/gpumem

step "gpumem list vs nvidia-smi"
nvidia-smi --query-gpu=index,uuid,memory.total,memory.used,memory.free --format=csv >"$WORK/smi.csv"
cat "$WORK/smi.csv"
$G list
$G list --json >"$WORK/list.json"
run python3 tests/device/compare.py list "$WORK/smi.csv" "$WORK/list.json"

step "queries and exact peaks on the real driver"
run build-device/examples/real_gpu_check

step "CUDA_VISIBLE_DEVICES=<uuid of the last GPU>"
UUID=$(tail -n 1 "$WORK/smi.csv" | cut -d, -f2 | tr -d ' ')
CUDA_VISIBLE_DEVICES=$UUID $G list --json >"$WORK/list-uuid.json"
run python3 -c "import json,sys; d=json.load(open('$WORK/list-uuid.json'))['devices']; ok=len(d)==1 and d[0]['uuid']=='$UUID'; print(('PASS' if ok else 'FAIL')+' ordinal 0 is', d[0]['uuid'] if d else None); sys.exit(not ok)"
CUDA_VISIBLE_DEVICES=$UUID run build-device/examples/real_gpu_check

step "the seed's examples"
run build-device/examples/seed_examples

step "PyTorch under gpumem run (exact) vs torch.cuda.max_memory_reserved"
run $G run --json "$WORK/torch.json" --plot "${OUT:-$WORK}/torch.svg" -- python3 tests/device/torch_workload.py >"$WORK/torch.out"
cat "$WORK/torch.out"; cat "$WORK/torch.json"
run python3 tests/device/compare.py torch "$WORK/torch.json" "$WORK/torch.out"

step "PyTorch with torch.profiler active"
run $G run --json "$WORK/prof.json" -- python3 tests/device/torch_workload.py --profiler >"$WORK/prof.out"
cat "$WORK/prof.out"
# Informational: which of gpumem and the profiler gets CUPTI is what this step records.
python3 tests/device/compare.py torch "$WORK/prof.json" "$WORK/prof.out"
run $G run --mode sampled --json "$WORK/prof-sampled.json" -- python3 tests/device/torch_workload.py --profiler >"$WORK/prof-sampled.out"
run python3 tests/device/compare.py torch "$WORK/prof-sampled.json" "$WORK/prof-sampled.out"

step "result"
echo "$failures failed"
rm -rf "$WORK"
exit $((failures > 0))
