#include "workload.hpp"

#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "driver/abi/cuda.hpp"
#include "quantities.hpp"

namespace gpumem::sim::tool {
namespace {

using namespace gpumem::abi;

struct Step {
  std::string text;  // as written, for messages
  std::vector<std::string> words;
};

struct Cuda {
  PFN_cuInit init;
  PFN_cuGetErrorString errorString;
  PFN_cuDeviceGet deviceGet;
  PFN_cuDevicePrimaryCtxRetain primaryCtxRetain;
  PFN_cuCtxSetCurrent ctxSetCurrent;
  PFN_cuCtxGetCurrent ctxGetCurrent;
  PFN_cuMemAlloc memAlloc;
  PFN_cuMemFree memFree;
  PFN_cuMemAllocAsync memAllocAsync;
  PFN_cuMemFreeAsync memFreeAsync;
  PFN_cuMemCreate memCreate;
  PFN_cuMemRelease memRelease;
  PFN_cuMemAllocManaged memAllocManaged;
};

struct Runtime {
  int (*malloc)(void**, std::size_t);
  int (*free)(void*);
  int (*mallocAsync)(void**, std::size_t, CUstream);
  int (*freeAsync)(void*, CUstream);
  int (*deviceSynchronize)();
  const char* (*errorString)(int);
};

enum class Kind {
  driver,
  runtime,
  async,
  runtime_async,
  vmm,
  managed,
  context,
  module,
  range,
  graph
};
struct Named {
  Kind kind;
  unsigned long long value;
  unsigned long long size = 0;  // a range's or a graph allocation's bytes
};

class StepError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

std::vector<Step> parse_script(const std::string& script) {
  std::vector<Step> steps;
  std::stringstream stream(script);
  std::string part;
  while (std::getline(stream, part, ';')) {
    Step step;
    std::istringstream words(part);
    std::string word;
    while (words >> word) step.words.push_back(word);
    if (step.words.empty()) continue;
    step.text = part.substr(part.find_first_not_of(" \t\n"));
    step.text = step.text.substr(0, step.text.find_last_not_of(" \t\n") + 1);
    steps.push_back(std::move(step));
  }
  return steps;
}

void* load_cuda_library() {
  if (const char* path = std::getenv("GPUMEM_CUDA_LIBRARY"); path != nullptr && *path != '\0') {
    return ::dlopen(path, RTLD_NOW | RTLD_LOCAL);
  }
  if (void* library = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) return library;
  // Next to this tool: the simulated driver it was built with.
  char self[4096];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return nullptr;
  self[n] = '\0';
  std::string dir(self);
  dir = dir.substr(0, dir.rfind('/'));
  return ::dlopen((dir + "/libcuda.so.1").c_str(), RTLD_NOW | RTLD_LOCAL);
}

template <class Fn>
Fn need(void* library, const char* name) {
  auto fn = reinterpret_cast<Fn>(::dlsym(library, name));
  if (fn == nullptr) throw StepError(std::string("the CUDA library lacks ") + name);
  return fn;
}

class Workload {
 public:
  explicit Workload(std::vector<Step> steps) : steps_(std::move(steps)) {}

  int run() {
    int status = 0;
    try {
      open_driver();
      for (step_ = 0; step_ < steps_.size(); ++step_) {
        if (const auto exit_code = execute(steps_[step_])) {
          status = *exit_code;
          break;
        }
      }
    } catch (const StepError& e) {
      if (step_ < steps_.size()) {
        std::fprintf(stderr, "gpumem-sim workload: step %zu \"%s\": %s\n", step_ + 1,
                     steps_[step_].text.c_str(), e.what());
      } else {
        std::fprintf(stderr, "gpumem-sim workload: %s\n", e.what());
      }
      status = 1;
    }
    std::fflush(stdout);
    const int children = wait_children();
    return status != 0 ? status : children;
  }

