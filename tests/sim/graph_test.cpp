// Graph memory as the Driver API reference describes it: allocation nodes get a fixed address when
// added, memory comes from the device's graph reservation at upload or launch (no allocation call
// at replay), the reservation stays after the launch and after the exec is destroyed until
// cuDeviceGraphMemTrim, and an allocation not freed in its graph stays live until freed.
#include <gtest/gtest.h>

#include "sim_driver.hpp"

namespace gpumem::testing {
namespace {

using GraphCreate = CUresult (*)(CUgraph*, unsigned);
using GraphDestroy = CUresult (*)(CUgraph);
using AddAlloc = CUresult (*)(CUgraphNode*, CUgraph, const CUgraphNode*, std::size_t,
                              CUDA_MEM_ALLOC_NODE_PARAMS*);
using AddFree = CUresult (*)(CUgraphNode*, CUgraph, const CUgraphNode*, std::size_t, CUdeviceptr);
using Instantiate = CUresult (*)(CUgraphExec*, CUgraph, unsigned long long);
using ExecOnStream = CUresult (*)(CUgraphExec, CUstream);
using ExecDestroy = CUresult (*)(CUgraphExec);
using GraphAttr = CUresult (*)(CUdevice, int, void*);
using GraphTrim = CUresult (*)(CUdevice);

struct Graphs : Driver {
  Graphs() { use(1); }  // CUDA 1 = NVML 0 in kTwoGpus
  CUgraph graph() {
    CUgraph g = nullptr;
    EXPECT_EQ(fn<GraphCreate>("cuGraphCreate")(&g, 0), CUDA_SUCCESS);
    return g;
  }
  CUdeviceptr alloc_node(CUgraph g, std::size_t bytes, CUgraphNode* node = nullptr) {
    CUDA_MEM_ALLOC_NODE_PARAMS params{};
    params.poolProps.allocType = 1;
    params.poolProps.location = {CU_MEM_LOCATION_TYPE_DEVICE, 1};
    params.bytesize = bytes;
    CUgraphNode created = nullptr;
    EXPECT_EQ(fn<AddAlloc>("cuGraphAddMemAllocNode")(&created, g, nullptr, 0, &params),
              CUDA_SUCCESS);
    if (node != nullptr) *node = created;
    return params.dptr;
  }
  CUresult free_node(CUgraph g, CUdeviceptr address) {
    CUgraphNode node = nullptr;
    return fn<AddFree>("cuGraphAddMemFreeNode")(&node, g, nullptr, 0, address);
  }
  CUgraphExec instantiate(CUgraph g, unsigned long long flags = 0) {
    CUgraphExec exec = nullptr;
    EXPECT_EQ(fn<Instantiate>("cuGraphInstantiateWithFlags")(&exec, g, flags), CUDA_SUCCESS);
    return exec;
  }
  CUresult launch(CUgraphExec exec) { return fn<ExecOnStream>("cuGraphLaunch")(exec, nullptr); }
  std::uint64_t attr(int attribute) {
    std::uint64_t value = ~0ull;
    EXPECT_EQ(fn<GraphAttr>("cuDeviceGetGraphMemAttribute")(1, attribute, &value), CUDA_SUCCESS);
    return value;
  }
  void expect_device(std::uint64_t bytes) {
    EXPECT_EQ(nvml_used(0), bytes);
    EXPECT_EQ(process_used(0), bytes);
    EXPECT_EQ(cuda_used(), bytes + 256 * MiB);
  }
};

TEST(simGraph, ReservationKeptAfterLaunchUntilTrimmed) {
  SimGpu gpu;
  Graphs d;
  const CUgraph g = d.graph();
  const CUdeviceptr a = d.alloc_node(g, 3 * MiB);
  const CUdeviceptr b = d.alloc_node(g, 2 * MiB);
  EXPECT_NE(a, 0u);
  EXPECT_NE(a, b);
  ASSERT_EQ(d.free_node(g, a), CUDA_SUCCESS);
  ASSERT_EQ(d.free_node(g, b), CUDA_SUCCESS);
  EXPECT_EQ(d.free_node(g, b), CUDA_ERROR_INVALID_VALUE);  // freed once only
  d.expect_device(0);                                      // building takes no memory
  const CUgraphExec exec = d.instantiate(g);
  d.expect_device(0);
  ASSERT_EQ(d.launch(exec), CUDA_SUCCESS);
  // 5 MiB in use during the run, all freed by the graph itself; the 6 MiB reservation stays.
  d.expect_device(6 * MiB);
  EXPECT_EQ(d.attr(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT), 6 * MiB);
  EXPECT_EQ(d.attr(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT), 0u);
  EXPECT_EQ(d.attr(CU_GRAPH_MEM_ATTR_USED_MEM_HIGH), 5 * MiB);
  ASSERT_EQ(d.launch(exec), CUDA_SUCCESS);  // replay: the same reservation
  d.expect_device(6 * MiB);
  ASSERT_EQ(d.fn<ExecDestroy>("cuGraphExecDestroy")(exec), CUDA_SUCCESS);
  ASSERT_EQ(d.fn<GraphDestroy>("cuGraphDestroy")(g), CUDA_SUCCESS);
  d.expect_device(6 * MiB);  // kept until trimmed
  ASSERT_EQ(d.fn<GraphTrim>("cuDeviceGraphMemTrim")(1), CUDA_SUCCESS);
  d.expect_device(0);
  EXPECT_EQ(d.attr(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT), 0u);
  EXPECT_EQ(d.attr(CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH), 6 * MiB);
}

TEST(simGraph, UploadReservesBeforeTheFirstLaunch) {
  SimGpu gpu;
  Graphs d;
  const CUgraph g = d.graph();
  ASSERT_EQ(d.free_node(g, d.alloc_node(g, 7 * MiB)), CUDA_SUCCESS);
  const CUgraphExec exec = d.instantiate(g);
  ASSERT_EQ(d.fn<ExecOnStream>("cuGraphUpload")(exec, nullptr), CUDA_SUCCESS);
  d.expect_device(8 * MiB);
  EXPECT_EQ(d.attr(CU_GRAPH_MEM_ATTR_USED_MEM_HIGH), 0u);
  // Only one instantiation of a graph with memory nodes at a time.
  CUgraphExec second = nullptr;
  EXPECT_EQ(d.fn<Instantiate>("cuGraphInstantiateWithFlags")(&second, g, 0),
            CUDA_ERROR_INVALID_VALUE);
}

TEST(simGraph, UnfreedAllocationOutlivesTheLaunch) {
  SimGpu gpu;
  Graphs d;
  const CUgraph g = d.graph();
  const CUdeviceptr kept = d.alloc_node(g, 4 * MiB);
  const CUgraphExec exec = d.instantiate(g);
  ASSERT_EQ(d.launch(exec), CUDA_SUCCESS);
  EXPECT_EQ(d.attr(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT), 4 * MiB);
  d.expect_device(4 * MiB);
  // Launching again while its allocation is still live is refused.
  EXPECT_EQ(d.launch(exec), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(d.fn<GraphTrim>("cuDeviceGraphMemTrim")(1), CUDA_SUCCESS);
  d.expect_device(4 * MiB);  // in use: not trimmed
  CUdeviceptr base = 0;
  std::size_t size = 0;
  ASSERT_EQ(d.fn<PFN_cuMemGetAddressRange>("cuMemGetAddressRange_v2")(&base, &size, kept + 1),
            CUDA_SUCCESS);
  EXPECT_EQ(base, kept);
  EXPECT_EQ(size, 4 * MiB);
  ASSERT_EQ(d.fn<PFN_cuMemFreeAsync>("cuMemFreeAsync")(kept, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(d.attr(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT), 0u);
  d.expect_device(4 * MiB);  // the reservation stays
  ASSERT_EQ(d.launch(exec), CUDA_SUCCESS);
  ASSERT_EQ(d.fn<PFN_cuMemFree>("cuMemFree_v2")(kept), CUDA_SUCCESS);
  ASSERT_EQ(d.fn<GraphTrim>("cuDeviceGraphMemTrim")(1), CUDA_SUCCESS);
  d.expect_device(0);
}

TEST(simGraph, AutoFreeOnLaunchAndFreesInAnotherGraph) {
  SimGpu gpu;
  Graphs d;
  const CUgraph g = d.graph();
  const CUdeviceptr kept = d.alloc_node(g, 2 * MiB);
  const CUgraphExec exec = d.instantiate(g, 1);  // CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH
  ASSERT_EQ(d.launch(exec), CUDA_SUCCESS);
  ASSERT_EQ(d.launch(exec), CUDA_SUCCESS);  // frees the first launch's allocation first
  EXPECT_EQ(d.attr(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT), 2 * MiB);
  d.expect_device(2 * MiB);
  const CUgraph freer = d.graph();
  ASSERT_EQ(d.free_node(freer, kept), CUDA_SUCCESS);
  ASSERT_EQ(d.launch(d.instantiate(freer)), CUDA_SUCCESS);
  EXPECT_EQ(d.attr(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT), 0u);
  EXPECT_EQ(d.fn<PFN_cuMemFree>("cuMemFree_v2")(kept), CUDA_ERROR_INVALID_VALUE);
  // High watermarks reset to zero only.
  std::uint64_t value = 5;
  auto set = d.fn<GraphAttr>("cuDeviceSetGraphMemAttribute");
  EXPECT_EQ(set(1, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, &value), CUDA_ERROR_INVALID_VALUE);
  value = 0;
  EXPECT_EQ(set(1, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &value), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(set(1, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, &value), CUDA_SUCCESS);
  EXPECT_EQ(d.attr(CU_GRAPH_MEM_ATTR_USED_MEM_HIGH), 0u);
  ASSERT_EQ(d.fn<GraphTrim>("cuDeviceGraphMemTrim")(1), CUDA_SUCCESS);
  ASSERT_EQ(set(1, CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH, &value), CUDA_SUCCESS);
  EXPECT_EQ(d.attr(CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH), 0u);
}

// Replays make no allocation call: only the graph calls' own callbacks fire.
void record_enter(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                  const void* raw) {
  const auto* data = static_cast<const CUpti_CallbackData*>(raw);
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API && data->callbackSite == CUPTI_API_ENTER)
    static_cast<std::vector<CUpti_CallbackId>*>(userdata)->push_back(cbid);
}

TEST(simGraph, LaunchMakesNoAllocationCall) {
  SimGpu gpu;
  Graphs d;
  const CUgraph g = d.graph();
  ASSERT_EQ(d.free_node(g, d.alloc_node(g, 3 * MiB)), CUDA_SUCCESS);
  const CUgraphExec exec = d.instantiate(g);
  SimLibrary cupti("libcupti.so.13");
  std::vector<CUpti_CallbackId> calls;
  CUpti_SubscriberHandle s = nullptr;
  ASSERT_EQ(cupti.get<PFN_cuptiSubscribe>("cuptiSubscribe")(&s, &record_enter, &calls),
            CUPTI_SUCCESS);
  ASSERT_EQ(cupti.get<PFN_cuptiEnableDomain>("cuptiEnableDomain")(1, s, CUPTI_CB_DOMAIN_DRIVER_API),
            CUPTI_SUCCESS);
  ASSERT_EQ(d.launch(exec), CUDA_SUCCESS);
  ASSERT_EQ(d.fn<ExecOnStream>("cuGraphLaunch_ptsz")(exec, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(d.fn<GraphTrim>("cuDeviceGraphMemTrim")(1), CUDA_SUCCESS);
  ASSERT_EQ(cupti.get<PFN_cuptiUnsubscribe>("cuptiUnsubscribe")(s), CUPTI_SUCCESS);
  EXPECT_EQ(calls, (std::vector<CUpti_CallbackId>{CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
                                                  CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz,
                                                  CUPTI_DRIVER_TRACE_CBID_cuDeviceGraphMemTrim}));
}

}  // namespace
}  // namespace gpumem::testing
