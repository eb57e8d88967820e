// RNN: one gate, so each step is a plain dot-product loop per hidden unit (the sizes the node tests
// and small models use); steps past a row's length give zeros in Y and keep the row's state, as
// LSTM and GRU do.
#include "backend/cpu/rnn.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "backend/cpu/kernel_support.hpp"
#include "backend/rnn_spec.hpp"

namespace loom::backend::cpu {
namespace {

enum RnnInput : std::size_t { kX, kW, kR, kB, kSequenceLens, kInitialH };
enum RnnOutput : std::size_t { kY, kYh };

class RnnKernel final : public OpKernel {
 public:
  explicit RnnKernel(const KernelSpec& spec)
      : OpKernel(spec), rnn_(parse_rnn_spec(spec, 1, 6, 1, {{{RnnActivationKind::tanh}}})) {
    require_f32_except(spec, kSequenceLens);
  }

 protected:
  void run_impl(std::span<const void* const> inputs, std::span<void* const> outputs, void*, Stream&) override {
    const std::int64_t hidden = rnn_.hidden, batch = rnn_.batch, input = rnn_.input_size;
    std::vector<std::int64_t> lengths(static_cast<std::size_t>(batch));
    rnn_.read_lengths(rnn_.has_sequence_lens ? inputs[kSequenceLens] : nullptr, "RNN", node_name(), lengths.data());
    const auto* x = static_cast<const float*>(inputs[kX]);
    auto* y = outputs.size() > kY ? static_cast<float*>(outputs[kY]) : nullptr;
    auto* y_h = outputs.size() > kYh ? static_cast<float*>(outputs[kYh]) : nullptr;
    if (y) std::fill(y, y + rnn_.y_shape().numel(), 0.0f);
    const auto* initial_h = rnn_.has_initial_h ? static_cast<const float*>(inputs[kInitialH]) : nullptr;
    std::vector<float> h(static_cast<std::size_t>(hidden)), next(static_cast<std::size_t>(hidden));
    for (std::int64_t d = 0; d < rnn_.directions; ++d) {
      const bool reverse = rnn_.reverse_only || d == 1;
      const float* w = static_cast<const float*>(inputs[kW]) + d * hidden * input;
      const float* r = static_cast<const float*>(inputs[kR]) + d * hidden * hidden;
      const float* bias = rnn_.has_bias ? static_cast<const float*>(inputs[kB]) + d * 2 * hidden : nullptr;
      const RnnActivation& f = rnn_.activations[static_cast<std::size_t>(d)][0];
      for (std::int64_t b = 0; b < batch; ++b) {
        if (initial_h)
          std::copy_n(initial_h + rnn_.state_offset(d, b), hidden, h.begin());
        else
          std::fill(h.begin(), h.end(), 0.0f);
        for (std::int64_t step = 0; step < lengths[static_cast<std::size_t>(b)]; ++step) {
          const std::int64_t t = reverse ? lengths[static_cast<std::size_t>(b)] - 1 - step : step;
          const float* x_row = x + rnn_.x_row(t, b) * input;
          for (std::int64_t j = 0; j < hidden; ++j) {
            float sum = bias ? bias[j] + bias[hidden + j] : 0.0f;
            for (std::int64_t k = 0; k < input; ++k) sum += x_row[k] * w[j * input + k];
            for (std::int64_t k = 0; k < hidden; ++k) sum += h[static_cast<std::size_t>(k)] * r[j * hidden + k];
            next[static_cast<std::size_t>(j)] = apply_rnn_activation(f, clip_gate(sum, rnn_.clip));
          }
          h.swap(next);
          if (y) std::copy(h.begin(), h.end(), y + rnn_.y_offset(t, d, b));
        }
        if (y_h) std::copy(h.begin(), h.end(), y_h + rnn_.state_offset(d, b));
      }
    }
  }

 private:
  RnnSpec rnn_;  // attributes and shapes, checked once
};

}  // namespace

std::unique_ptr<OpKernel> make_rnn_kernel(const KernelSpec& spec) { return std::make_unique<RnnKernel>(spec); }

}  // namespace loom::backend::cpu
