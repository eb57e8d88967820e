// Tensor files: TensorProto .pb (write -> read for every dtype, typed fields written by hand, the
// ONNX test data) and NumPy .npy files whose bytes are written here by hand.
#include <gtest/gtest.h>

#include <cmath>

#include "loom/onnx.hpp"
#include "onnx_proto_builder.hpp"

using namespace loom;
using namespace loom::testing;

namespace {

class TensorFiles : public OnnxFileTest {
 protected:
  // A .npy file: magic, version, header length (2 bytes for 1.0, 4 for 2.0), the header padded
  // with spaces to a multiple of 64 and ending in '\n', then the data.
  std::string write_npy(const std::string& file, const std::string& dict, const std::string& data, int major = 1) {
    const std::size_t prefix = major == 1 ? 10 : 12;
    std::string header = dict;
    while ((prefix + header.size() + 1) % 64 != 0) header += ' ';
    header += '\n';
    std::string bytes = "\x93NUMPY";
    bytes += static_cast<char>(major);
    bytes += '\0';
    const std::size_t len = header.size();
    bytes += static_cast<char>(len & 0xFF);
    bytes += static_cast<char>((len >> 8) & 0xFF);
    if (major != 1) bytes += std::string(2, '\0');
    bytes += header;
    bytes += data;
    write_bytes(file, bytes);
    return path(file);
  }
};

template <class T>
std::string bytes_of(const std::vector<T>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

template <class T>
void expect_same(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.dtype(), b.dtype());
  ASSERT_EQ(a.shape(), b.shape());
  const auto va = a.values<T>();
  const auto vb = b.values<T>();
  for (std::size_t i = 0; i < va.size(); ++i) EXPECT_EQ(std::memcmp(&va[i], &vb[i], sizeof(T)), 0) << "element " << i;
}

TEST_F(TensorFiles, PbRoundTripForEachDtype) {
  const auto f32 = Tensor::from<float>(Shape{2, 2}, {1.5f, -2.0f, 0.0f, 1e-30f});
  const auto f16 = Tensor::from<f16_t>(Shape{3}, {float_to_f16(1.0f), float_to_f16(-0.5f), float_to_f16(65504.0f)});
  const auto bf16 = Tensor::from<bf16_t>(Shape{2}, {float_to_bf16(3.0f), float_to_bf16(-1e20f)});
  const auto i64 = Tensor::from<std::int64_t>(Shape{2}, {-1, 1LL << 50});
  const auto i32 = Tensor::from<std::int32_t>(Shape{1, 2}, {7, -8});
  const auto flags = Tensor::from<std::uint8_t>(Shape{4}, {1, 0, 0, 1});
  const auto scalar = Tensor::from<float>(Shape{}, {42.0f});
  const auto empty = Tensor(DType::f32, Shape{0, 3});

  std::string name;
  write_tensor_pb(path("f32.pb"), f32, "weights");
  expect_same<float>(read_tensor_pb(path("f32.pb"), &name), f32);
  EXPECT_EQ(name, "weights");
  write_tensor_pb(path("f16.pb"), f16);
  expect_same<f16_t>(read_tensor_pb(path("f16.pb")), f16);
  write_tensor_pb(path("bf16.pb"), bf16);
  expect_same<bf16_t>(read_tensor_pb(path("bf16.pb")), bf16);
  write_tensor_pb(path("i64.pb"), i64);
  expect_same<std::int64_t>(read_tensor_pb(path("i64.pb")), i64);
  write_tensor_pb(path("i32.pb"), i32);
  expect_same<std::int32_t>(read_tensor_pb(path("i32.pb")), i32);
  write_tensor_pb(path("bool.pb"), flags);
  expect_same<std::uint8_t>(read_tensor_pb(path("bool.pb")), flags);
  write_tensor_pb(path("scalar.pb"), scalar);
  expect_same<float>(read_tensor_file(path("scalar.pb")), scalar);
  write_tensor_pb(path("empty.pb"), empty);
  EXPECT_EQ(read_tensor_pb(path("empty.pb")).shape(), (Shape{0, 3}));
}

TEST_F(TensorFiles, PbRoundTripForTheNarrowAndWideDtypes) {
  // Extremes of each type survive write -> read bit for bit, with the ONNX data type recorded.
  Tensor u8(DType::u8, Shape{3});
  u8.values<std::uint8_t>()[0] = 0, u8.values<std::uint8_t>()[1] = 128, u8.values<std::uint8_t>()[2] = 255;
  const auto i8 = Tensor::from<std::int8_t>(Shape{3}, {-128, 0, 127});
  const auto u16 = Tensor::from<std::uint16_t>(Shape{2}, {0, 65535});
  const auto i16 = Tensor::from<std::int16_t>(Shape{2, 1}, {-32768, 32767});
  const auto u32 = Tensor::from<std::uint32_t>(Shape{2}, {1, 4294967295u});
  const auto u64 = Tensor::from<std::uint64_t>(Shape{2}, {0, ~std::uint64_t{0}});
  const auto f64 = Tensor::from<double>(Shape{3}, {0.1, -1e300, 5e-324});
  const std::pair<const Tensor*, int> cases[] = {{&u8, onnx::TensorProto::UINT8},   {&i8, onnx::TensorProto::INT8},
                                                 {&u16, onnx::TensorProto::UINT16}, {&i16, onnx::TensorProto::INT16},
                                                 {&u32, onnx::TensorProto::UINT32}, {&u64, onnx::TensorProto::UINT64},
                                                 {&f64, onnx::TensorProto::DOUBLE}};
  for (const auto& [tensor, code] : cases) {
    const std::string file = path(std::string(dtype_name(tensor->dtype())) + ".pb");
    write_tensor_pb(file, *tensor);
    const Tensor back = read_tensor_pb(file);
    EXPECT_EQ(back.dtype(), tensor->dtype());
    EXPECT_EQ(back.shape(), tensor->shape());
    ASSERT_EQ(back.bytes(), tensor->bytes());
    EXPECT_EQ(std::memcmp(back.data(), tensor->data(), back.bytes()), 0) << dtype_name(tensor->dtype());
    onnx::TensorProto proto;
    std::ifstream in(file, std::ios::binary);
    ASSERT_TRUE(proto.ParseFromIstream(&in));
    EXPECT_EQ(proto.data_type(), code) << dtype_name(tensor->dtype());
  }
}

TEST_F(TensorFiles, WrittenPbIsAPlainTensorProto) {
  write_tensor_pb(path("t.pb"), Tensor::from<std::int32_t>(Shape{2}, {3, 4}), "t");
  onnx::TensorProto proto;
  std::ifstream in(path("t.pb"), std::ios::binary);
  ASSERT_TRUE(proto.ParseFromIstream(&in));
  EXPECT_EQ(proto.name(), "t");
  EXPECT_EQ(proto.data_type(), onnx::TensorProto::INT32);
  ASSERT_EQ(proto.dims_size(), 1);
  EXPECT_EQ(proto.dims(0), 2);
  EXPECT_EQ(proto.raw_data(), bytes_of(std::vector<std::int32_t>{3, 4}));
}

TEST_F(TensorFiles, PbWithTypedFields) {
  const auto proto = float_tensor("typed", {3}, {0.25f, 0.5f, 0.75f});
  std::string bytes;
  ASSERT_TRUE(proto.SerializeToString(&bytes));
  write_bytes("typed.pb", bytes);
  const Tensor t = read_tensor_pb(path("typed.pb"));
  EXPECT_EQ(t.values<float>()[2], 0.75f);
}

TEST_F(TensorFiles, OnnxTestDataAbs) {
  const std::string dir = "/usr/share/libonnx-testdata/data/node/test_abs/test_data_set_0/";
  if (!std::filesystem::exists(dir + "input_0.pb")) GTEST_SKIP() << dir << " is not installed";
  std::string name;
  const Tensor x = read_tensor_pb(dir + "input_0.pb", &name);
  const Tensor y = read_tensor_file(dir + "output_0.pb");
  EXPECT_EQ(name, "x");
  EXPECT_EQ(x.dtype(), DType::f32);
  EXPECT_EQ(x.shape(), (Shape{3, 4, 5}));
  ASSERT_EQ(y.shape(), x.shape());
  bool any_negative = false;
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    EXPECT_EQ(y.values<float>()[i], std::fabs(x.values<float>()[i]));  // the test's own identity
    any_negative = any_negative || x.values<float>()[i] < 0;
  }
  EXPECT_TRUE(any_negative);
}

