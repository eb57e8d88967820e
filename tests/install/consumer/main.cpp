// Uses an installed Loom through find_package(loom CONFIG): builds y = Relu(x * W + b) in code,
// runs it through an Executor and checks the result against the same sum computed here.
// Exits non-zero on any mismatch or error.
#include <cmath>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include <loom/loom.hpp>

namespace {

constexpr int kRows = 2, kIn = 3, kOut = 4;
// Multiples of 1/4 with few significant bits: every product and sum is exact in f32 and in TF32,
// so any backend must match closely.
const std::vector<float> kX = {1.0f,  -2.0f, 0.5f,  //
                               0.25f, 1.5f,  -1.0f};
const std::vector<float> kW = {0.5f,  -1.0f, 2.0f,  0.25f,  //
                               1.0f,  0.75f, -0.5f, -1.0f,  //
                               -2.0f, 0.5f,  1.0f,  1.5f};
const std::vector<float> kB = {0.25f, -0.5f, 1.0f, 0.0f};

std::vector<float> expected() {
  std::vector<float> y(kRows * kOut);
  for (int r = 0; r < kRows; ++r)
    for (int c = 0; c < kOut; ++c) {
      float sum = kB[c];
      for (int k = 0; k < kIn; ++k) sum += kX[r * kIn + k] * kW[k * kOut + c];
      y[r * kOut + c] = sum > 0 ? sum : 0;
    }
  return y;
}

}  // namespace

int main() {
  try {
    loom::ModelBuilder builder("tiny_linear_relu");
    const auto x = builder.input("x", loom::DType::f32, {kRows, kIn});
    const auto w = builder.constant("w", loom::Tensor::from<float>({kIn, kOut}, kW));
    const auto b = builder.constant("b", loom::Tensor::from<float>({kOut}, kB));
    builder.output(builder.relu(builder.op("Gemm", {x, w, b})));
    const loom::Model model = builder.build();

    loom::Executor executor;  // device "auto": the GPU when there is one, else the CPU
    executor.load(model);
    std::vector<loom::Tensor> inputs;
    inputs.push_back(loom::Tensor::from<float>({kRows, kIn}, kX));
    const loom::Outputs outputs = executor.submit(model.name, std::move(inputs)).get();

    if (outputs.size() != 1 || outputs[0].dtype() != loom::DType::f32 ||
        outputs[0].shape() != loom::Shape{kRows, kOut}) {
      std::fprintf(stderr, "consumer: expected one f32 output of shape 2x4\n");
      return 1;
    }
    const auto got = outputs[0].values<float>();
    const auto want = expected();
    int mismatches = 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
      if (std::fabs(got[i] - want[i]) > 1e-4f + 1e-3f * std::fabs(want[i])) {
        std::fprintf(stderr, "consumer: y[%zu] = %g, expected %g\n", i, got[i], want[i]);
        ++mismatches;
      }
    }

    // The library's error type must cross the shared-library boundary intact.
    bool typed_error = false;
    try {
      executor.submit("no_such_model", {});
    } catch (const loom::Error& e) {
      typed_error = e.code() == loom::ErrorCode::unknown_model;
    }
    if (!typed_error) {
      std::fprintf(stderr, "consumer: submit() to an unknown model did not throw Error(unknown_model)\n");
      ++mismatches;
    }

    std::printf("consumer: loom %s on %s (%s backend): %s\n", loom::version(), executor.device_name().c_str(),
                executor.backend_name().c_str(), mismatches == 0 ? "outputs match" : "MISMATCH");
    return mismatches == 0 ? 0 : 1;
  } catch (const loom::Error& e) {
    std::fprintf(stderr, "consumer: loom::Error [%s]: %s\n", std::string(loom::error_code_name(e.code())).c_str(),
                 e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "consumer: %s\n", e.what());
  }
  return 1;
}
