// loom::serve::Batcher alone, with a Submit that records what it is given instead of an Executor:
// the joined request's options and rows, and each member's answer.
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include <gtest/gtest.h>

#include "loom/error.hpp"
#include "serve/batcher.hpp"

namespace loom::serve {
namespace {

using Clock = std::chrono::steady_clock;

struct Submitted {
  std::vector<Tensor> inputs;
  RequestOptions options;
  Callback done;
};

// A batcher whose Submit keeps each joined request for the test to look at and answer.
struct RecordingBatcher {
  explicit RecordingBatcher(std::int64_t max_rows)
      : batcher(Batcher::Options{"m", max_rows, std::chrono::hours(1)},
                [this](std::vector<Tensor> inputs, RequestOptions options, Callback done) {
                  std::lock_guard lock(mutex);
                  submitted.push_back(Submitted{std::move(inputs), options, std::move(done)});
                }) {}
  std::mutex mutex;
  std::vector<Submitted> submitted;
  Batcher batcher;  // last: its thread stops before the record goes
};

// One row [1, 2] of float `value`, its answer as a future.
std::future<std::exception_ptr> push_row(Batcher& batcher, float value, Clock::time_point deadline) {
  auto promise = std::make_shared<std::promise<std::exception_ptr>>();
  auto answer = promise->get_future();
  Batcher::Item item{{Tensor::from<float>(Shape{1, 2}, {value, value})},
                     1,
                     Priority::normal,
                     deadline,
                     [promise](std::exception_ptr error, Outputs) { promise->set_value(error); }};
  EXPECT_TRUE(batcher.push(item));
  return answer;
}

TEST(ServeBatcher, AJoinedRequestCarriesItsMembersLatestDeadlineOrNone) {
  const auto soon = Clock::now() + std::chrono::hours(2);
  const auto later = Clock::now() + std::chrono::hours(3);
  {
    // A member without a deadline: the batch has none, so another member's short timeout cannot
    // fail it in the executor.
    RecordingBatcher b(2);
    auto first = push_row(b.batcher, 1.0f, soon);
    auto second = push_row(b.batcher, 2.0f, Clock::time_point{});
    b.batcher.close();
    ASSERT_EQ(b.submitted.size(), 1u);
    EXPECT_EQ(b.submitted[0].inputs.at(0).shape(), (Shape{2, 2}));
    EXPECT_EQ(b.submitted[0].options.deadline, Clock::time_point{});
    // An executor that drops the batch at its deadline fails each member.
    b.submitted[0].done(std::make_exception_ptr(Error(ErrorCode::deadline_exceeded, "late")), {});
    EXPECT_TRUE(first.get());
    EXPECT_TRUE(second.get());
  }
  {
    // Both with deadlines: the later one.
    RecordingBatcher b(2);
    auto first = push_row(b.batcher, 1.0f, soon);
    auto second = push_row(b.batcher, 2.0f, later);
    b.batcher.close();
    ASSERT_EQ(b.submitted.size(), 1u);
    EXPECT_EQ(b.submitted[0].options.deadline, later);
    b.submitted[0].done(nullptr, {Tensor::from<float>(Shape{2, 1}, {1.0f, 2.0f})});
    EXPECT_FALSE(first.get());
    EXPECT_FALSE(second.get());
  }
}

TEST(ServeBatcher, ARequestOfMoreRowsThanTheBatchGoesAloneInsteadOfSpinning) {
  // The Service refuses such a request before the batcher; the batcher alone must still not spin
  // on it (it was never taken, so the loop picked it again without end and close() hung).
  RecordingBatcher b(2);
  auto promise = std::make_shared<std::promise<std::exception_ptr>>();
  auto answer = promise->get_future();
  Batcher::Item big{{Tensor::from<float>(Shape{3, 1}, {1, 2, 3})},
                    3,
                    Priority::normal,
                    Clock::time_point{},
                    [promise](std::exception_ptr error, Outputs) { promise->set_value(error); }};
  ASSERT_TRUE(b.batcher.push(big));
  auto small = push_row(b.batcher, 4.0f, Clock::time_point{});
  b.batcher.close();
  ASSERT_EQ(b.submitted.size(), 2u);
  EXPECT_EQ(b.submitted[0].inputs.at(0).shape(), (Shape{3, 1}));
  EXPECT_EQ(b.submitted[1].inputs.at(0).shape(), (Shape{1, 2}));
  b.submitted[0].done(std::make_exception_ptr(Error(ErrorCode::shape_mismatch, "3 rows")), {});
  b.submitted[1].done(nullptr, {Tensor::from<float>(Shape{1, 1}, {4.0f})});
  EXPECT_TRUE(answer.get());
  EXPECT_FALSE(small.get());
}

}  // namespace
}  // namespace loom::serve
