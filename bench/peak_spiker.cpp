// Makes one device-memory spike per request on stdin ("BYTES MICROSECONDS"): allocates, holds
// for the duration (spinning, for precision), frees, then answers "done". A separate process,
// as the program a sampler watches would be.
#include <chrono>
#include <cstdio>
#include <iostream>

#include "gpumem/allocate.hpp"

int main() {
  std::size_t bytes = 0;
  long long micros = 0;
  // The context first, so that creating it is no part of any spike.
  gpumem::DeviceAllocation warm = gpumem::device_allocate(1, 0);
  if (!warm.valid()) {
    std::cerr << "spiker: no device\n";
    return 1;
  }
  std::cout << "ready" << std::endl;
  while (std::cin >> bytes >> micros) {
    {
      gpumem::DeviceAllocation spike = gpumem::device_allocate(bytes, 0);
      const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(micros);
      while (std::chrono::steady_clock::now() < until) {
      }
    }
    std::cout << "done" << std::endl;
  }
  return 0;
}