TEST_F(TensorFiles, BadPbNamesTheFile) {
  write_bytes("bad.pb", "\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff");
  const auto e = error_of([&] { read_tensor_pb(path("bad.pb")); });
  EXPECT_EQ(e.code, ErrorCode::invalid_argument);
  EXPECT_NE(e.message.find(path("bad.pb")), std::string::npos) << e.message;

  onnx::TensorProto wide;
  wide.set_name("wide");
  wide.set_data_type(onnx::TensorProto::COMPLEX128);
  wide.add_double_data(1.0);
  wide.add_double_data(2.0);
  std::string bytes;
  wide.SerializeToString(&bytes);
  write_bytes("complex.pb", bytes);
  const auto u = error_of([&] { read_tensor_pb(path("complex.pb")); });
  EXPECT_EQ(u.code, ErrorCode::unsupported);
  EXPECT_NE(u.message.find(path("complex.pb")), std::string::npos) << u.message;
  EXPECT_NE(u.message.find("COMPLEX128"), std::string::npos) << u.message;
}

TEST_F(TensorFiles, NpyFloatVersion1) {
  const std::vector<float> v = {1, 2, 3, 4, 5, 6.5f};
  const auto file = write_npy("a.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", bytes_of(v));
  const Tensor t = read_npy(file);
  EXPECT_EQ(t.dtype(), DType::f32);
  EXPECT_EQ(t.shape(), (Shape{2, 3}));
  for (int i = 0; i < 6; ++i) EXPECT_EQ(t.values<float>()[i], v[i]);
  EXPECT_EQ(read_tensor_file(file).shape(), (Shape{2, 3}));  // dispatch by extension
}

