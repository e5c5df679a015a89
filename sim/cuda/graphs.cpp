// The simulated CUDA driver's graphs, as far as memory goes: cuGraphCreate, memory alloc and free
// nodes, instantiation, upload, launch, destruction, and the per-device graph memory reservation
// (cuDeviceGetGraphMemAttribute / cuDeviceSetGraphMemAttribute / cuDeviceGraphMemTrim).
//
// From the Driver API reference: an allocation node's address is fixed when the node is added and
// "remains fixed across instantiations and launches"; only one instantiation of a graph with memory
// nodes may exist at a time; an allocation not freed in its graph outlives the launch and is freed
// by cuMemFreeAsync / cuMemFree, by another graph's free node, or by the next launch under
// CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH; cuDeviceGraphMemTrim frees "blocks which are not
// in use by a graph that is either currently executing or scheduled to execute". Graph memory comes
// from the device's graph reservation, with no allocation call at replay.
//
// Sim choices: a graph runs at once when launched; its footprint is the sum of its allocation
// nodes (no reuse inside a graph); upload or launch grows the device's graph reservation to hold
// the allocations still live plus that footprint, rounded up to 2 MiB, and the reservation stays
// (also after cuGraphExecDestroy) until cuDeviceGraphMemTrim, which keeps the live allocations.
#include <vector>

#include "core/export.hpp"
#include "process.hpp"
#include "trace_hook.hpp"

using namespace gpumem::abi;
namespace cuda = gpumem::sim::cuda;
using cuda::traced;

struct gpumem::abi::CUgraphNode_st {
  bool allocation;  // else a free node
  unsigned nvml;
  std::uint64_t bytes;
  CUdeviceptr address;
};

struct gpumem::abi::CUgraph_st {
  std::vector<CUgraphNode_st*> nodes;
  CUgraphExec instance = nullptr;
  bool destroyed = false;
};

struct gpumem::abi::CUgraphExec_st {
  CUgraph graph;
  std::vector<CUgraphNode_st> nodes;  // a copy: the graph may be destroyed first
  bool auto_free;
  bool destroyed = false;
};

