// A kernel for the npu device: compiled with the Ascend SDK's headers and
// linked against libascendcl (what `kbuild --device npu` sets up).
#include <cstdint>

#include "acl/acl.h"

extern "C" int kernel_device_count() {
  uint32_t count = 0;
  if (aclrtGetDeviceCount(&count) != ACL_SUCCESS) return -1;
  return static_cast<int>(count);
}

extern "C" void kernel_add(const float* a, const float* b, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}
