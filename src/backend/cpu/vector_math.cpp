// The vectorisable float functions (vector_math.hpp). Built with -ffp-contract=off (src/
// CMakeLists.txt): a multiply-add fused in one clone or loop and not in another would round
// differently. Polynomial coefficients: exp's are Taylor's (1/k!); erf's were fitted in double
// (least squares on Chebyshev nodes) to erf(x)/x in x^2 on [0, 1] and to erfc(x)·exp(x^2) in
// 1/(1 + x/2) on [1, 4], then rounded to float (relative error 6e-8 and 1.3e-8 before rounding of
// the evaluation).
#include "backend/cpu/vector_math.hpp"

#include <bit>
#include <cmath>
#include <cstdint>

#include "backend/cpu/target_clones.hpp"

namespace loom::backend::cpu {
namespace {

// exp(z) for z <= 0: z = n ln2 + r with |r| <= ln2 / 2 (ln2 in two parts so n·ln2_hi is exact),
// e^r by its Taylor polynomial to degree 7, times 2^n built in the exponent bits. Below the
// smallest normal result it returns 0 (no subnormals); NaN comes back as NaN.
inline float exp_nonpositive(float z) {
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693359375f;  // 9 significant bits: n * kLn2Hi is exact for |n| < 2^15
  constexpr float kLn2Lo = -2.12194440e-4f;
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  constexpr float kLowest = -87.3f;      // exp(-87.3) is just above the smallest normal float
  const float clamped = z < kLowest ? kLowest : z;
  const float n = (clamped * kLog2e + kRound) - kRound;
  const float r = (clamped - n * kLn2Hi) - n * kLn2Lo;
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const float scale = std::bit_cast<float>((static_cast<std::int32_t>(n) + 127) << 23);
  const float result = p * scale;
  return z < kLowest ? 0.0f : result;
}

inline float sigmoid_element(float x) {
  // exp(-|x|) never overflows: 1 / (1 + e) on the positive side, e / (1 + e) on the negative.
  const float e = exp_nonpositive(-std::fabs(x));
  const float y = (x >= 0.0f ? 1.0f : e) / (1.0f + e);
  return x != x ? x : y;
}

inline float erf_element(float x) {
  const float a = std::fabs(x);
  // |x| < 1: erf(x) / x is a polynomial in x^2.
  const float u = a * a;
  float small = 7.882497e-05f;
  small = small * u - 0.0008018855f;
  small = small * u + 0.005189312f;
  small = small * u - 0.026854329f;
  small = small * u + 0.11283597f;
  small = small * u - 0.37612626f;
  small = small * u + 1.1283791f;
  small = small * a;
  // 1 <= |x| < 4: erfc(x) = exp(-x^2) · Q(1 / (1 + x / 2)).
  const float t = 1.0f / (1.0f + 0.5f * a);
  float q = 0.014153f;
  q = q * t + 0.06365011f;
  q = q * t - 0.3761733f;
  q = q * t + 0.4714791f;
  q = q * t - 0.048708692f;
  q = q * t + 0.32697827f;
  q = q * t + 0.26457968f;
  q = q * t + 0.28426164f;
  q = q * t - 0.000116623785f;
  const float large = 1.0f - exp_nonpositive(-u) * q;
  const float magnitude = a < 1.0f ? small : (a < 4.0f ? large : 1.0f);
  const float y = std::copysign(magnitude, x);
  return x != x ? x : y;
}

}  // namespace

LOOM_CPU_CLONES_WITH_AVX512
void sigmoid_array(const float* x, float* y, std::int64_t count) {
  for (std::int64_t i = 0; i < count; ++i) y[i] = sigmoid_element(x[i]);
}

LOOM_CPU_CLONES_WITH_AVX512
void erf_array(const float* x, float* y, std::int64_t count) {
  for (std::int64_t i = 0; i < count; ++i) y[i] = erf_element(x[i]);
}

}  // namespace loom::backend::cpu
