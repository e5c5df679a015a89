#include "workload.hpp"

#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>
#include <string>
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
  const char* (*errorString)(int);
};

enum class Kind { driver, runtime, async, vmm, managed };
struct Named {
  Kind kind;
  unsigned long long value;
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

  void remember(const std::string& name, Kind kind, unsigned long long value) {
    if (named_.count(name) != 0) throw StepError("\"" + name + "\" is already allocated");
    named_[name] = {kind, value};
  }
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
        remember(name, Kind::managed, pointer);
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
    } else if (op == "vmm_alloc") {
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
      CUmemGenericAllocationHandle handle = 0;
      check(
          cuda_.memCreate(&handle, (bytes + granularity - 1) / granularity * granularity, &prop, 0),
          "cuMemCreate");
      remember(name, Kind::vmm, handle);
    } else if (op == "vmm_free") {
      check(cuda_.memRelease(take(word(step, 1, "name"), Kind::vmm).value), "cuMemRelease");
    } else if (op == "spike") {
      const std::uint64_t bytes = size_argument(step, 1);
      const auto duration = duration_argument(step, 2);
      ensure_context();
      CUdeviceptr pointer = 0;
      check(cuda_.memAlloc(&pointer, bytes), "cuMemAlloc_v2");
      hold_for(duration);
      check(cuda_.memFree(pointer), "cuMemFree_v2");
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
    } else {
      throw StepError("unknown step \"" + op + "\"");
    }
    return std::nullopt;
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
