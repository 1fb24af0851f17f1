// A CPU kernel in the shape PyTorch Inductor generates for
// torch.softmax(x, dim=-1) on a float32 [rows, cols] tensor: one fused loop
// nest (max, exp-sum, normalize) per row, rows spread over OpenMP threads.
#include <algorithm>
#include <cmath>
#include <cstdint>

extern "C" void kernel(const float* in_ptr0, float* out_ptr0, int64_t ks0, int64_t ks1) {
#pragma omp parallel for
  for (int64_t x0 = 0; x0 < ks0; ++x0) {
    float tmp_max = -INFINITY;
    for (int64_t r1 = 0; r1 < ks1; ++r1) tmp_max = std::max(tmp_max, in_ptr0[r1 + ks1 * x0]);
    float tmp_sum = 0.0f;
    for (int64_t r1 = 0; r1 < ks1; ++r1) {
      float tmp0 = std::exp(in_ptr0[r1 + ks1 * x0] - tmp_max);
      out_ptr0[r1 + ks1 * x0] = tmp0;
      tmp_sum += tmp0;
    }
    for (int64_t r1 = 0; r1 < ks1; ++r1) out_ptr0[r1 + ks1 * x0] /= tmp_sum;
  }
}