 private:
  void open_driver() {
    driver_library_ = load_cuda_library();
    if (driver_library_ == nullptr)
      throw StepError(std::string("cannot load the CUDA driver: ") + ::dlerror());
    cuda_.init = need<PFN_cuInit>(driver_library_, "cuInit");
    cuda_.errorString = need<PFN_cuGetErrorString>(driver_library_, "cuGetErrorString");
    cuda_.deviceGet = need<PFN_cuDeviceGet>(driver_library_, "cuDeviceGet");
    cuda_.primaryCtxRetain =
        need<PFN_cuDevicePrimaryCtxRetain>(driver_library_, "cuDevicePrimaryCtxRetain");
    cuda_.ctxSetCurrent = need<PFN_cuCtxSetCurrent>(driver_library_, "cuCtxSetCurrent");
    cuda_.ctxGetCurrent = need<PFN_cuCtxGetCurrent>(driver_library_, "cuCtxGetCurrent");
    cuda_.memAlloc = need<PFN_cuMemAlloc>(driver_library_, "cuMemAlloc_v2");
    cuda_.memFree = need<PFN_cuMemFree>(driver_library_, "cuMemFree_v2");
    cuda_.memAllocAsync = need<PFN_cuMemAllocAsync>(driver_library_, "cuMemAllocAsync");
    cuda_.memFreeAsync = need<PFN_cuMemFreeAsync>(driver_library_, "cuMemFreeAsync");
    cuda_.memCreate = need<PFN_cuMemCreate>(driver_library_, "cuMemCreate");
    cuda_.memRelease = need<PFN_cuMemRelease>(driver_library_, "cuMemRelease");
    cuda_.memAllocManaged = need<PFN_cuMemAllocManaged>(driver_library_, "cuMemAllocManaged");
    check(cuda_.init(0), "cuInit");
  }

  // libcudart.so.13 from the folder the driver was loaded from.
  const Runtime& runtime() {
    if (runtime_.malloc != nullptr) return runtime_;
    Dl_info info{};
    if (::dladdr(reinterpret_cast<void*>(cuda_.init), &info) == 0 || info.dli_fname == nullptr) {
      throw StepError("cannot locate the loaded CUDA driver");
    }
    std::string dir(info.dli_fname);
    dir = dir.find('/') == std::string::npos ? "." : dir.substr(0, dir.rfind('/'));
    void* library = ::dlopen((dir + "/libcudart.so.13").c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr)
      throw StepError(std::string("cannot load libcudart.so.13: ") + ::dlerror());
    runtime_.malloc = need<int (*)(void**, std::size_t)>(library, "cudaMalloc");
    runtime_.free = need<int (*)(void*)>(library, "cudaFree");
    runtime_.mallocAsync = need<int (*)(void**, std::size_t, CUstream)>(library, "cudaMallocAsync");
    runtime_.freeAsync = need<int (*)(void*, CUstream)>(library, "cudaFreeAsync");
    runtime_.deviceSynchronize = need<int (*)()>(library, "cudaDeviceSynchronize");
    runtime_.errorString = need<const char* (*)(int)>(library, "cudaGetErrorString");
    return runtime_;
  }

  void check(CUresult rc, const char* call) {
    if (rc == CUDA_SUCCESS) return;
    const char* text = nullptr;
    if (cuda_.errorString(rc, &text) != CUDA_SUCCESS || text == nullptr) text = "unknown error";
    throw StepError(std::string(call) + " failed: error " + std::to_string(rc) + " (" + text + ")");
  }

  void check_runtime(int rc, const char* call) {
    if (rc == 0) return;
    throw StepError(std::string(call) + " failed: error " + std::to_string(rc) + " (" +
                    runtime_.errorString(rc) + ")");
  }

