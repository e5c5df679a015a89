// The simulated CUDA driver: initialisation and devices.
#include <cstring>

#include "core/export.hpp"
#include "core/faults.hpp"
#include "core/uuid.hpp"
#include "injection.hpp"
#include "process.hpp"

using namespace gpumem::abi;
namespace sim = gpumem::sim;
namespace cuda = gpumem::sim::cuda;

namespace {

const sim::DeviceRecord& record(CUdevice device) {
  return cuda::state().device(cuda::nvml_index(device));
}

CUresult copy_text(const char* text, char* out, int length) {
  if (out == nullptr || length <= 0) return CUDA_ERROR_INVALID_VALUE;
  const std::size_t n = std::min(std::strlen(text), static_cast<std::size_t>(length) - 1);
  std::memcpy(out, text, n);
  out[n] = '\0';
  return CUDA_SUCCESS;
}

const char* error_string(CUresult error) {
  switch (error) {
    case CUDA_SUCCESS:
      return "no error";
    case CUDA_ERROR_INVALID_VALUE:
      return "invalid argument";
    case CUDA_ERROR_OUT_OF_MEMORY:
      return "out of memory";
    case CUDA_ERROR_NOT_INITIALIZED:
      return "initialization error";
    case CUDA_ERROR_DEINITIALIZED:
      return "driver shutting down";
    case CUDA_ERROR_STUB_LIBRARY:
      return "CUDA driver is a stub library";
    case CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER:
      return "API call is not supported in the installed CUDA driver";
    case CUDA_ERROR_DEVICE_UNAVAILABLE:
      return "CUDA-capable device(s) is/are busy or unavailable";
    case CUDA_ERROR_NO_DEVICE:
      return "no CUDA-capable device is detected";
    case CUDA_ERROR_INVALID_DEVICE:
      return "invalid device ordinal";
    case CUDA_ERROR_INVALID_CONTEXT:
      return "invalid device context";
    case CUDA_ERROR_INVALID_IMAGE:
      return "device kernel image is invalid";
    case CUDA_ERROR_ALREADY_MAPPED:
      return "resource already mapped";
    case CUDA_ERROR_NOT_MAPPED:
      return "resource not mapped";
    case CUDA_ERROR_FILE_NOT_FOUND:
      return "file not found";
    case CUDA_ERROR_INVALID_HANDLE:
      return "invalid resource handle";
    case CUDA_ERROR_NOT_FOUND:
      return "named symbol not found";
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
      return "context is destroyed";
    case CUDA_ERROR_NOT_PERMITTED:
      return "operation not permitted";
    case CUDA_ERROR_NOT_SUPPORTED:
      return "operation not supported";
    case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
      return "system has unsupported display driver / cuda driver combination";
    case CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE:
      return "forward compatibility was attempted on non supported HW";
    case CUDA_ERROR_UNKNOWN:
      return "unknown error";
    default:
      return nullptr;
  }
}

}  // namespace

GPUMEM_SIM_EXPORT CUresult cuInit(unsigned flags) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (const auto& code = sim::faults().cuda_init) return *code;
  if (const CUresult rc = cuda::initialize()) return rc;
  cuda::run_injection_once();
  return CUDA_SUCCESS;
}

GPUMEM_SIM_EXPORT CUresult cuDriverGetVersion(int* version) {
  if (version == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const sim::SharedState* state = sim::SharedState::get();
  *version = state != nullptr ? state->file().cuda_driver_version : 13000;
  return CUDA_SUCCESS;
}

GPUMEM_SIM_EXPORT CUresult cuGetErrorString(CUresult error, const char** text) {
  if (text == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *text = error_string(error);
  return *text != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

GPUMEM_SIM_EXPORT CUresult cuGetErrorName(CUresult error, const char** text) {
  if (text == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *text = cuda_result_name(error);
  return *text != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

GPUMEM_SIM_EXPORT CUresult cuDeviceGetCount(int* count) {
  if (!cuda::initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *count = cuda::device_count();
  return CUDA_SUCCESS;
}

GPUMEM_SIM_EXPORT CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  if (!cuda::initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (ordinal < 0 || ordinal >= cuda::device_count()) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

GPUMEM_SIM_EXPORT CUresult cuDeviceGetName(char* name, int length, CUdevice device) {
  if (const CUresult rc = cuda::check_device(device)) return rc;
  return copy_text(record(device).name, name, length);
}

GPUMEM_SIM_EXPORT CUresult cuDeviceGetUuid_v2(CUuuid* uuid, CUdevice device) {
  if (const auto& code = sim::faults().cuda_uuid) return *code;
  if (const CUresult rc = cuda::check_device(device)) return rc;
  if (uuid == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const auto bytes = sim::parse_uuid_bytes(record(device).uuid);
  std::memcpy(uuid->bytes, bytes->data(), 16);
  return CUDA_SUCCESS;
}
GPUMEM_SIM_EXPORT CUresult cuDeviceGetUuid(CUuuid* uuid, CUdevice device) {
  return cuDeviceGetUuid_v2(uuid, device);
}

GPUMEM_SIM_EXPORT CUresult cuDeviceGetPCIBusId(char* bus_id, int length, CUdevice device) {
  if (const CUresult rc = cuda::check_device(device)) return rc;
  return copy_text(sim::cuda_bus_id(record(device).pci).c_str(), bus_id, length);
}

GPUMEM_SIM_EXPORT CUresult cuDeviceTotalMem_v2(std::size_t* bytes, CUdevice device) {
  if (const CUresult rc = cuda::check_device(device)) return rc;
  if (bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *bytes = record(device).total_bytes;
  return CUDA_SUCCESS;
}
