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
