// Stand-in for the GPU backend when kvcg is built without CUDA
// (-DKVCG_WITH_CUDA=OFF): Backend::kAuto then always picks the CPU backend.
#include "store/backends.h"

namespace kvcg::store {

bool GpuAvailable(const Config&, std::string* why) {
  if (why) *why = "kvcg was built without CUDA support";
  return false;
}

Status OpenGpuStore(const Config&, std::unique_ptr<Store>*) {
  return Status::Unavailable("kvcg was built without CUDA support (KVCG_WITH_CUDA=OFF)");
}

}  // namespace kvcg::store

// The columnar bulk API (kvcg/gpu_bulk.h) without CUDA: nothing to run on.
#include "kvcg/gpu_bulk.h"

namespace kvcg::gpu {

Status ExecuteFixed8(Store*, const Fixed8Ops&) {
  return Status::Unavailable("kvcg was built without CUDA support (KVCG_WITH_CUDA=OFF)");
}
void* AllocPinned(size_t) { return nullptr; }
void FreePinned(void*) {}

}  // namespace kvcg::gpu
