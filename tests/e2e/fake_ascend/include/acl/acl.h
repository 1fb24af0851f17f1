// A stand-in for the Ascend CANN header, written for kbuild's tests: just
// the declarations the example npu kernel uses.
#pragma once
#include <cstdint>

typedef int aclError;
#define ACL_SUCCESS 0

extern "C" aclError aclrtGetDeviceCount(uint32_t* count);
