// Stub libtorch_npu.so for tests.
extern "C" int kbuild_fake_torch_npu() {
  return 1;
}
