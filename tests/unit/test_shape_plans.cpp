// Shapes that stay symbolic until a request arrives (LoadOptions::dim_ranges): one Executor serves
// requests of several sizes of a symbolic dim, each equal to a separately loaded fixed-shape model;
// range errors at load and at submit; per-shape plans sharing the opt plan's weights.
#include <gtest/gtest.h>

#include <future>
#include <mutex>
#include <set>
#include <thread>
#include <string>
#include <vector>

#include "loom/executor.hpp"
#include "runtime/executor_test_hooks.hpp"
#include "runtime/loaded_model.hpp"
#include "runtime/memory_pool.hpp"
#include "backend/open_backend.hpp"
#include "test_support.hpp"

namespace loom {
namespace {

constexpr std::int64_t kFeatures = 8;

// x [1, seq, 8], mask [1, seq]:
//   h    = MatMul(x, W)                                          [1, seq, 8]
//   out0 = Reshape(Transpose(Reshape(h, [1, S, 2, 4]), 0213), [1, 8S])   S from Shape(x) → Gather
//   out1 = Softmax(mask + 0.1 * Cast(Range(0, S, 1)))            S from Shape(mask) → Gather (scalar)
// Both shape chains are scalar work that optimize() folds once the sizes are known. Assembled by
// hand: ModelBuilder::build() checks shapes with infer_shapes(), which needs the folded form.
Model symbolic_model() {
  Model model;
  model.name = "symbolic";
  model.inputs = {ValueInfo{"x", DType::f32, Shape{1, -1, kFeatures}, {"", "seq", ""}},
                  ValueInfo{"mask", DType::f32, Shape{1, -1}, {"", "seq"}}};
  std::vector<float> w(kFeatures * kFeatures);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = 0.05f * static_cast<float>(static_cast<int>(i % 13) - 6);
  model.initializers["W"] = Tensor::from<float>(Shape{kFeatures, kFeatures}, w);
  model.initializers["one"] = Tensor::from<std::int64_t>(Shape{1}, {1});
  model.initializers["axis1"] = Tensor::from<std::int64_t>(Shape{1}, {1});
  model.initializers["split"] = Tensor::from<std::int64_t>(Shape{2}, {2, 4});
  model.initializers["eight"] = Tensor::from<std::int64_t>(Shape{1}, {8});
  model.initializers["scalar1"] = Tensor::from<std::int64_t>(Shape{}, {1});
  model.initializers["zero_s"] = Tensor::from<std::int64_t>(Shape{}, {0});
  model.initializers["one_s"] = Tensor::from<std::int64_t>(Shape{}, {1});
  model.initializers["tenth"] = Tensor::from<float>(Shape{1}, {0.1f});
  model.nodes = {
      Node{"MatMul", "proj", {"x", "W"}, {"h"}, {}},
      Node{"Shape", "shape_x", {"x"}, {"dims_x"}, {}},
      Node{"Gather", "seq_x", {"dims_x", "axis1"}, {"s"}, {}},
      Node{"Concat", "split_shape", {"one", "s", "split"}, {"t1"}, {{"axis", std::int64_t{0}}}},
      Node{"Reshape", "split_heads", {"h", "t1"}, {"h4"}, {}},
      Node{"Transpose", "swap", {"h4"}, {"ht"}, {{"perm", std::vector<std::int64_t>{0, 2, 1, 3}}}},
      Node{"Mul", "flat_len", {"s", "eight"}, {"s8"}, {}},
      Node{"Concat", "flat_shape", {"one", "s8"}, {"t2"}, {{"axis", std::int64_t{0}}}},
      Node{"Reshape", "flatten", {"ht", "t2"}, {"out0"}, {}},
      Node{"Shape", "shape_mask", {"mask"}, {"dims_m"}, {}},
      Node{"Gather", "seq_mask", {"dims_m", "scalar1"}, {"sm"}, {}},
      Node{"Range", "positions", {"zero_s", "sm", "one_s"}, {"pos"}, {}},
      Node{"Cast", "pos_float", {"pos"}, {"posf"}, {{"to", std::int64_t{1}}}},
      Node{"Mul", "pos_scaled", {"posf", "tenth"}, {"bias"}, {}},
      Node{"Add", "biased", {"mask", "bias"}, {"logits"}, {}},
      Node{"Softmax", "softmax", {"logits"}, {"out1"}, {{"axis", std::int64_t{-1}}}},
  };
  model.outputs = {"out0", "out1"};
  return model;
}

std::vector<Tensor> inputs_for(std::int64_t seq, std::uint64_t seed) {
  Model fixed = optimize(symbolic_model(), [&] {
    OptimizeOptions o;
    o.dim_values["seq"] = seq;
    return o;
  }());
  return random_inputs(fixed, seed);
}

ExecutorOptions cpu_options() {
  ExecutorOptions options;
  options.device = "cpu";
  options.profile = "none";
  return options;
}

LoadOptions ranged(std::int64_t min, std::int64_t opt, std::int64_t max) {
  LoadOptions load;
  load.dim_ranges["seq"] = DimRange{min, opt, max};
  return load;
}

// The reference: the model loaded with its dim bound to `seq` at load, in an Executor of its own.
Outputs fixed_shape_outputs(std::int64_t seq, const std::vector<Tensor>& inputs) {
  Executor executor(cpu_options());
  LoadOptions load;
  load.optimize.dim_values["seq"] = seq;
  executor.load(symbolic_model(), load);
  return executor.submit("symbolic", inputs).get();
}

void expect_same(const Outputs& got, const Outputs& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].shape(), want[i].shape()) << what << ", output " << i;
    ASSERT_EQ(got[i].dtype(), want[i].dtype()) << what << ", output " << i;
    const auto a = got[i].values<float>();
    const auto b = want[i].values<float>();
    for (std::int64_t k = 0; k < got[i].shape().numel(); ++k)
      ASSERT_EQ(a[k], b[k]) << what << ", output " << i << " element " << k;  // same kernels, same shapes
  }
}