namespace gpumem::sim::cuda {
namespace {

constexpr unsigned long long kAutoFreeOnLaunch =
    1;  // CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH

struct DeviceGraphMemory {
  std::uint64_t used = 0, used_high = 0, reserved = 0, reserved_high = 0;
};

struct Graphs {
  std::mutex mutex;
  std::vector<CUgraph_st*> graphs;  // never freed: stale handles stay recognisable
  std::vector<CUgraphExec_st*> execs;
  DeviceGraphMemory devices[kMaxDevices];
};
Graphs& graphs() {
  static Graphs* g = new Graphs;
  return *g;
}

template <class T>
bool known(const std::vector<T*>& all, const T* item) {
  for (const T* known : all) {
    if (known == item) return !item->destroyed;
  }
  return false;
}

// Allocations of this node list that the graph frees itself.
bool freed_in(const std::vector<CUgraphNode_st>& nodes, CUdeviceptr address) {
  for (const CUgraphNode_st& node : nodes) {
    if (!node.allocation && node.address == address) return true;
  }
  return false;
}

CUresult add_allocation(CUgraphNode* node, CUgraph graph, CUDA_MEM_ALLOC_NODE_PARAMS* params) {
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (node == nullptr || params == nullptr || params->bytesize == 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (params->poolProps.location.type != CU_MEM_LOCATION_TYPE_DEVICE)
    return CUDA_ERROR_NOT_SUPPORTED;
  const int ordinal = params->poolProps.location.id;
  if (ordinal < 0 || ordinal >= device_count()) return CUDA_ERROR_INVALID_VALUE;
  Graphs& g = graphs();
  std::lock_guard lock(g.mutex);
  if (!known(g.graphs, graph)) return CUDA_ERROR_INVALID_VALUE;
  params->dptr = new_address_range(params->bytesize, kPageBytes);
  auto* created = new CUgraphNode_st{true, nvml_index(ordinal), params->bytesize, params->dptr};
  graph->nodes.push_back(created);
  *node = created;
  return CUDA_SUCCESS;
}

CUresult add_free(CUgraphNode* node, CUgraph graph, CUdeviceptr address) {
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (node == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Graphs& g = graphs();
  std::lock_guard lock(g.mutex);
  if (!known(g.graphs, graph)) return CUDA_ERROR_INVALID_VALUE;
  // The address must be a graph allocation: of this graph, or one another graph left live.
  const CUgraphNode_st* allocation = nullptr;
  for (const CUgraph_st* other : g.graphs) {
    for (const CUgraphNode_st* n : other->nodes) {
      if (n->allocation && n->address == address) allocation = n;
      if (!n->allocation && n->address == address && other == graph)
        return CUDA_ERROR_INVALID_VALUE;  // freed once only
    }
  }
  if (allocation == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto* created = new CUgraphNode_st{false, allocation->nvml, allocation->bytes, address};
  graph->nodes.push_back(created);
  *node = created;
  return CUDA_SUCCESS;
}

CUresult instantiate(CUgraphExec* exec, CUgraph graph, unsigned long long flags) {
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (exec == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Graphs& g = graphs();
  std::lock_guard lock(g.mutex);
  if (!known(g.graphs, graph)) return CUDA_ERROR_INVALID_VALUE;
  const bool has_memory_nodes = !graph->nodes.empty();
  // "Only one instantiation of the graph may exist at any point in time."
  if (has_memory_nodes && graph->instance != nullptr && !graph->instance->destroyed)
    return CUDA_ERROR_INVALID_VALUE;
  auto* created = new CUgraphExec_st{graph, {}, (flags & kAutoFreeOnLaunch) != 0};
  for (const CUgraphNode_st* node : graph->nodes) created->nodes.push_back(*node);
  g.execs.push_back(created);
  graph->instance = created;
  *exec = created;
  return CUDA_SUCCESS;
}

// Grows the devices' graph reservations to hold what is live plus this graph's footprint. Under
// the graphs lock.
CUresult reserve_for(const CUgraphExec_st& exec) {
  Graphs& g = graphs();
  std::uint64_t footprint[kMaxDevices]{};
  for (const CUgraphNode_st& node : exec.nodes) {
    if (node.allocation) footprint[node.nvml] += node.bytes;
  }
  for (unsigned d = 0; d < kMaxDevices; ++d) {
    if (footprint[d] == 0) continue;
    DeviceGraphMemory& m = g.devices[d];
    const std::uint64_t needed = round_up(m.used + footprint[d], kPageBytes);
    if (needed > m.reserved) {
      if (state().lost(d)) return CUDA_ERROR_DEVICE_UNAVAILABLE;
      if (!state().charge(d, needed - m.reserved)) return CUDA_ERROR_OUT_OF_MEMORY;
      m.reserved = needed;
      m.reserved_high = std::max(m.reserved_high, m.reserved);
    }
  }
  return CUDA_SUCCESS;
}

CUresult upload(CUgraphExec exec) {
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  Graphs& g = graphs();
  std::lock_guard lock(g.mutex);
  if (!known(g.execs, exec)) return CUDA_ERROR_INVALID_VALUE;
  return reserve_for(*exec);
}

// Whether this graph allocates `address` itself.
bool allocates(const std::vector<CUgraphNode_st>& nodes, CUdeviceptr address) {
  for (const CUgraphNode_st& node : nodes) {
    if (node.allocation && node.address == address) return true;
  }
  return false;
}

CUresult launch(CUgraphExec exec) {
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  std::vector<CUdeviceptr> freed_first;  // auto-freed, or another graph's allocations it frees
  {
    Graphs& g = graphs();
    std::lock_guard lock(g.mutex);
    if (!known(g.execs, exec)) return CUDA_ERROR_INVALID_VALUE;
    for (const CUgraphNode_st& node : exec->nodes) {
      if (node.allocation && live_allocation(node.address)) {
        if (!exec->auto_free) return CUDA_ERROR_INVALID_VALUE;  // still allocated
        freed_first.push_back(node.address);
      }
      if (!node.allocation && !allocates(exec->nodes, node.address)) {
        if (!live_allocation(node.address)) return CUDA_ERROR_INVALID_VALUE;
        freed_first.push_back(node.address);
      }
    }
  }
  for (CUdeviceptr address : freed_first) release(address);
  Graphs& g = graphs();
  std::lock_guard lock(g.mutex);
  if (const CUresult rc = reserve_for(*exec)) return rc;
  // The graph runs: every allocation is in use during the run; those it frees itself are free
  // again when it completes, the others stay allocated.
  std::uint64_t running[kMaxDevices]{};
  for (const CUgraphNode_st& node : exec->nodes) {
    if (node.allocation) running[node.nvml] += node.bytes;
  }
  for (unsigned d = 0; d < kMaxDevices; ++d) {
    DeviceGraphMemory& m = g.devices[d];
    m.used_high = std::max(m.used_high, m.used + running[d]);
  }
  for (const CUgraphNode_st& node : exec->nodes) {
    if (!node.allocation || freed_in(exec->nodes, node.address)) continue;
    g.devices[node.nvml].used += node.bytes;
    record(node.address,
           Allocation{node.bytes, node.nvml, AllocationKind::graph, nullptr, nullptr});
  }
  return CUDA_SUCCESS;
}

CUresult trim(unsigned nvml) {
  Graphs& g = graphs();
  std::lock_guard lock(g.mutex);
  DeviceGraphMemory& m = g.devices[nvml];
  const std::uint64_t keep = round_up(m.used, kPageBytes);
  if (m.reserved > keep) {
    state().uncharge(nvml, m.reserved - keep);
    m.reserved = keep;
  }
  return CUDA_SUCCESS;
}

CUresult get_attribute(CUdevice device, int attribute, void* value) {
  if (const CUresult rc = check_device(device)) return rc;
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Graphs& g = graphs();
  std::lock_guard lock(g.mutex);
  const DeviceGraphMemory& m = g.devices[nvml_index(device)];
  auto* out = static_cast<std::uint64_t*>(value);
  switch (attribute) {
    case CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT:
      *out = m.used;
      return CUDA_SUCCESS;
    case CU_GRAPH_MEM_ATTR_USED_MEM_HIGH:
      *out = m.used_high;
      return CUDA_SUCCESS;
    case CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT:
      *out = m.reserved;
      return CUDA_SUCCESS;
    case CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH:
      *out = m.reserved_high;
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

// "High watermark can only be reset to zero": it restarts from the current value.
CUresult set_attribute(CUdevice device, int attribute, void* value) {
  if (const CUresult rc = check_device(device)) return rc;
  if (value == nullptr || *static_cast<const std::uint64_t*>(value) != 0)
    return CUDA_ERROR_INVALID_VALUE;
  Graphs& g = graphs();
  std::lock_guard lock(g.mutex);
  DeviceGraphMemory& m = g.devices[nvml_index(device)];
  switch (attribute) {
    case CU_GRAPH_MEM_ATTR_USED_MEM_HIGH:
      m.used_high = m.used;
      return CUDA_SUCCESS;
    case CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH:
      m.reserved_high = m.reserved;
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

}  // namespace

void graph_block_freed(const Allocation& block) {
  Graphs& g = graphs();
  std::lock_guard lock(g.mutex);
  DeviceGraphMemory& m = g.devices[block.nvml_index];
  m.used -= std::min(m.used, block.bytes);
}

void graphs_after_fork() {
  for (DeviceGraphMemory& m : graphs().devices) m = {};
}

}  // namespace gpumem::sim::cuda

GPUMEM_SIM_EXPORT CUresult cuGraphCreate(CUgraph* graph, unsigned flags) {
  const cuGraphCreate_params params{graph, flags};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuGraphCreate, "cuGraphCreate", params, [&]() -> CUresult {
    if (!cuda::initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (graph == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
    auto* created = new CUgraph_st;
    std::lock_guard lock(cuda::graphs().mutex);
    cuda::graphs().graphs.push_back(created);
    *graph = created;
    return CUDA_SUCCESS;
  });
}

GPUMEM_SIM_EXPORT CUresult cuGraphDestroy(CUgraph graph) {
  const cuGraphDestroy_params params{graph};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuGraphDestroy, "cuGraphDestroy", params,
                [&]() -> CUresult {
                  if (!cuda::initialized()) return CUDA_ERROR_NOT_INITIALIZED;
                  std::lock_guard lock(cuda::graphs().mutex);
                  if (!cuda::known(cuda::graphs().graphs, graph)) return CUDA_ERROR_INVALID_VALUE;
                  graph->destroyed = true;
                  return CUDA_SUCCESS;
                });
}

GPUMEM_SIM_EXPORT CUresult cuGraphAddMemAllocNode(CUgraphNode* node, CUgraph graph,
                                                  const CUgraphNode* dependencies,
                                                  std::size_t dependency_count,
                                                  CUDA_MEM_ALLOC_NODE_PARAMS* node_params) {
  const cuGraphAddMemAllocNode_params params{node, graph, dependencies, dependency_count,
                                             node_params};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuGraphAddMemAllocNode, "cuGraphAddMemAllocNode", params,
                [&] { return cuda::add_allocation(node, graph, node_params); });
}

GPUMEM_SIM_EXPORT CUresult cuGraphAddMemFreeNode(CUgraphNode* node, CUgraph graph,
                                                 const CUgraphNode* dependencies,
                                                 std::size_t dependency_count, CUdeviceptr dptr) {
  const cuGraphAddMemFreeNode_params params{node, graph, dependencies, dependency_count, dptr};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuGraphAddMemFreeNode, "cuGraphAddMemFreeNode", params,
                [&] { return cuda::add_free(node, graph, dptr); });
}

GPUMEM_SIM_EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec* exec, CUgraph graph,
                                                       unsigned long long flags) {
  const cuGraphInstantiateWithFlags_params params{exec, graph, flags};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags",
                params, [&] { return cuda::instantiate(exec, graph, flags); });
}

GPUMEM_SIM_EXPORT CUresult cuGraphUpload(CUgraphExec exec, CUstream stream) {
  const cuGraphUpload_params params{exec, stream};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuGraphUpload, "cuGraphUpload", params,
                [&] { return cuda::upload(exec); });
}
GPUMEM_SIM_EXPORT CUresult cuGraphUpload_ptsz(CUgraphExec exec, CUstream stream) {
  const cuGraphUpload_params params{exec, stream};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuGraphUpload_ptsz, "cuGraphUpload_ptsz", params,
                [&] { return cuda::upload(exec); });
}

GPUMEM_SIM_EXPORT CUresult cuGraphLaunch(CUgraphExec exec, CUstream stream) {
  const cuGraphLaunch_params params{exec, stream};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, "cuGraphLaunch", params,
                [&] { return cuda::launch(exec); });
}
GPUMEM_SIM_EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec exec, CUstream stream) {
  const cuGraphLaunch_params params{exec, stream};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz, "cuGraphLaunch_ptsz", params,
                [&] { return cuda::launch(exec); });
}

