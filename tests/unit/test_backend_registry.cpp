// Backends register themselves (backend/open_backend.hpp): device strings open what the registry
// has, "auto" takes the preferred backend with a device present, and callers ask capabilities.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "backend/open_backend.hpp"
#include "loom/error.hpp"

namespace {

using namespace loom;

ErrorCode code_of(const std::string& device) {
  try {
    (void)backend::open_backend(device);
  } catch (const Error& e) {
    return e.code();
  }
  return ErrorCode::internal;  // opened: not what these cases expect
}

TEST(BackendRegistry, TheCpuBackendIsRegisteredAndOpens) {
  const auto entries = backend::registered_backends();
  ASSERT_TRUE(std::any_of(entries.begin(), entries.end(), [](const auto& e) { return e.name == "cpu"; }));
  for (std::size_t i = 1; i < entries.size(); ++i) EXPECT_GE(entries[i - 1].preference, entries[i].preference);
  EXPECT_EQ(backend::open_backend("cpu")->name(), "cpu");
  EXPECT_EQ(backend::open_backend("cpu:0")->name(), "cpu");
}

TEST(BackendRegistry, BadDeviceStringsAreTypedErrors) {
  EXPECT_EQ(code_of("gpu"), ErrorCode::invalid_argument);
  EXPECT_EQ(code_of("cpu:x"), ErrorCode::invalid_argument);
  EXPECT_EQ(code_of("cpu:-1"), ErrorCode::invalid_argument);
  EXPECT_EQ(code_of("cpu:1"), ErrorCode::backend);  // one CPU device
  try {
    (void)backend::open_backend("tpu:0");
    FAIL() << "opened a tpu";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cpu"), std::string::npos) << "names the registered backends: " << e.what();
  }
}

// A stand-in backend with a device count the test controls; it opens a CPU backend.
std::atomic<int> stand_in_devices{0};
std::atomic<int> stand_in_opened{0};
int stand_in_count() noexcept { return stand_in_devices.load(); }
std::unique_ptr<backend::Backend> open_stand_in(int) {
  ++stand_in_opened;
  return backend::make_cpu_backend();
}

TEST(BackendRegistry, AutoTakesThePreferredBackendWithADevice) {
  ASSERT_TRUE(backend::register_backend({"stand-in", 100, stand_in_count, open_stand_in}));
  ASSERT_TRUE(backend::register_backend({"stand-in", 100, stand_in_count, open_stand_in}));  // ignored
  const auto entries = backend::registered_backends();
  EXPECT_EQ(entries.front().name, "stand-in");
  EXPECT_EQ(std::count_if(entries.begin(), entries.end(), [](const auto& e) { return e.name == "stand-in"; }), 1);

  // No device: "auto" passes it over; asking for it by name says so.
  stand_in_devices = 0;
  (void)backend::open_backend("auto");
  EXPECT_EQ(stand_in_opened.load(), 0);
  EXPECT_EQ(code_of("stand-in"), ErrorCode::backend);

  stand_in_devices = 2;
  (void)backend::open_backend("auto");
  (void)backend::open_backend("stand-in:1");
  EXPECT_EQ(stand_in_opened.load(), 2);
  EXPECT_EQ(code_of("stand-in:2"), ErrorCode::backend);
  stand_in_devices = 0;  // later tests' "auto" must not find it
}

TEST(BackendRegistry, CapabilitiesOfTheCpuBackend) {
  const auto cpu = backend::make_cpu_backend();
  const backend::Capabilities c = cpu->capabilities();
  EXPECT_TRUE(c.synchronous_launches);
  EXPECT_FALSE(c.accelerator);
  EXPECT_FALSE(c.f16_compute);
  EXPECT_FALSE(c.graphs);
  EXPECT_FALSE(cpu->supports_graphs());
}

}  // namespace