void expect_error(const std::function<void()>& call, ErrorCode code, const std::vector<std::string>& parts) {
  try {
    call();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    for (const auto& part : parts) EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST(ShapePlans, RequestsOfSeveralSizesInOneExecutorEqualFixedShapeLoads) {
  Executor executor(cpu_options());
  executor.load(symbolic_model(), ranged(1, 4, 12));
  ModelInfo info = executor.model_info("symbolic");
  EXPECT_EQ(info.shape_plans, 2u);  // opt and max, made at load
  ASSERT_EQ(info.dim_ranges.count("seq"), 1u);
  EXPECT_EQ(info.dim_ranges.at("seq").max, 12);
  EXPECT_EQ(info.inputs[0].shape, (Shape{1, 4, kFeatures}));  // the opt plan's

  // All in flight together, the sizes interleaved and repeated: each request runs on its own
  // shape's plan.
  const std::vector<std::int64_t> sizes = {4, 1, 7, 12, 7, 3, 1, 4};
  std::vector<std::vector<Tensor>> inputs;
  std::vector<std::future<Outputs>> futures;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    inputs.push_back(inputs_for(sizes[i], 100 + i));
    futures.push_back(executor.submit("symbolic", inputs.back()));
  }
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const Outputs got = futures[i].get();
    EXPECT_EQ(got[0].shape(), (Shape{1, 8 * sizes[i]}));
    expect_same(got, fixed_shape_outputs(sizes[i], inputs[i]), "seq " + std::to_string(sizes[i]));
  }
  // Plans reused per shape: opt 4 and max 12 from load, then 1, 7 and 3.
  EXPECT_EQ(executor.model_info("symbolic").shape_plans, 5u);
  EXPECT_EQ(executor.stats().requests_completed, sizes.size());
}

