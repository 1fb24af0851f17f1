// Loads a kernel library built by kbuild (dlopen, RTLD_NOW), runs its
// `kernel` symbol on a small softmax input and prints input and output.
#include <dlfcn.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

using KernelFn = void (*)(const float*, float*, int64_t, int64_t);

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s KERNEL.so\n", argv[0]);
    return 2;
  }
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    std::fprintf(stderr, "dlopen failed: %s\n", dlerror());
    return 1;
  }
  auto kernel = reinterpret_cast<KernelFn>(dlsym(lib, "kernel"));
  if (!kernel) {
    std::fprintf(stderr, "no symbol 'kernel': %s\n", dlerror());
    return 1;
  }
  const int64_t rows = 2, cols = 4;
  std::vector<float> in{1, 2, 3, 4, -1, 0, 1, 1000}, out(rows * cols);
  kernel(in.data(), out.data(), rows, cols);
  bool ok = true;
  for (int64_t r = 0; r < rows; ++r) {
    std::printf("softmax([");
    float sum = 0;
    for (int64_t c = 0; c < cols; ++c) std::printf("%s%g", c ? ", " : "", in[r * cols + c]);
    std::printf("]) = [");
    for (int64_t c = 0; c < cols; ++c) {
      std::printf("%s%.6f", c ? ", " : "", out[r * cols + c]);
      sum += out[r * cols + c];
    }
    std::printf("]\n");
    ok = ok && std::fabs(sum - 1.0f) < 1e-5f;
  }
  std::printf("%s\n", ok ? "each row sums to 1: ok" : "rows do not sum to 1: WRONG");
  dlclose(lib);
  return ok ? 0 : 1;
}