GPUMEM_SIM_EXPORT CUresult cuGraphExecDestroy(CUgraphExec exec) {
  const cuGraphExecDestroy_params params{exec};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuGraphExecDestroy, "cuGraphExecDestroy", params,
                [&]() -> CUresult {
                  if (!cuda::initialized()) return CUDA_ERROR_NOT_INITIALIZED;
                  std::lock_guard lock(cuda::graphs().mutex);
                  if (!cuda::known(cuda::graphs().execs, exec)) return CUDA_ERROR_INVALID_VALUE;
                  exec->destroyed = true;
                  return CUDA_SUCCESS;
                });
}

GPUMEM_SIM_EXPORT CUresult cuDeviceGetGraphMemAttribute(CUdevice device, int attribute,
                                                        void* value) {
  const cuDeviceGetGraphMemAttribute_params params{device, attribute, value};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuDeviceGetGraphMemAttribute,
                "cuDeviceGetGraphMemAttribute", params,
                [&] { return cuda::get_attribute(device, attribute, value); });
}

GPUMEM_SIM_EXPORT CUresult cuDeviceSetGraphMemAttribute(CUdevice device, int attribute,
                                                        void* value) {
  const cuDeviceSetGraphMemAttribute_params params{device, attribute, value};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuDeviceSetGraphMemAttribute,
                "cuDeviceSetGraphMemAttribute", params,
                [&] { return cuda::set_attribute(device, attribute, value); });
}

GPUMEM_SIM_EXPORT CUresult cuDeviceGraphMemTrim(CUdevice device) {
  const cuDeviceGraphMemTrim_params params{device};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuDeviceGraphMemTrim, "cuDeviceGraphMemTrim", params,
                [&]() -> CUresult {
                  if (const CUresult rc = cuda::check_device(device)) return rc;
                  return cuda::trim(cuda::nvml_index(device));
                });
}