// Client threads submitting at once, new and planned shapes mixed: plans made on several threads,
// one at a time, each request on its own shape's plan.
TEST(ShapePlans, ConcurrentClientsOfManyShapes) {
  Executor executor(cpu_options());
  executor.load(symbolic_model(), ranged(1, 6, 10));
  constexpr int kClients = 4;
  std::vector<std::vector<std::int64_t>> sizes(kClients);
  std::vector<std::vector<std::vector<Tensor>>> inputs(kClients);
  std::vector<std::vector<Outputs>> outputs(kClients);
  for (int c = 0; c < kClients; ++c)
    for (int k = 0; k < 5; ++k) {
      sizes[c].push_back(1 + (c * 3 + k * 2) % 10);
      inputs[c].push_back(inputs_for(sizes[c].back(), static_cast<std::uint64_t>(1000 + c * 10 + k)));
    }
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c)
    clients.emplace_back([&, c] {
      std::vector<std::future<Outputs>> futures;
      for (const auto& in : inputs[c]) futures.push_back(executor.submit("symbolic", in));
      for (auto& f : futures) outputs[c].push_back(f.get());
    });
  for (auto& t : clients) t.join();
  std::set<std::int64_t> distinct = {6, 10};  // opt and max, made at load
  for (int c = 0; c < kClients; ++c)
    for (std::size_t k = 0; k < sizes[c].size(); ++k) {
      distinct.insert(sizes[c][k]);
      expect_same(outputs[c][k], fixed_shape_outputs(sizes[c][k], inputs[c][k]),
                  "client " + std::to_string(c) + ", seq " + std::to_string(sizes[c][k]));
    }
  EXPECT_EQ(executor.model_info("symbolic").shape_plans, distinct.size());
}

TEST(ShapePlans, EveryRequestGetsTheMaxPlansArena) {
  Executor executor(cpu_options());
  executor.load(symbolic_model(), ranged(1, 2, 64));
  Executor at_max(cpu_options());
  LoadOptions load;
  load.optimize.dim_values["seq"] = 64;
  at_max.load(symbolic_model(), load);
  Executor at_opt(cpu_options());
  load.optimize.dim_values["seq"] = 2;
  at_opt.load(symbolic_model(), load);
  const ModelInfo info = executor.model_info("symbolic");
  EXPECT_EQ(info.activation_bytes, at_max.model_info("symbolic").activation_bytes);
  EXPECT_GT(info.activation_bytes, at_opt.model_info("symbolic").activation_bytes);
  // The Steps shown are the opt plan's.
  EXPECT_EQ(info.steps.size(), at_opt.model_info("symbolic").steps.size());
  EXPECT_EQ(info.inputs[1].shape, (Shape{1, 2}));
}

TEST(ShapePlans, RunsWithCpuStreamShares) {
  ExecutorOptions options = cpu_options();
  options.cpu_stream_shares = true;
  options.cpu_threads = 2;
  Executor executor(options);
  executor.load(symbolic_model(), ranged(2, 2, 9));
  std::vector<std::future<Outputs>> futures;
  std::vector<std::vector<Tensor>> inputs;
  for (std::int64_t seq : {9, 2, 5, 9, 5}) {
    inputs.push_back(inputs_for(seq, 7 + static_cast<std::uint64_t>(seq)));
    futures.push_back(executor.submit("symbolic", inputs.back()));
  }
  std::size_t i = 0;
  for (std::int64_t seq : {9, 2, 5, 9, 5}) {
    expect_same(futures[i].get(), fixed_shape_outputs(seq, inputs[i]), "seq " + std::to_string(seq));
    ++i;
  }
}

