// The simulated CUDA driver's per-process state: initialisation and enumeration, primary
// contexts (one per device, reference-counted), the calling thread's current context, and this
// process's live allocations.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "core/shared_state.hpp"
#include "driver/abi/cuda.hpp"

struct gpumem::abi::CUctx_st {
  unsigned nvml_index;
  std::uint32_t uid;
  std::atomic<int> retained;  // primary context references; 0: inactive (no memory charged)
};

namespace gpumem::sim::cuda {

using namespace gpumem::abi;

enum class AllocationKind { device, managed, vmm };

struct Allocation {
  std::uint64_t bytes;  // what the caller asked for (the charge)
  unsigned nvml_index;
  AllocationKind kind;
};

// Runs the driver's one-time initialisation; CUDA_SUCCESS, or why it failed.
CUresult initialize();
bool initialized();

// CUDA ordinal → NVML index, fixed at initialisation.
int device_count();
unsigned nvml_index(int ordinal);
SharedState& state();

CUcontext primary_context(int ordinal);
int ordinal_of(CUcontext context);  // -1 when not one of ours
CUcontext& current_context();       // of the calling thread

// Primary context lifetime: the first retain charges the device's context memory; the last
// release destroys the context with every allocation made in it.
CUresult retain_primary(int ordinal);
CUresult release_primary(int ordinal);

// The current context's NVML device, or the error a memory call returns.
CUresult current_device(unsigned* nvml);

// Charges and records an allocation; returns its address.
CUresult allocate(unsigned nvml, std::uint64_t bytes, AllocationKind kind, std::uint64_t* address);
// Frees a live allocation of one of the given kinds.
CUresult release(std::uint64_t address, AllocationKind kind);
bool find_allocation(std::uint64_t address, std::uint64_t* base, std::uint64_t* bytes);

}  // namespace gpumem::sim::cuda
