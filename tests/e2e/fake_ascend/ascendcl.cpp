// Stub libascendcl.so for tests: reports a device count that only this stub
// knows, so a kernel calling it proves the symbol really resolved here.
#include "acl/acl.h"

extern "C" int kbuild_fake_runtime_ready();

extern "C" aclError aclrtGetDeviceCount(uint32_t* count) {
  *count = 7u + static_cast<uint32_t>(kbuild_fake_runtime_ready());
  return ACL_SUCCESS;
}
