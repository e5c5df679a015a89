#!/bin/sh
# A stand-in for a training script, for the examples in docs/cli.md: each worker picks its GPU by
# LOCAL_RANK (as torch.cuda.set_device(LOCAL_RANK) does), holds 2 GiB of "weights", and makes one
# 1 ms spike whose size depends on its RANK (1 to 5 GiB) on the simulated GPU.
exec gpumem-sim workload "device $LOCAL_RANK; alloc weights 2GiB; sleep 100ms; spike $((RANK % 5 + 1))GiB 1ms; sleep 100ms"