  void select_device(int ordinal) {
    CUdevice device = 0;
    check(cuda_.deviceGet(&device, ordinal), "cuDeviceGet");
    CUcontext context = nullptr;
    check(cuda_.primaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain");
    check(cuda_.ctxSetCurrent(context), "cuCtxSetCurrent");
  }

  // Driver steps without an earlier `device` step work on CUDA device 0.
  void ensure_context() {
    CUcontext context = nullptr;
    check(cuda_.ctxGetCurrent(&context), "cuCtxGetCurrent");
    if (context == nullptr) select_device(0);
  }

  static std::uint64_t size_argument(const Step& step, std::size_t index) {
    if (index >= step.words.size()) throw StepError("missing size");
    const auto size = parse_size(step.words[index]);
    if (!size) throw StepError("bad size \"" + step.words[index] + "\"");
    return *size;
  }
  static std::chrono::nanoseconds duration_argument(const Step& step, std::size_t index) {
    if (index >= step.words.size()) throw StepError("missing duration");
    const auto duration = parse_duration(step.words[index]);
    if (!duration) throw StepError("bad duration \"" + step.words[index] + "\"");
    return *duration;
  }
  static const std::string& word(const Step& step, std::size_t index, const char* what) {
    if (index >= step.words.size()) throw StepError(std::string("missing ") + what);
    return step.words[index];
  }

  void remember(const std::string& name, Kind kind, unsigned long long value,
                unsigned long long size = 0) {
    if (named_.count(name) != 0) throw StepError("\"" + name + "\" is already allocated");
    named_[name] = {kind, value, size};
  }
  const Named& find(const std::string& name, Kind kind) {
    const auto it = named_.find(name);
    if (it == named_.end() || it->second.kind != kind)
      throw StepError("no live object named \"" + name + "\" of this kind");
    return it->second;
  }
  template <class Fn>
  Fn sym(const char* name) {
    return need<Fn>(driver_library_, name);
  }
  CUdevice current_device() {
    ensure_context();
    CUdevice device = 0;
    check(sym<PFN_cuCtxGetDevice>("cuCtxGetDevice")(&device), "cuCtxGetDevice");
    return device;
  }
  CUmemoryPool current_pool() {
    CUmemoryPool pool = nullptr;
    check(sym<PFN_cuDeviceGetMemPool>("cuDeviceGetMemPool")(&pool, current_device()),
          "cuDeviceGetMemPool");
    return pool;
  }
  // Steps of the driver's newer calls: contexts, modules, VMM mappings, pools, graphs, managed
  // memory. False when `op` is none of them.
  bool execute_more(const std::string& op, const Step& step);
  Named take(const std::string& name, Kind kind) {
    const auto it = named_.find(name);
    if (it == named_.end() || it->second.kind != kind)
      throw StepError("no live allocation named \"" + name + "\" of this kind");
    const Named found = it->second;
    named_.erase(it);
    return found;
  }

  // Returns the exit status when the step ends the program.
  std::optional<int> execute(const Step& step) {
    const std::string& op = step.words[0];
    if (op == "device") {
      const std::string& n = word(step, 1, "device ordinal");
      char* end = nullptr;
      const long ordinal = std::strtol(n.c_str(), &end, 10);
      if (*end != '\0' || ordinal < 0) throw StepError("bad device ordinal \"" + n + "\"");
      select_device(static_cast<int>(ordinal));
    } else if (op == "alloc" || op == "async_alloc" || op == "managed_alloc") {
      const std::string& name = word(step, 1, "name");
      const std::uint64_t bytes = size_argument(step, 2);
      ensure_context();
      CUdeviceptr pointer = 0;
      if (op == "alloc") {
        check(cuda_.memAlloc(&pointer, bytes), "cuMemAlloc_v2");
        remember(name, Kind::driver, pointer);
      } else if (op == "async_alloc") {
        check(cuda_.memAllocAsync(&pointer, bytes, nullptr), "cuMemAllocAsync");
        remember(name, Kind::async, pointer);
      } else {
        check(cuda_.memAllocManaged(&pointer, bytes, 1), "cuMemAllocManaged");
        remember(name, Kind::managed, pointer, bytes);
      }
    } else if (op == "free") {
      check(cuda_.memFree(take(word(step, 1, "name"), Kind::driver).value), "cuMemFree_v2");
    } else if (op == "async_free") {
      check(cuda_.memFreeAsync(take(word(step, 1, "name"), Kind::async).value, nullptr),
            "cuMemFreeAsync");
    } else if (op == "rt_alloc") {
      const std::string& name = word(step, 1, "name");
      const std::uint64_t bytes = size_argument(step, 2);
      void* pointer = nullptr;
      check_runtime(runtime().malloc(&pointer, bytes), "cudaMalloc");
      remember(name, Kind::runtime, reinterpret_cast<unsigned long long>(pointer));
    } else if (op == "rt_free") {
      const Named found = take(word(step, 1, "name"), Kind::runtime);
      check_runtime(runtime().free(reinterpret_cast<void*>(found.value)), "cudaFree");
    } else if (op == "vmm_alloc" || op == "vmm_create") {
      const std::string& name = word(step, 1, "name");
      const std::uint64_t bytes = size_argument(step, 2);
      ensure_context();
      CUcontext context = nullptr;
      CUdevice device = 0;
      check(cuda_.ctxGetCurrent(&context), "cuCtxGetCurrent");
      auto get_device = need<PFN_cuCtxGetDevice>(driver_library_, "cuCtxGetDevice");
      check(get_device(&device), "cuCtxGetDevice");
      CUmemAllocationProp prop{};
      prop.type = 1;
      prop.locationType = CU_MEM_LOCATION_TYPE_DEVICE;
      prop.locationId = device;
      // Sizes are rounded up to the granularity, as CUDA's samples do.
      using Granularity = CUresult (*)(std::size_t*, const CUmemAllocationProp*, int);
      std::size_t granularity = 0;
      check(need<Granularity>(driver_library_, "cuMemGetAllocationGranularity")(
                &granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
            "cuMemGetAllocationGranularity");
      const std::uint64_t rounded = (bytes + granularity - 1) / granularity * granularity;
      CUmemGenericAllocationHandle handle = 0;
      check(cuda_.memCreate(&handle, rounded, &prop, 0), "cuMemCreate");
      remember(name, Kind::vmm, handle, rounded);
    } else if (op == "vmm_free" || op == "vmm_release") {
      check(cuda_.memRelease(take(word(step, 1, "name"), Kind::vmm).value), "cuMemRelease");
    } else if (op == "spike") {
      const std::uint64_t bytes = size_argument(step, 1);
      const auto duration = duration_argument(step, 2);
      ensure_context();
      CUdeviceptr pointer = 0;
      check(cuda_.memAlloc(&pointer, bytes), "cuMemAlloc_v2");
      hold_for(duration);
      check(cuda_.memFree(pointer), "cuMemFree_v2");
    } else if (op == "pairs") {
      const std::string& count = word(step, 1, "pair count");
      char* end = nullptr;
      const long long pairs = std::strtoll(count.c_str(), &end, 10);
      if (*end != '\0' || pairs < 1 || pairs > 1'000'000'000)
        throw StepError("bad pair count \"" + count + "\" (1 to 10^9)");
      const std::uint64_t bytes = size_argument(step, 2);
      ensure_context();
      for (long long pair = 0; pair < pairs; ++pair) {
        CUdeviceptr pointer = 0;
        check(cuda_.memAlloc(&pointer, bytes), "cuMemAlloc_v2");
        check(cuda_.memFree(pointer), "cuMemFree_v2");
      }
    } else if (op == "churn") {
      const std::string& count = word(step, 1, "thread count");
      char* end = nullptr;
      const long threads = std::strtol(count.c_str(), &end, 10);
      if (*end != '\0' || threads < 1 || threads > 64)
        throw StepError("bad thread count \"" + count + "\" (1 to 64)");
      const std::uint64_t bytes = size_argument(step, 2);
      const auto duration = duration_argument(step, 3);
      ensure_context();
      CUcontext context = nullptr;
      check(cuda_.ctxGetCurrent(&context), "cuCtxGetCurrent");
      const auto until = std::chrono::steady_clock::now() + duration;
      std::atomic<CUresult> failed{CUDA_SUCCESS};
      std::vector<std::thread> workers;
      for (long index = 0; index < threads; ++index) {
        workers.emplace_back([&] {
          if (const CUresult set = cuda_.ctxSetCurrent(context); set != CUDA_SUCCESS) {
            failed.store(set);
            return;
          }
          while (std::chrono::steady_clock::now() < until) {
            CUdeviceptr pointer = 0;
            if (const CUresult result = cuda_.memAlloc(&pointer, bytes); result != CUDA_SUCCESS) {
              failed.store(result);
              return;
            }
            if (const CUresult result = cuda_.memFree(pointer); result != CUDA_SUCCESS) {
              failed.store(result);
              return;
            }
          }
        });
      }
      for (std::thread& worker : workers) worker.join();
      check(failed.load(), "cuMemAlloc_v2/cuMemFree_v2");
    } else if (op == "sleep") {
      hold_for(duration_argument(step, 1));
    } else if (op == "fork") {
      std::fflush(stdout);
      std::fflush(stderr);
      const pid_t child = ::fork();
      if (child < 0) throw StepError(std::string("fork failed: ") + std::strerror(errno));
      if (child == 0) {
        // A new process: it waits only for its own children and owns none of the parent's memory.
        children_.clear();
        named_.clear();
      } else {
        children_.push_back(child);
      }
    } else if (op == "exit") {
      const std::string& code = word(step, 1, "exit code");
      char* end = nullptr;
      const long value = std::strtol(code.c_str(), &end, 10);
      if (*end != '\0' || value < 0 || value > 255)
        throw StepError("bad exit code \"" + code + "\"");
      return static_cast<int>(value);
    } else if (op == "signal") {
      const int number = signal_number(word(step, 1, "signal"));
      std::fflush(stdout);
      std::fflush(stderr);
      std::raise(number);
      throw StepError("the signal did not end the program");
    } else if (op == "print") {
      const std::size_t start = step.text.find_first_of(" \t");
      std::printf("%s\n",
                  start == std::string::npos
                      ? ""
                      : step.text.substr(step.text.find_first_not_of(" \t", start)).c_str());
      std::fflush(stdout);
    } else if (!execute_more(op, step)) {
      throw StepError("unknown step \"" + op + "\"");
    }
    return std::nullopt;
  }

  static unsigned long long offset_argument(const Step& step, std::size_t index) {
    if (index >= step.words.size()) return 0;
    return size_argument(step, index);
  }

  static int signal_number(std::string name) {
    if (name.rfind("SIG", 0) == 0) name = name.substr(3);
    static const std::map<std::string, int> names = {
        {"KILL", SIGKILL}, {"TERM", SIGTERM}, {"INT", SIGINT},
        {"SEGV", SIGSEGV}, {"ABRT", SIGABRT}, {"HUP", SIGHUP},
        {"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"QUIT", SIGQUIT}};
    if (const auto it = names.find(name); it != names.end()) return it->second;
    char* end = nullptr;
    const long number = std::strtol(name.c_str(), &end, 10);
    if (name.empty() || *end != '\0' || number <= 0 || number >= 65)
      throw StepError("bad signal \"" + name + "\"");
    return static_cast<int>(number);
  }

  // 0, or the status of the first child that failed (128 + signal for a killed one).
  int wait_children() {
    int result = 0;
    for (const pid_t child : children_) {
      int status = 0;
      while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
      }
      int code = 0;
      if (WIFEXITED(status)) code = WEXITSTATUS(status);
      if (WIFSIGNALED(status)) code = 128 + WTERMSIG(status);
      if (result == 0) result = code;
    }
    children_.clear();
    return result;
  }

  std::vector<Step> steps_;
  std::size_t step_ = 0;
  void* driver_library_ = nullptr;
  Cuda cuda_{};
  Runtime runtime_{};
  std::map<std::string, Named> named_;
  std::vector<pid_t> children_;
};

bool Workload::execute_more(const std::string& op, const Step& step) {
  using Reserve =
      CUresult (*)(CUdeviceptr*, std::size_t, std::size_t, CUdeviceptr, unsigned long long);
  using AddressFree = CUresult (*)(CUdeviceptr, std::size_t);
  using SetAccess = CUresult (*)(CUdeviceptr, std::size_t, const CUmemAccessDesc*, std::size_t);
  using PoolAttr = CUresult (*)(CUmemoryPool, int, void*);
  using GraphCreate = CUresult (*)(CUgraph*, unsigned);
  using AddAlloc = CUresult (*)(CUgraphNode*, CUgraph, const CUgraphNode*, std::size_t,
                                CUDA_MEM_ALLOC_NODE_PARAMS*);
  using AddFree = CUresult (*)(CUgraphNode*, CUgraph, const CUgraphNode*, std::size_t, CUdeviceptr);
  using Instantiate = CUresult (*)(CUgraphExec*, CUgraph, unsigned long long);
  using ExecOnStream = CUresult (*)(CUgraphExec, CUstream);
  using Prefetch = CUresult (*)(CUdeviceptr, std::size_t, CUmemLocation, unsigned, CUstream);

  if (op == "wait_for") {
    // wait_for PATH: blocks until PATH exists (a test's checkpoint), at most a minute.
    const std::string& path = word(step, 1, "path");
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
    while (::access(path.c_str(), F_OK) != 0) {
      if (std::chrono::steady_clock::now() > deadline) throw StepError("timed out waiting");
      ::usleep(1000);
    }
  } else if (op == "ctx_create") {
    const std::string& name = word(step, 1, "name");
    CUdevice device = 0;
    CUcontext current = nullptr;
    check(cuda_.ctxGetCurrent(&current), "cuCtxGetCurrent");
    if (current != nullptr) device = current_device();
    CUcontext context = nullptr;
    check(sym<CUresult (*)(CUcontext*, void*, unsigned, CUdevice)>("cuCtxCreate_v4")(
              &context, nullptr, 0, device),
          "cuCtxCreate_v4");
    remember(name, Kind::context, reinterpret_cast<unsigned long long>(context));
  } else if (op == "ctx_destroy") {
    const Named found = take(word(step, 1, "name"), Kind::context);
    check(sym<CUresult (*)(CUcontext)>("cuCtxDestroy_v2")(reinterpret_cast<CUcontext>(found.value)),
          "cuCtxDestroy_v2");
  } else if (op == "module_load") {
    const std::string& name = word(step, 1, "name");
    const std::uint64_t bytes = size_argument(step, 2);
    if (bytes == 0) throw StepError("a module has at least one byte");
    ensure_context();
    std::string image = ".version 8.0\n.target sm_90\n";  // PTX text: its size is its length + 1
    image.resize(bytes - 1, ' ');
    CUmodule module = nullptr;
    check(sym<CUresult (*)(CUmodule*, const void*)>("cuModuleLoadData")(&module, image.c_str()),
          "cuModuleLoadData");
    remember(name, Kind::module, reinterpret_cast<unsigned long long>(module));
  } else if (op == "module_use") {
    const Named& found = find(word(step, 1, "name"), Kind::module);
    CUfunction function = nullptr;
    check(sym<CUresult (*)(CUfunction*, CUmodule, const char*)>("cuModuleGetFunction")(
              &function, reinterpret_cast<CUmodule>(found.value), "kernel"),
          "cuModuleGetFunction");
  } else if (op == "module_unload") {
    const Named found = take(word(step, 1, "name"), Kind::module);
    check(sym<CUresult (*)(CUmodule)>("cuModuleUnload")(reinterpret_cast<CUmodule>(found.value)),
          "cuModuleUnload");
  } else if (op == "vmm_reserve") {
    const std::string& name = word(step, 1, "name");
    const std::uint64_t bytes = size_argument(step, 2);
    CUdeviceptr range = 0;
    check(sym<Reserve>("cuMemAddressReserve")(&range, bytes, 0, 0, 0), "cuMemAddressReserve");
    remember(name, Kind::range, range, bytes);
  } else if (op == "vmm_address_free") {
    const Named found = take(word(step, 1, "name"), Kind::range);
    check(sym<AddressFree>("cuMemAddressFree")(found.value, found.size), "cuMemAddressFree");
  } else if (op == "vmm_map") {
    // vmm_map RANGE OFFSET HANDLE: the whole handle at RANGE + OFFSET, read-write on its device.
    const Named& range = find(word(step, 1, "range"), Kind::range);
    const std::uint64_t offset = size_argument(step, 2);
    const Named& handle = find(word(step, 3, "handle"), Kind::vmm);
    check(sym<PFN_cuMemMap>("cuMemMap")(range.value + offset, handle.size, 0, handle.value, 0),
          "cuMemMap");
    const CUmemAccessDesc access{{CU_MEM_LOCATION_TYPE_DEVICE, current_device()}, 3};
    check(sym<SetAccess>("cuMemSetAccess")(range.value + offset, handle.size, &access, 1),
          "cuMemSetAccess");
  } else if (op == "vmm_unmap") {
    // vmm_unmap RANGE OFFSET SIZE
    const Named& range = find(word(step, 1, "range"), Kind::range);
    check(sym<PFN_cuMemUnmap>("cuMemUnmap")(range.value + size_argument(step, 2),
                                            size_argument(step, 3)),
          "cuMemUnmap");
  } else if (op == "vmm_retain") {
    // vmm_retain NAME RANGE OFFSET: a new reference to what is mapped there.
    const std::string& name = word(step, 1, "name");
    const Named& range = find(word(step, 2, "range"), Kind::range);
    CUmemGenericAllocationHandle handle = 0;
    check(sym<PFN_cuMemRetainAllocationHandle>("cuMemRetainAllocationHandle")(
              &handle, reinterpret_cast<void*>(range.value + offset_argument(step, 3))),
          "cuMemRetainAllocationHandle");
    remember(name, Kind::vmm, handle, 0);
  } else if (op == "sync") {
    ensure_context();
    check(sym<CUresult (*)(CUstream)>("cuStreamSynchronize")(nullptr), "cuStreamSynchronize");
  } else if (op == "ctx_sync") {
    ensure_context();
    check(sym<CUresult (*)()>("cuCtxSynchronize")(), "cuCtxSynchronize");
  } else if (op == "pool_threshold") {
    std::uint64_t bytes = size_argument(step, 1);
    check(sym<PoolAttr>("cuMemPoolSetAttribute")(current_pool(), CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                                                 &bytes),
          "cuMemPoolSetAttribute");
  } else if (op == "pool_trim") {
    check(sym<PFN_cuMemPoolTrimTo>("cuMemPoolTrimTo")(current_pool(), offset_argument(step, 1)),
          "cuMemPoolTrimTo");
  } else if (op == "rt_async_alloc") {
    const std::string& name = word(step, 1, "name");
    const std::uint64_t bytes = size_argument(step, 2);
    void* pointer = nullptr;
    check_runtime(runtime().mallocAsync(&pointer, bytes, nullptr), "cudaMallocAsync");
    remember(name, Kind::runtime_async, reinterpret_cast<unsigned long long>(pointer));
  } else if (op == "rt_async_free") {
    const Named found = take(word(step, 1, "name"), Kind::runtime_async);
    check_runtime(runtime().freeAsync(reinterpret_cast<void*>(found.value), nullptr),
                  "cudaFreeAsync");
  } else if (op == "rt_sync") {
    check_runtime(runtime().deviceSynchronize(), "cudaDeviceSynchronize");
  } else if (op == "graph") {
    // graph NAME SIZE [keep]: a graph allocating SIZE (and freeing it, unless `keep`),
    // instantiated.
    const std::string& name = word(step, 1, "name");
    const std::uint64_t bytes = size_argument(step, 2);
    const bool keep = step.words.size() > 3 && step.words[3] == "keep";
    const CUdevice device = current_device();
    CUgraph graph = nullptr;
    check(sym<GraphCreate>("cuGraphCreate")(&graph, 0), "cuGraphCreate");
    CUDA_MEM_ALLOC_NODE_PARAMS params{};
    params.poolProps.allocType = 1;
    params.poolProps.location = {CU_MEM_LOCATION_TYPE_DEVICE, device};
    params.bytesize = bytes;
    CUgraphNode node = nullptr;
    check(sym<AddAlloc>("cuGraphAddMemAllocNode")(&node, graph, nullptr, 0, &params),
          "cuGraphAddMemAllocNode");
    if (!keep) {
      CUgraphNode free_node = nullptr;
      check(sym<AddFree>("cuGraphAddMemFreeNode")(&free_node, graph, &node, 1, params.dptr),
            "cuGraphAddMemFreeNode");
    }
    CUgraphExec exec = nullptr;
    check(sym<Instantiate>("cuGraphInstantiateWithFlags")(&exec, graph, keep ? 1 : 0),
          "cuGraphInstantiateWithFlags");
    remember(name, Kind::graph, reinterpret_cast<unsigned long long>(exec), params.dptr);
  } else if (op == "graph_upload" || op == "graph_launch") {
    const Named& graph = find(word(step, 1, "graph"), Kind::graph);
    const char* call = op == "graph_upload" ? "cuGraphUpload" : "cuGraphLaunch";
    check(sym<ExecOnStream>(call)(reinterpret_cast<CUgraphExec>(graph.value), nullptr), call);
  } else if (op == "graph_free") {
    // The allocation a `keep` graph left live.
    const Named& graph = find(word(step, 1, "graph"), Kind::graph);
    check(cuda_.memFreeAsync(graph.size, nullptr), "cuMemFreeAsync");
  } else if (op == "graph_destroy") {
    const Named found = take(word(step, 1, "graph"), Kind::graph);
    check(sym<CUresult (*)(CUgraphExec)>("cuGraphExecDestroy")(
              reinterpret_cast<CUgraphExec>(found.value)),
          "cuGraphExecDestroy");
  } else if (op == "graph_trim") {
    check(sym<CUresult (*)(CUdevice)>("cuDeviceGraphMemTrim")(current_device()),
          "cuDeviceGraphMemTrim");
  } else if (op == "prefetch" || op == "prefetch_host") {
    const Named& found = find(word(step, 1, "name"), Kind::managed);
    const CUmemLocation location =
        op == "prefetch" ? CUmemLocation{CU_MEM_LOCATION_TYPE_DEVICE, current_device()}
                         : CUmemLocation{CU_MEM_LOCATION_TYPE_HOST, 0};
    check(sym<Prefetch>("cuMemPrefetchAsync_v2")(found.value, found.size, location, 0, nullptr),
          "cuMemPrefetchAsync_v2");
  } else {
    return false;
  }
  return true;
}

}  // namespace

int run_workload(const std::string& script) {
  std::vector<Step> steps = parse_script(script);
  if (steps.empty()) {
    std::fprintf(stderr, "gpumem-sim workload: the script has no steps\n");
    return 2;
  }
  return Workload(std::move(steps)).run();
}

}  // namespace gpumem::sim::tool
