#!/usr/bin/env bash
# The main job: set up, list the GPUs, then run fastai.utils.mem's usage examples on gpumem. On a
# machine without an NVIDIA GPU it runs on gpumem's simulated GPU, and says so first.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
BUILD=${GPUMEM_BUILD_DIR:-build}
GPUMEM="$BUILD/bin/gpumem"

if "$GPUMEM" list --json 2>/dev/null | grep -q '"uuid"'; then
  echo "gpumem on this machine's NVIDIA GPU(s)."
else
  echo "No NVIDIA GPU or driver here: running on gpumem's simulated GPU (docs/simulator.md)."
  SIM="$PWD/$BUILD/sim"
  export GPUMEM_NVML_LIBRARY="$SIM/libnvidia-ml.so.1" GPUMEM_CUDA_LIBRARY="$SIM/libcuda.so.1"
  export GPUMEM_CUPTI_LIBRARY="$SIM/libcupti.so.13" GPUMEM_SIM_STATE="$PWD/$BUILD/main-job.state"
  rm -f "$GPUMEM_SIM_STATE"
fi

echo
echo "$ gpumem list"
"$GPUMEM" list
echo
echo "$ seed_examples   # fastai.utils.mem's usage examples, in C++"
"$BUILD/examples/seed_examples"