// An urgent request of one size arrives right after the first Step of a normal request of another
// size, on the same model: the normal one pauses at that cancellation point and resumes on its own
// shape's plan; both equal their fixed-shape references.
TEST(ShapePlans, APausedRequestResumesOnItsOwnShapesPlan) {
  ExecutorOptions options = cpu_options();
  options.cancellation_interval_us = 0;  // every boundary is a cancellation point
  options.record_timeline = true;
  const auto long_in = inputs_for(11, 5), urgent_in = inputs_for(3, 6);
  std::mutex mutex;
  bool fired = false;
  std::vector<std::string> order;
  std::promise<Outputs> long_done, urgent_done;
  auto completion = [&](std::promise<Outputs>& done, std::string name) {
    return [&done, &order, &mutex, name](std::exception_ptr error, Outputs outputs) {
      {
        std::lock_guard lock(mutex);
        order.push_back(name);
      }
      if (error)
        done.set_exception(error);
      else
        done.set_value(std::move(outputs));
    };
  };
  Executor* executor = nullptr;
  runtime::ExecutorTestHooks hooks;
  hooks.after_step = [&](const std::string&, std::size_t launched) -> std::uint64_t {
    std::lock_guard lock(mutex);
    if (fired || launched != 1) return 0;
    fired = true;
    RequestOptions urgent;
    urgent.priority = Priority::urgent;
    executor->submit("symbolic", urgent_in, Callback(completion(urgent_done, "urgent")), urgent);
    return 2;  // hold the dispatcher until the urgent request reached it
  };
  auto owned = runtime::ExecutorTestHooks::make_executor(options, std::move(hooks));
  executor = owned.get();
  executor->load(symbolic_model(), ranged(1, 4, 12));
  ASSERT_GE(executor->model_info("symbolic").steps.size(), 2u);
  executor->submit("symbolic", long_in, Callback(completion(long_done, "long")));
  const Outputs long_out = long_done.get_future().get();
  const Outputs urgent_out = urgent_done.get_future().get();
  expect_same(long_out, fixed_shape_outputs(11, long_in), "paused request, seq 11");
  expect_same(urgent_out, fixed_shape_outputs(3, urgent_in), "urgent request, seq 3");
  EXPECT_EQ(order, (std::vector<std::string>{"urgent", "long"}));
  std::vector<std::string> actions;
  for (const auto& e : executor->timeline().events())
    if (e.category == "preempt" && e.args.at("request") == "0") actions.push_back(e.args.at("action"));
  EXPECT_EQ(actions, (std::vector<std::string>{"pause", "resume"}));
  EXPECT_GE(executor->stats().preemptions, 1u);
}

TEST(ShapePlans, SubmitRefusesSizesOutsideTheRangeOrInconsistent) {
  Executor executor(cpu_options());
  executor.load(symbolic_model(), ranged(2, 4, 8));
  expect_error([&] { executor.submit("symbolic", inputs_for(9, 1)); }, ErrorCode::shape_mismatch,
               {"input 0 'x'", "axis 1", "'seq' = 9", "2..8"});
  expect_error([&] { executor.submit("symbolic", inputs_for(1, 1)); }, ErrorCode::shape_mismatch,
               {"'seq' = 1", "outside its range 2..8"});
  auto mixed = inputs_for(5, 1);
  mixed[1] = inputs_for(6, 1)[1];
  expect_error([&] { executor.submit("symbolic", mixed); }, ErrorCode::shape_mismatch,
               {"input 1 'mask'", "axis 1", "'seq' = 6", "input 'x' axis 1 gives it 5"});
  auto fixed_axis = inputs_for(5, 1);
  fixed_axis[0] = Tensor(DType::f32, Shape{2, 5, kFeatures});
  expect_error([&] { executor.submit("symbolic", fixed_axis); }, ErrorCode::shape_mismatch,
               {"input 0 'x' axis 0", "expected 1, got 2"});
  auto wrong_rank = inputs_for(5, 1);
  wrong_rank[1] = Tensor(DType::f32, Shape{5});
  expect_error([&] { executor.submit("symbolic", wrong_rank); }, ErrorCode::shape_mismatch,
               {"input 1 'mask'", "expected rank 2"});
  auto wrong_dtype = inputs_for(5, 1);
  wrong_dtype[1] = Tensor(DType::i64, Shape{1, 5});
  expect_error([&] { executor.submit("symbolic", wrong_dtype); }, ErrorCode::dtype_mismatch, {"'mask'"});
  EXPECT_EQ(executor.stats().requests_submitted, 0u);
}

