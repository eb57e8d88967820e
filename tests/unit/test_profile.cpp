// Device profiles: the JSON format round trip and its errors, file names, model fingerprints and
// where find_profile() looks.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "backend/backend.hpp"
#include "loom/profile.hpp"
#include "loom/workloads.hpp"
#include "plan/compiled_model.hpp"
#include "profile/active_profile.hpp"

using namespace loom;

namespace {

// model_fingerprint(tiny_model(...), f32), pinned (see SixteenHexDigitsAndStable).
constexpr const char* kTinyModelFingerprint = "dac253efd4bb4cb0";

// A fresh directory under the system temp dir, removed with everything in it at scope exit.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() /
            ("loom_profile_" + std::string(info->name()) + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Sets LOOM_PROFILE_DIR (or unsets it for nullptr) for its scope, then restores the old value.
class ProfileDirEnv {
 public:
  explicit ProfileDirEnv(const char* value) {
    if (const char* old = std::getenv("LOOM_PROFILE_DIR")) saved_ = old;
    set(value);
  }
  ~ProfileDirEnv() { set(saved_ ? saved_->c_str() : nullptr); }
  static void set(const char* value) {
    if (value)
      setenv("LOOM_PROFILE_DIR", value, 1);
    else
      unsetenv("LOOM_PROFILE_DIR");
  }

 private:
  std::optional<std::string> saved_;
};

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

DeviceProfile sample_profile() {
  DeviceProfile p;
  p.device_name = "NVIDIA H100 80GB HBM3";
  p.created = "2025-01-02T03:04:05Z";
  p.loom_version = "0.1.0";
  p.command = "loom-profile --models resnet,lstm --batch 1,8 --fp16";
  p.peaks = PeakFigures{51.234567890123e12, 712.5e12, 2.987654321e12, "cuda MatMul 8192^3 f32/f16, 1 GiB copy"};
  ModelProfile resnet{"resnet b1", "0123456789abcdef", DType::f32, {{"conv_0", 12.5, 1.25, 1.75}, {"fc", 0.1, 0, 0}}};
  ModelProfile lstm{"lstm b8", "fedcba9876543210", DType::f16, {{"lstm0", 1234.000001, 1.0000000001, 3.5}}};
  p.models = {resnet, lstm};
  return p;
}

// A profile document as text, with `replace` substituted for the step's "measured_us": 12.5.
std::string profile_text(const std::string& version = "1", const std::string& measured = "12.5") {
  return R"({"format_version": )" + version + R"(, "device_name": "cpu", "created": "", "loom_version": "0.1.0",
 "command": "", "peaks": {"flops_f32": 1e9, "flops_f16": 0, "bandwidth": 1e9, "method": ""},
 "models": [{"model": "m", "fingerprint": "00", "compute_dtype": "f32",
             "steps": [{"name": "a", "measured_us": 1}, {"name": "b", "measured_us": )" +
         measured + R"(}]}]})";
}

// The message of the Error(invalid_argument) `read_profile(path)` throws.
std::string read_error(const std::string& path) {
  try {
    read_profile(path);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "read_profile('" << path << "') did not throw";
  return {};
}

Model tiny_model(std::uint64_t seed, std::int64_t batch = 1, std::int64_t hidden = 8, std::int64_t softmax_axis = -1) {
  ModelBuilder b("tiny", seed);
  auto ids = b.input("ids", DType::i64, Shape{batch, 4});
  b.metadata("input_range:ids", "0,16");
  const auto table = b.random_weight("table", Shape{16, hidden}, 0.5f);
  auto x = b.op("Gather", {table, ids});
  x = b.relu(b.op("MatMul", {x, b.random_weight("w", Shape{hidden, hidden}, 0.5f)}));
  x = b.op("Softmax", {x}, {{"axis", softmax_axis}});
  b.output(x);
  return b.build();
}

}  // namespace

TEST(ProfileJson, RoundTripKeepsEveryField) {
  TempDir dir;
  const DeviceProfile written = sample_profile();
  write_profile(written, dir.file("p.json"));
  const DeviceProfile read = read_profile(dir.file("p.json"));

  EXPECT_EQ(read.format_version, 1);
  EXPECT_EQ(read.device_name, written.device_name);
  EXPECT_EQ(read.created, written.created);
  EXPECT_EQ(read.loom_version, written.loom_version);
  EXPECT_EQ(read.command, written.command);
  EXPECT_EQ(read.peaks.flops_f32, written.peaks.flops_f32);  // exact: doubles round-trip
  EXPECT_EQ(read.peaks.flops_f16, written.peaks.flops_f16);
  EXPECT_EQ(read.peaks.bandwidth, written.peaks.bandwidth);
  EXPECT_EQ(read.peaks.method, written.peaks.method);
  ASSERT_EQ(read.models.size(), written.models.size());
  for (std::size_t m = 0; m < read.models.size(); ++m) {
    const auto& r = read.models[m];
    const auto& w = written.models[m];
    EXPECT_EQ(r.model, w.model);
    EXPECT_EQ(r.fingerprint, w.fingerprint);
    EXPECT_EQ(r.compute_dtype, w.compute_dtype);
    ASSERT_EQ(r.steps.size(), w.steps.size());
    for (std::size_t s = 0; s < r.steps.size(); ++s) {
      EXPECT_EQ(r.steps[s].name, w.steps[s].name);
      EXPECT_EQ(r.steps[s].measured_us, w.steps[s].measured_us);
      EXPECT_EQ(r.steps[s].compute_probe_slowdown, w.steps[s].compute_probe_slowdown);
      EXPECT_EQ(r.steps[s].memory_probe_slowdown, w.steps[s].memory_probe_slowdown);
    }
  }
  ASSERT_NE(read.find("fedcba9876543210"), nullptr);
  EXPECT_EQ(read.find("fedcba9876543210")->model, "lstm b8");
  EXPECT_EQ(read.find("not there"), nullptr);
  EXPECT_FALSE(std::filesystem::exists(dir.file("p.json.tmp")));
}

TEST(ProfileJson, OptionalFieldsDefaultToZero) {
  TempDir dir;
  write_text(dir.file("p.json"), profile_text());
  const DeviceProfile p = read_profile(dir.file("p.json"));
  ASSERT_EQ(p.models.size(), 1u);
  ASSERT_EQ(p.models[0].steps.size(), 2u);
  EXPECT_EQ(p.models[0].steps[1].measured_us, 12.5);
  EXPECT_EQ(p.models[0].steps[1].compute_probe_slowdown, 0);
  EXPECT_EQ(p.models[0].steps[1].memory_probe_slowdown, 0);
}

TEST(ProfileJson, MissingFileNamesThePath) {
  TempDir dir;
  const std::string path = dir.file("absent.json");
  const std::string message = read_error(path);
  EXPECT_NE(message.find(path), std::string::npos) << message;
}

TEST(ProfileJson, BadJsonNamesThePath) {
  TempDir dir;
  const std::string path = dir.file("bad.json");
  write_text(path, "{\"format_version\": 1, ");
  const std::string message = read_error(path);
  EXPECT_NE(message.find(path), std::string::npos) << message;
  EXPECT_NE(message.find("JSON"), std::string::npos) << message;
}

TEST(ProfileJson, WrongFieldTypeNamesPathAndField) {
  TempDir dir;
  const std::string path = dir.file("wrong.json");
  write_text(path, profile_text("1", "\"fast\""));
  const std::string message = read_error(path);
  EXPECT_NE(message.find(path), std::string::npos) << message;
  EXPECT_NE(message.find("models[0].steps[1].measured_us"), std::string::npos) << message;
  EXPECT_NE(message.find("string"), std::string::npos) << message;
}

TEST(ProfileJson, MissingFieldIsNamed) {
  TempDir dir;
  const std::string path = dir.file("missing.json");
  std::string text = profile_text();
  text.replace(text.find("\"bandwidth\": 1e9"), std::string("\"bandwidth\": 1e9").size(), "\"other\": 1");
  write_text(path, text);
  const std::string message = read_error(path);
  EXPECT_NE(message.find("peaks.bandwidth"), std::string::npos) << message;
  EXPECT_NE(message.find("missing"), std::string::npos) << message;
}

TEST(ProfileJson, UnknownFormatVersionIsRejected) {
  TempDir dir;
  const std::string path = dir.file("future.json");
  write_text(path, profile_text("2"));
  const std::string message = read_error(path);
  EXPECT_NE(message.find(path), std::string::npos) << message;
  EXPECT_NE(message.find("format_version"), std::string::npos) << message;
  EXPECT_NE(message.find("2"), std::string::npos) << message;
}

TEST(ProfileJson, UnknownDtypeIsNamed) {
  TempDir dir;
  const std::string path = dir.file("dtype.json");
  std::string text = profile_text();
  text.replace(text.find("\"f32\""), 5, "\"f8\"");
  write_text(path, text);
  const std::string message = read_error(path);
  EXPECT_NE(message.find("models[0].compute_dtype"), std::string::npos) << message;
}

TEST(ProfileJson, WriteToAMissingDirectoryThrows) {
  TempDir dir;
  try {
    write_profile(sample_profile(), dir.file("no/such/dir/p.json"));
    FAIL() << "write_profile did not throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("no/such/dir/p.json"), std::string::npos) << e.what();
  }
}

TEST(ProfileFileName, SlugOfTheDeviceName) {
  EXPECT_EQ(profile_file_name("NVIDIA H100 80GB HBM3"), "nvidia-h100-80gb-hbm3.json");
  EXPECT_EQ(profile_file_name("NVIDIA H200"), "nvidia-h200.json");
  EXPECT_EQ(profile_file_name("NVIDIA GeForce RTX 4090"), "nvidia-geforce-rtx-4090.json");
  EXPECT_EQ(profile_file_name("  Intel(R) Xeon(R) CPU @ 2.20GHz "), "intel-r-xeon-r-cpu-2-20ghz.json");
  EXPECT_EQ(profile_file_name("AMD EPYC 7B13 64-Core Processor"), "amd-epyc-7b13-64-core-processor.json");
  EXPECT_EQ(profile_file_name("cpu"), "cpu.json");
  EXPECT_EQ(profile_file_name(""), "unknown-device.json");
  EXPECT_EQ(profile_file_name("///"), "unknown-device.json");
}

TEST(ProfileFingerprint, SixteenHexDigitsAndStable) {
  const std::string fp = model_fingerprint(tiny_model(1), DType::f32);
  ASSERT_EQ(fp.size(), 16u);
  EXPECT_EQ(fp.find_first_not_of("0123456789abcdef"), std::string::npos) << fp;
  EXPECT_EQ(model_fingerprint(tiny_model(1), DType::f32), fp);
  // Pinned so that a change of the canonical text (which orphans every committed profile) is
  // noticed: update it only together with a note in docs/profile-format.md.
  EXPECT_EQ(fp, kTinyModelFingerprint);
}

TEST(ProfileFingerprint, IgnoresWeightValuesAndNames) {
  EXPECT_EQ(model_fingerprint(tiny_model(1), DType::f32), model_fingerprint(tiny_model(2), DType::f32));
  EXPECT_EQ(model_fingerprint(workloads::lstm_seq(1, workloads::Size::small, 3), DType::f32),
            model_fingerprint(workloads::lstm_seq(1, workloads::Size::small, 99), DType::f32));

  Model renamed = tiny_model(1);
  renamed.name = "other";
  for (auto& node : renamed.nodes) node.name += "_renamed";
  EXPECT_EQ(model_fingerprint(renamed, DType::f32), model_fingerprint(tiny_model(1), DType::f32));
}

TEST(ProfileFingerprint, ChangesWithShapeAttributeDtypeAndBatch) {
  const std::string base = model_fingerprint(tiny_model(1), DType::f32);
  EXPECT_NE(model_fingerprint(tiny_model(1, 2), DType::f32), base);        // batch
  EXPECT_NE(model_fingerprint(tiny_model(1, 1, 16), DType::f32), base);    // weight shapes
  EXPECT_NE(model_fingerprint(tiny_model(1, 1, 8, 1), DType::f32), base);  // Softmax axis
  EXPECT_NE(model_fingerprint(tiny_model(1), DType::f16), base);           // compute dtype
  EXPECT_NE(model_fingerprint(workloads::lstm_seq(1, workloads::Size::small), DType::f32),
            model_fingerprint(workloads::lstm_seq(8, workloads::Size::small), DType::f32));

  // The same graph with f16 weights: the device holds f32 either way, but the model differs.
  Model f16_weights = tiny_model(1);
  for (auto& [name, tensor] : f16_weights.initializers) tensor = tensor.to(DType::f16);
  EXPECT_NE(model_fingerprint(f16_weights, DType::f32), base);
}

TEST(ProfileFind, HonoursLoomProfileDir) {
  TempDir dir;
  const std::string device = "Loom Test Device 7";
  ProfileDirEnv env(dir.path().c_str());
  EXPECT_FALSE(find_profile(device).has_value());
  write_text(dir.file(profile_file_name(device)), profile_text());
  const auto found = find_profile(device);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(std::filesystem::path(*found), dir.path() / "loom-test-device-7.json");
  EXPECT_NO_THROW(read_profile(*found));

  ProfileDirEnv::set(nullptr);
  EXPECT_FALSE(find_profile(device).has_value());
}

TEST(ProfileActive, ResolvesNoneAutoAndAPath) {
  TempDir dir;
  const std::string device = "Loom Test Device 8";
  ProfileDirEnv env(dir.path().c_str());

  EXPECT_EQ(profile::resolve_profile("none", device).path, "none");
  EXPECT_FALSE(profile::resolve_profile("auto", device).profile.has_value());  // nothing to find yet

  const std::string path = dir.file(profile_file_name(device));
  write_text(path, profile_text());
  const auto found = profile::resolve_profile("auto", device);
  EXPECT_EQ(std::filesystem::path(found.path), std::filesystem::path(path));
  ASSERT_TRUE(found.profile.has_value());
  EXPECT_EQ(found.profile->device_name, "cpu");
  EXPECT_FALSE(profile::resolve_profile("none", device).profile.has_value());

  const auto named = profile::resolve_profile(path, "any device");
  EXPECT_EQ(named.path, path);
  EXPECT_TRUE(named.profile.has_value());

  try {
    profile::resolve_profile(dir.file("absent.json"), device);
    FAIL() << "a missing profile file was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("absent.json"), std::string::npos) << e.what();
  }
}

TEST(ProfileActive, AppliesTheEntryWithTheSameFingerprint) {
  const Model model = tiny_model(1);
  const auto compiled = plan::compile(model, DType::f32, plan::DevicePeaks{});
  std::vector<StepInfo> steps;
  for (const auto& step : compiled.steps) steps.push_back(StepInfo{step.info});
  ASSERT_EQ(steps.size(), 3u);

  profile::ActiveProfile active;
  active.path = "p.json";
  active.profile = DeviceProfile{};
  active.profile->models.push_back(ModelProfile{"tiny",
                                                model_fingerprint(model, DType::f32),
                                                DType::f32,
                                                {{"a", 10, 1.5, 2.5}, {"b", 20, 0, 0}, {"c", 30, 1.1, 1.2}}});
  EXPECT_EQ(profile::apply_profile(active, model_fingerprint(model, DType::f32), DType::f32, steps), "profile p.json");
  EXPECT_EQ(steps[0].measured_us, 10);
  EXPECT_EQ(steps[0].compute_probe_slowdown, 1.5);
  EXPECT_EQ(steps[0].memory_probe_slowdown, 2.5);
  EXPECT_EQ(steps[2].measured_us, 30);

  // Another fingerprint, dtype or Step count: the estimates stand.
  std::vector<StepInfo> untouched(3);
  EXPECT_EQ(profile::apply_profile(active, "0000000000000000", DType::f32, untouched), "roofline");
  EXPECT_EQ(profile::apply_profile(active, model_fingerprint(model, DType::f32), DType::f16, untouched), "roofline");
  std::vector<StepInfo> two(2);
  EXPECT_EQ(profile::apply_profile(active, model_fingerprint(model, DType::f32), DType::f32, two), "roofline");
  for (const auto& step : untouched) EXPECT_EQ(step.measured_us, 0);
  EXPECT_EQ(profile::apply_profile(profile::ActiveProfile{}, "x", DType::f32, untouched), "roofline");
}

TEST(ProfileActive, RooflineUsesTheProfilesPeaks) {
  const auto cpu = backend::make_cpu_backend();
  profile::ActiveProfile active;
  EXPECT_EQ(profile::roofline_peaks(active, *cpu, DType::f32).flops, cpu->peak_flops(DType::f32));
  active.profile = DeviceProfile{};
  active.profile->peaks = PeakFigures{2e9, 0, 3e9, ""};
  EXPECT_EQ(profile::roofline_peaks(active, *cpu, DType::f32).flops, 2e9);
  EXPECT_EQ(profile::roofline_peaks(active, *cpu, DType::f32).bandwidth, 3e9);
  EXPECT_EQ(profile::roofline_peaks(active, *cpu, DType::f16).flops, cpu->peak_flops(DType::f16));  // not measured
}