TEST_F(TensorFiles, ReadTensorFileTellsTheFormatsApartByContent) {
  const std::vector<float> v = {1, 2, 3};
  const Tensor npy = read_tensor_file(
      write_npy("values.bin", "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", bytes_of(v)));
  EXPECT_EQ(npy.shape(), (Shape{3}));
  EXPECT_EQ(npy.values<float>()[2], 3.0f);
  write_tensor_pb(path("proto.bin"), Tensor::from<float>({1, 2}, {4.0f, 5.0f}));
  const Tensor pb = read_tensor_file(path("proto.bin"));
  EXPECT_EQ(pb.shape(), (Shape{1, 2}));
  EXPECT_EQ(pb.values<float>()[1], 5.0f);
  // A file named .npy without the magic string is reported as a broken .npy, naming it.
  write_bytes("broken.npy", "not numpy at all");
  try {
    read_tensor_file(path("broken.npy"));
    FAIL() << "a .npy without the magic string was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("magic"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(path("broken.npy")), std::string::npos) << e.what();
  }
  EXPECT_THROW(read_tensor_file(path("missing.pb")), Error);
}

TEST_F(TensorFiles, NpyIntegerBoolHalfAndVersion2) {
  const auto i64 = write_npy("i.npy", "{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }",
                             bytes_of(std::vector<std::int64_t>{-1, 0, 1LL << 40}), 2);
  EXPECT_EQ(read_npy(i64).values<std::int64_t>()[2], 1LL << 40);
  const auto i32 = write_npy("j.npy", "{'descr': '<i4', 'fortran_order': False, 'shape': (1, 1), }",
                             bytes_of(std::vector<std::int32_t>{-9}));
  EXPECT_EQ(read_npy(i32).values<std::int32_t>()[0], -9);
  const auto b =
      write_npy("b.npy", "{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }", std::string("\x01\x00", 2));
  EXPECT_EQ(read_npy(b).dtype(), DType::boolean);
  EXPECT_EQ(read_npy(b).values<std::uint8_t>()[0], 1);
  const auto h = write_npy("h.npy", "{'descr': '<f2', 'fortran_order': False, 'shape': (), }",
                           bytes_of(std::vector<std::uint16_t>{0x3C00}));  // 1.0
  const Tensor scalar = read_npy(h);
  EXPECT_EQ(scalar.shape().rank(), 0u);
  EXPECT_EQ(f16_to_float(scalar.values<f16_t>()[0]), 1.0f);
}

