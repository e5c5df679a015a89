// A user's program: the first device's memory, as gpu_mem_get() reads it.
#include <cstdio>
#include <gpumem/gpumem.hpp>

int main() {
  const gpumem::GPUMemory memory = gpumem::gpu_mem_get(0);
  std::printf("gpumem %s: total=%lld free=%lld used=%lld MB\n", gpumem::version,
              static_cast<long long>(memory.total), static_cast<long long>(memory.free),
              static_cast<long long>(memory.used));
  return memory.total > 0 ? 0 : 1;
}
