// The CUDA-only baselines of loom_decode_bench (issue 6, item 5), behind a plain C++ interface so
// that decode_bench.cpp needs no CUDA header: cuDNN's RNN forward stepped one token per call and
// run over the whole sequence in one call, and the device-to-device copy bandwidth that the
// weight-read bound divides by. Compiled only when the CUDA backend is (LOOM_HAVE_CUDA).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace loom::bench::decode {

// One unidirectional LSTM or GRU stack, laid out as Loom's decoders are (input_size wide inputs,
// `layers` layers of `hidden_size`), over `steps` tokens of `batch` rows, in f16 or f32.
struct RnnShape {
  bool gru = false;
  int layers = 1;
  int input_size = 0;
  int hidden_size = 0;
  int batch = 1;
  int steps = 1;
  bool f16 = false;
};

// cuDNN's RNN (v8+ API, CUDNN_RNN_ALGO_STANDARD, inference mode) on device `device`, its weight
// space filled once with seeded values of the magnitude PyTorch initialises with (1/sqrt(hidden)),
// so that no activation saturates. Both calls block until the device has finished.
class CudnnRnn {
 public:
  CudnnRnn(int device, const RnnShape& shape, std::uint64_t seed);
  ~CudnnRnn();
  CudnnRnn(const CudnnRnn&) = delete;
  CudnnRnn& operator=(const CudnnRnn&) = delete;

  // One sample as a framework steps a decoder: `steps` cudnnRNNForward calls with seqLength 1,
  // each reading the previous call's hy/cy, queued back to back, then one synchronisation.
  void run_stepwise();
  // One sample teacher-forced: a single cudnnRNNForward over all `steps` tokens. cuDNN may batch
  // the input projection of every token, so this bounds what the recurrence alone can reach.
  void run_sequence();

  std::size_t weight_space_bytes() const noexcept;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// Device-to-device copy bandwidth on `device` in bytes per second, counting the bytes read and the
// bytes written: the median over `repeats` cudaMemcpyAsync copies of `bytes` (timed with events,
// after one warm-up copy). `bytes` should dwarf the L2 cache so that the copy streams from HBM.
double measure_copy_bandwidth(int device, std::size_t bytes, int repeats);

}  // namespace loom::bench::decode
