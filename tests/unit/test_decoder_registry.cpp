// Each backend's decoder loops register under the backend's name (backend/decoder.hpp); the
// DecodeEngine finds them by that name, and a backend without decoders is a typed error naming it.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "backend/decoder.hpp"
#include "backend/kernel_registry.hpp"
#include "loom/error.hpp"
#include "test_support.hpp"

namespace {

using namespace loom;
using test_support::expect_error;

bool has(const std::vector<std::string>& names, const std::string& name) {
  return std::ranges::find(names, name) != names.end();
}

TEST(DecoderRegistry, EveryBackendOfTheBuildHasDecoders) {
  const std::vector<std::string> names = backend::decoder_backends();
  EXPECT_TRUE(std::ranges::is_sorted(names));
  ASSERT_TRUE(has(names, "cpu"));
  EXPECT_NE(backend::decoder_factory("cpu"), nullptr);
  // The CUDA decoders are built exactly when the CUDA backend is (no device needed to ask).
  const bool cuda_built = backend::cuda_kernel_coverage().has_value();
  EXPECT_EQ(has(names, "cuda"), cuda_built);
  if (cuda_built) EXPECT_NE(backend::decoder_factory("cuda"), nullptr);
}

TEST(DecoderRegistry, ABackendWithoutDecodersIsUnsupportedByName) {
  expect_error([] { (void)backend::decoder_factory("tpu"); }, ErrorCode::unsupported, {"tpu", "cpu"});
}

TEST(DecoderRegistry, ASecondRegistrationIsRefusedAtLookup) {
  const backend::DecoderFactory cpu = backend::decoder_factory("cpu");
  EXPECT_TRUE(backend::register_decoder_factory("registered-twice", cpu));
  EXPECT_EQ(backend::decoder_factory("registered-twice"), cpu);
  EXPECT_TRUE(backend::register_decoder_factory("registered-twice", cpu));
  expect_error([] { (void)backend::decoder_factory("registered-twice"); }, ErrorCode::internal,
               {"registered-twice", "twice"});
  EXPECT_TRUE(backend::register_decoder_factory("registered-null", nullptr));
  expect_error([] { (void)backend::decoder_factory("registered-null"); }, ErrorCode::internal, {"registered-null"});
  EXPECT_EQ(backend::decoder_factory("cpu"), cpu);  // the others are untouched
}

}  // namespace