TEST(ShapePlans, LoadRefusesBadRanges) {
  Executor executor(cpu_options());
  const Model model = symbolic_model();
  expect_error(
      [&] {
        LoadOptions load;
        load.dim_ranges["sequence"] = DimRange{1, 2, 3};
        executor.load(model, load);
      },
      ErrorCode::invalid_argument, {"dim_ranges[\"sequence\"]", "no input", "seq"});
  expect_error([&] { executor.load(model, ranged(4, 3, 8)); }, ErrorCode::invalid_argument,
               {"dim_ranges[\"seq\"] = 4:3:8", "min <= opt <= max"});
  expect_error([&] { executor.load(model, ranged(1, 9, 8)); }, ErrorCode::invalid_argument, {"1:9:8"});
  expect_error([&] { executor.load(model, ranged(0, 1, 8)); }, ErrorCode::invalid_argument, {"0:1:8", "1 <= min"});
  expect_error(
      [&] {
        LoadOptions load = ranged(1, 2, 3);
        load.optimize.dim_values["seq"] = 2;
        executor.load(model, load);
      },
      ErrorCode::invalid_argument, {"dim_ranges[\"seq\"]", "dim_values"});
  expect_error(
      [&] {
        LoadOptions load = ranged(1, 2, 3);
        load.optimize.input_shapes["mask"] = Shape{1, 2};
        executor.load(model, load);
      },
      ErrorCode::invalid_argument, {"dim_ranges[\"seq\"]", "'mask'"});
  expect_error(
      [&] {
        LoadOptions load = ranged(1, 2, 3);
        load.pre_process = [](std::vector<Tensor>&) {};
        executor.load(model, load);
      },
      ErrorCode::unsupported, {"pre_process"});
  expect_error(
      [&] {
        LoadOptions load = ranged(1, 2, 3);
        load.placement.execute = true;
        executor.load(model, load);
      },
      ErrorCode::unsupported, {"placement.execute"});
  EXPECT_TRUE(executor.models().empty());

  ExecutorOptions compare = cpu_options();
  compare.debug = DebugMode::compare;
  Executor debug(compare);
  expect_error([&] { debug.load(model, ranged(1, 2, 3)); }, ErrorCode::unsupported, {"debug = compare"});
}

// A plan made for another shape reads the weights the opt plan uploaded: only the constants folded
// for its own sizes are its own.
TEST(ShapePlans, AnotherShapesPlanSharesTheWeightsAndStream) {
  auto device = backend::open_backend("cpu");
  runtime::MemoryPool pool(*device);
  const plan::DevicePeaks peaks{1e12, 1e11};
  auto bound = [](std::int64_t seq) {
    OptimizeOptions o;
    o.dim_values["seq"] = seq;
    return optimize(symbolic_model(), o);
  };
  runtime::LoadedModel opt(bound(4), "symbolic", 0, DType::f32, *device, pool, peaks);
  runtime::LoadedModel other(bound(6), "symbolic", 0, DType::f32, *device, pool, peaks, 0, 0,
                             runtime::KernelFusion::allowed, &opt);
  const int w_opt = opt.plan().value_ids.at("W");
  const int w_other = other.plan().value_ids.at("W");
  EXPECT_EQ(other.address(w_other, nullptr), opt.address(w_opt, nullptr));
  EXPECT_EQ(&other.stream(), &opt.stream());
  EXPECT_EQ(opt.own_weight_bytes(), opt.info().weight_bytes);
  EXPECT_EQ(opt.own_weight_bytes(), opt.plan().weight_bytes);  // a plan sharing nothing uploads all
  // Every weight but W is a constant folded for the plan's own size (the Reshape targets, the
  // positions): those, and only those, the other plan uploads itself.
  std::uint64_t folded = 0;
  for (const auto& [name, tensor] : other.plan().model.initializers)
    if (name != "W") folded += plan::align_up(tensor.bytes());
  EXPECT_GT(folded, 0u);
  EXPECT_EQ(other.own_weight_bytes(), folded);
  // The opt plan holds the same constants for its size (each under one aligned slot at 4 and 6)
  // and W.
  EXPECT_EQ(opt.own_weight_bytes(), folded + plan::align_up(kFeatures * kFeatures * sizeof(float)));
}

}  // namespace
}  // namespace loom
