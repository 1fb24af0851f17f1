// Stub libruntime.so for tests.
extern "C" int kbuild_fake_runtime_ready() {
  return 1;
}
