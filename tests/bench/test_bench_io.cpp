// loom-bench's --loadInputs and --exportOutput: items parsed, files matched to the models' inputs
// (bare or MODEL/INPUT), read and checked against the input with errors naming input and file,
// and outputs written in trtexec's JSON layout with exact values.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "bench_io.hpp"
#include "bench_report.hpp"
#include "cli_support.hpp"
#include "loom/onnx.hpp"
#include "test_support.hpp"

namespace {

using loom::bench::InputFile;
using loom::bench::ModelInputs;

loom::ValueInfo input(const std::string& name, loom::DType dtype, std::vector<std::int64_t> dims) {
  loom::ValueInfo value;
  value.name = name;
  value.dtype = dtype;
  value.shape = loom::Shape(std::move(dims));
  return value;
}

// resnet(image), bert(ids, mask), lstm(ids): "ids" is ambiguous, "image" and "mask" are not.
const std::vector<ModelInputs> kModels = {
    {"resnet", {input("image", loom::DType::f32, {1, 3, 4, 4})}},
    {"bert", {input("ids", loom::DType::i64, {1, 8}), input("mask", loom::DType::i64, {1, 8})}},
    {"lstm", {input("ids", loom::DType::i64, {1, 8})}},
};

std::string usage_error(const std::vector<InputFile>& files) {
  try {
    loom::bench::assign_input_files(files, kModels, "--loadInputs");
  } catch (const loom::cli::UsageError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no UsageError";
  return "";
}

class BenchInputFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("loom_bench_io_" + std::to_string(::getpid()) + "_" +
                                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& file) const { return (dir_ / file).string(); }
  std::filesystem::path dir_;
};

TEST(BenchLoadInputs, ItemsSplitAtTheFirstColonOrAfterAQuotedName) {
  const auto files = loom::bench::parse_input_files({"image:in/a.npy", "'in:0':b.pb", "bert/ids:c:d.npy"}, "--f");
  ASSERT_EQ(files.size(), 3u);
  EXPECT_EQ(files[0].name, "image");
  EXPECT_EQ(files[0].file, "in/a.npy");
  EXPECT_EQ(files[1].name, "in:0");
  EXPECT_EQ(files[1].file, "b.pb");
  EXPECT_EQ(files[2].name, "bert/ids");
  EXPECT_EQ(files[2].file, "c:d.npy");
  for (const std::string bad : {"image", ":a.npy", "image:", "'in:0'b.pb", "'in:0", "''':x"})
    EXPECT_THROW(loom::bench::parse_input_files({bad}, "--f"), loom::cli::UsageError) << bad;
}

TEST(BenchLoadInputs, BareNamesMustBelongToOneModelAndModelSlashInputPicksOne) {
  const auto assigned = loom::bench::assign_input_files(
      {{"image", "a.npy"}, {"mask", "m.npy"}, {"lstm/ids", "l.npy"}, {"bert/ids", "b.npy"}}, kModels, "--loadInputs");
  ASSERT_EQ(assigned.size(), 4u);
  EXPECT_EQ(assigned[0].model, 0u);
  EXPECT_EQ(assigned[0].input, 0u);
  EXPECT_EQ(assigned[1].model, 1u);
  EXPECT_EQ(assigned[1].input, 1u);
  EXPECT_EQ(assigned[2].model, 2u);
  EXPECT_EQ(assigned[2].file, "l.npy");
  EXPECT_EQ(assigned[3].model, 1u);
  EXPECT_EQ(assigned[3].input, 0u);

  const std::string ambiguous = usage_error({{"ids", "x.npy"}});
  EXPECT_NE(ambiguous.find("input 'ids' belongs to several models (bert, lstm)"), std::string::npos) << ambiguous;
  EXPECT_NE(ambiguous.find("MODEL/ids:x.npy"), std::string::npos) << ambiguous;
  const std::string unknown = usage_error({{"idz", "x.npy"}});
  EXPECT_NE(unknown.find("no running model has an input 'idz' (inputs: resnet/image, bert/ids, bert/mask, lstm/ids)"),
            std::string::npos)
      << unknown;
  EXPECT_NE(usage_error({{"resnet/ids", "x.npy"}}).find("'resnet/ids'"), std::string::npos);  // resnet has no ids
  const std::string twice = usage_error({{"image", "a.npy"}, {"resnet/image", "b.npy"}});
  EXPECT_NE(twice.find("input resnet/image is given twice (a.npy and b.npy)"), std::string::npos) << twice;
}

TEST(BenchLoadInputs, AnInputNameHoldingASlashStillMatches) {
  const std::vector<ModelInputs> models = {{"tf", {input("serving/x", loom::DType::f32, {2})}}};
  const auto assigned = loom::bench::assign_input_files({{"serving/x", "a.pb"}}, models, "--loadInputs");
  ASSERT_EQ(assigned.size(), 1u);
  EXPECT_EQ(assigned[0].input, 0u);
}

TEST_F(BenchInputFiles, FilesAreCheckedAgainstTheDeclaredInputAndErrorsNameInputAndFile) {
  loom::write_tensor_pb(path("ok.pb"), loom::Tensor::from<float>({2, 3}, {1, 2, 3, 4, 5, 6}));
  const loom::ValueInfo declared = input("x", loom::DType::f32, {-1, 3});  // symbolic batch
  const loom::Tensor t = loom::bench::read_input_file(path("ok.pb"), "net", declared, "--loadInputs");
  EXPECT_EQ(t.shape(), (loom::Shape{2, 3}));
  EXPECT_EQ(t.values<float>()[5], 6.0f);

  using loom::test_support::expect_error;
  expect_error(
      [&] {
        loom::bench::read_input_file(path("ok.pb"), "net", input("x", loom::DType::f32, {2, 4}), "--L");
      },
      loom::ErrorCode::shape_mismatch, {"--L: input net/x from " + path("ok.pb"), "shape 2x3", "x 2x4 f32"});
  expect_error([&] { loom::bench::read_input_file(path("ok.pb"), "net", input("x", loom::DType::f32, {6}), "--L"); },
               loom::ErrorCode::shape_mismatch, {"net/x", "shape 2x3"});
  expect_error(
      [&] {
        loom::bench::read_input_file(path("ok.pb"), "net", input("x", loom::DType::i64, {2, 3}), "--L");
      },
      loom::ErrorCode::dtype_mismatch, {"net/x", path("ok.pb"), "holds f32"});
  expect_error([&] { loom::bench::read_input_file(path("missing.npy"), "net", declared, "--L"); },
               loom::ErrorCode::invalid_argument, {"net/x", path("missing.npy")});
  loom::write_tensor_pb(path("garbage.pb"), loom::Tensor::from<float>({1}, {1}));
  std::filesystem::resize_file(path("garbage.pb"), 3);  // truncated
  expect_error([&] { loom::bench::read_input_file(path("garbage.pb"), "net", declared, "--L"); },
               loom::ErrorCode::invalid_argument, {"net/x", path("garbage.pb")});
  std::filesystem::create_directories(path("a_folder.pb"));
  expect_error([&] { loom::bench::read_input_file(path("a_folder.pb"), "net", declared, "--L"); },
               loom::ErrorCode::invalid_argument, {"net/x", path("a_folder.pb")});
}

TEST_F(BenchInputFiles, ReadInputFilesGivesEachModelItsTensorsByName) {
  loom::write_tensor_pb(path("ids.pb"), loom::Tensor::from<std::int64_t>({1, 8}, {1, 2, 3, 4, 5, 6, 7, 8}));
  const auto read = loom::bench::read_input_files({"lstm/ids:" + path("ids.pb")}, kModels, "--loadInputs");
  ASSERT_EQ(read.size(), 3u);
  EXPECT_TRUE(read[0].empty());
  EXPECT_TRUE(read[1].empty());
  ASSERT_EQ(read[2].count("ids"), 1u);
  EXPECT_EQ(read[2].at("ids").values<std::int64_t>()[7], 8);

  // use_input_files puts it in place of the random input, by name.
  std::vector<loom::Tensor> inputs = {loom::Tensor::from<std::int64_t>({1, 8}, std::vector<std::int64_t>(8, 0))};
  loom::bench::use_input_files(inputs, kModels[2].inputs, read[2], "lstm", "--loadInputs");
  EXPECT_EQ(inputs[0].values<std::int64_t>()[0], 1);
  // A model loaded for another shape (--batch, --shapes) refuses it.
  const std::vector<loom::ValueInfo> batch2 = {input("ids", loom::DType::i64, {2, 8})};
  loom::test_support::expect_error(
      [&] { loom::bench::use_input_files(inputs, batch2, read[2], "lstm", "--loadInputs"); },
      loom::ErrorCode::shape_mismatch, {"lstm/ids", "1x8", "2x8"});
}

TEST(BenchExportOutput, TrtexecLayoutWithExactValues) {
  loom::bench::ModelOutputs a{"net", {input("y", loom::DType::f32, {2, 2}), input("idx", loom::DType::i64, {2})}, {}};
  const float tiny = 1.0f / 3.0f;
  a.values.push_back(loom::Tensor::from<float>({2, 2}, {tiny, -2.5f, std::numeric_limits<float>::quiet_NaN(), 1e30f}));
  a.values.push_back(loom::Tensor::from<std::int64_t>({2}, {(1LL << 62) + 1, -7}));
  loom::bench::ModelOutputs b{"flag", {input("ok", loom::DType::boolean, {1})}, {}};
  b.values.push_back(loom::Tensor::from<std::uint8_t>(loom::DType::boolean, {1}, {1}));
  const auto doc = loom::bench::outputs_json({a, b});
  ASSERT_EQ(doc.size(), 3u);
  std::vector<std::string> keys;
  for (const auto& [key, value] : doc[0].items()) keys.push_back(key);
  EXPECT_EQ(keys, (std::vector<std::string>{"name", "dimensions", "values", "model", "dtype"}));
  EXPECT_EQ(doc[0]["name"], "y");
  EXPECT_EQ(doc[0]["dimensions"], "2x2");
  EXPECT_EQ(doc[0]["model"], "net");
  EXPECT_EQ(doc[0]["dtype"], "f32");
  // The f32 value survives a round trip through the JSON text exactly.
  const auto reread = nlohmann::json::parse(loom::bench::one_element_per_line(doc));
  EXPECT_EQ(static_cast<float>(reread[0]["values"][0].get<double>()), tiny);
  EXPECT_EQ(reread[0]["values"][1], -2.5);
  EXPECT_TRUE(reread[0]["values"][2].is_null());  // NaN: JSON has none
  EXPECT_EQ(static_cast<float>(reread[0]["values"][3].get<double>()), 1e30f);
  EXPECT_EQ(reread[1]["values"][0].get<std::int64_t>(), (1LL << 62) + 1);  // beyond a double's 53 bits
  EXPECT_EQ(reread[1]["values"][1], -7);
  EXPECT_EQ(reread[2]["values"], nlohmann::json::array({1}));
  EXPECT_EQ(reread[2]["dtype"], "bool");

  a.values.pop_back();
  loom::test_support::expect_error([&] { loom::bench::outputs_json({a}); }, loom::ErrorCode::internal, {"net"});
}

}  // namespace
