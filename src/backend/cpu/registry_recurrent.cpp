// CPU kernels of the recurrent family: LSTM, GRU and RNN (see kernel_registry.hpp).
#include "backend/cpu/gru.hpp"
#include "backend/cpu/kernel_registry.hpp"
#include "backend/cpu/lstm.hpp"
#include "backend/cpu/rnn.hpp"

namespace loom::backend::cpu {

void register_recurrent_kernels(CpuKernelRegistry& registry) {
  registry.add("LSTM", make_lstm_kernel);
  registry.add("GRU", make_gru_kernel);
  registry.add("RNN", make_rnn_kernel);
}

}  // namespace loom::backend::cpu