TEST_F(TensorFiles, NpyNarrowAndWideDtypes) {
  const auto dict = [](const std::string& descr) {
    return "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (2,), }";
  };
  const Tensor u8 = read_npy(write_npy("u8.npy", dict("|u1"), std::string("\x00\xff", 2)));
  EXPECT_EQ(u8.dtype(), DType::u8);
  EXPECT_EQ(u8.values<std::uint8_t>()[1], 255);
  const Tensor i8 = read_npy(write_npy("i8.npy", dict("|i1"), std::string("\x80\x7f", 2)));
  EXPECT_EQ(i8.dtype(), DType::i8);
  EXPECT_EQ(i8.values<std::int8_t>()[0], -128);
  const Tensor u16 = read_npy(write_npy("u16.npy", dict("<u2"), bytes_of(std::vector<std::uint16_t>{1, 65535})));
  EXPECT_EQ(u16.values<std::uint16_t>()[1], 65535);
  const Tensor i16 = read_npy(write_npy("i16.npy", dict("<i2"), bytes_of(std::vector<std::int16_t>{-32768, 3})));
  EXPECT_EQ(i16.values<std::int16_t>()[0], -32768);
  const Tensor u32 = read_npy(write_npy("u32.npy", dict("<u4"), bytes_of(std::vector<std::uint32_t>{0, 4294967295u})));
  EXPECT_EQ(u32.values<std::uint32_t>()[1], 4294967295u);
  const Tensor u64 =
      read_npy(write_npy("u64.npy", dict("<u8"), bytes_of(std::vector<std::uint64_t>{~std::uint64_t{0}, 2})));
  EXPECT_EQ(u64.dtype(), DType::u64);
  EXPECT_EQ(u64.values<std::uint64_t>()[0], ~std::uint64_t{0});
  const Tensor f64 = read_npy(write_npy("f64.npy", dict("<f8"), bytes_of(std::vector<double>{0.1, -2.0})));
  EXPECT_EQ(f64.dtype(), DType::f64);
  EXPECT_EQ(f64.values<double>()[0], 0.1);
}

TEST_F(TensorFiles, NpyRefusals) {
  const auto fortran =
      write_npy("f.npy", "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", std::string(16, '\0'));
  auto e = error_of([&] { read_npy(fortran); });
  EXPECT_EQ(e.code, ErrorCode::unsupported);
  EXPECT_NE(e.message.find(fortran), std::string::npos) << e.message;

  const auto wide =
      write_npy("c.npy", "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", std::string(8, '\0'));
  e = error_of([&] { read_npy(wide); });
  EXPECT_EQ(e.code, ErrorCode::unsupported);
  EXPECT_NE(e.message.find("<c8"), std::string::npos) << e.message;

  const auto short_data =
      write_npy("s.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", std::string(12, '\0'));
  e = error_of([&] { read_npy(short_data); });
  EXPECT_EQ(e.code, ErrorCode::invalid_argument);
  EXPECT_NE(e.message.find(short_data), std::string::npos) << e.message;

  write_bytes("x.npy", "not numpy");
  e = error_of([&] { read_npy(path("x.npy")); });
  EXPECT_EQ(e.code, ErrorCode::invalid_argument);
  EXPECT_NE(e.message.find("x.npy"), std::string::npos) << e.message;
}

}  // namespace
