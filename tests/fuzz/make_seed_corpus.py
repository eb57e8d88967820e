"""Writes the hand-made seeds of the ONNX loader fuzzer's corpus: the older-opset forms the importer
rewrites, Constant nodes, initializers of each dtype and symbolic dims, which the ONNX node test
models (also in corpus/) do not cover. Run with a Python that has the onnx package:
    python3 tests/fuzz/make_seed_corpus.py tests/fuzz/corpus
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def save(folder, name, nodes, inputs, outputs, initializers=(), opset=17):
    graph = helper.make_graph(nodes, name, inputs, outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="seed")
    model.ir_version = 7
    with open(f"{folder}/{name}.onnx", "wb") as f:
        f.write(model.SerializeToString())


def main(folder):
    f32 = TensorProto.FLOAT
    x = lambda shape, t=f32: helper.make_tensor_value_info("x", t, shape)
    y = helper.make_tensor_value_info("y", f32, None)
    save(folder, "squeeze_opset11", [helper.make_node("Squeeze", ["x"], ["s"], axes=[0]),
                                     helper.make_node("Unsqueeze", ["s"], ["y"], axes=[1])],
         [x([1, 3])], [y], opset=11)
    save(folder, "softmax_opset11", [helper.make_node("Softmax", ["x"], ["y"], axis=1)],
         [x(["batch", 3, 4])], [y], opset=11)
    save(folder, "clip_pad_opset6", [helper.make_node("Clip", ["x"], ["c"], min=0.0, max=6.0),
                                     helper.make_node("Pad", ["c"], ["y"], pads=[0, 1, 0, 1], value=2.0)],
         [x([2, 2])], [y], opset=6)
    save(folder, "split_reducesum_opset11",
         [helper.make_node("Split", ["x"], ["a", "b"], axis=0, split=[1, 2]),
          helper.make_node("ReduceSum", ["b"], ["y"], axes=[1], keepdims=0)],
         [x([3, 4])], [y], opset=11)
    save(folder, "constants", [helper.make_node("Constant", [], ["k"], value_floats=[1.0, 2.0]),
                               helper.make_node("Constant", [], ["i"], value_int=3),
                               helper.make_node("Add", ["x", "k"], ["y"])],
         [x(["n", 2])], [y])
    inits = [numpy_helper.from_array((np.arange(6) % 3).astype(t).reshape(2, 3), name=f"w_{t.__name__}")
             for t in (np.float32, np.float16, np.int64, np.int32, np.bool_)]
    save(folder, "initializer_dtypes", [helper.make_node("Add", ["x", "w_float32"], ["y"])],
         [x([2, 3])], [y], inits)
    w = numpy_helper.from_array(np.ones((2, 2), np.float32), name="w")
    w.data_location = TensorProto.EXTERNAL
    w.ClearField("raw_data")
    for key, value in (("location", "weights.bin"), ("offset", "0"), ("length", "16")):
        entry = w.external_data.add()
        entry.key, entry.value = key, value
    save(folder, "external_data", [helper.make_node("MatMul", ["x", "w"], ["y"])], [x([1, 2])], [y], [w])
    save(folder, "negative_dim", [helper.make_node("Relu", ["x"], ["y"])], [x([-1, 4])], [y])
    # dim_value 0 and dim_param in one dimension: they share a oneof, so the onnx package cannot
    # write both; the input is appended as raw bytes, a second ModelProto.graph field that
    # protobuf merges into the first.
    save(folder, "zero_dim_with_param", [helper.make_node("Relu", ["x"], ["y"])], [], [y])
    with open(f"{folder}/zero_dim_with_param.onnx", "ab") as f:
        f.write(field(7, field(11, input_with_dims("x", [field(2, b"batch") + bytes([8, 0]), bytes([8, 4])]))))


def varint(n):
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def field(number, payload):
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def input_with_dims(name, dims):
    """A float ValueInfoProto whose TensorShapeProto.Dimension messages are `dims` (raw bytes)."""
    shape = b"".join(field(1, d) for d in dims)
    tensor_type = bytes([8, TensorProto.FLOAT]) + field(2, shape)
    return field(1, name.encode()) + field(2, field(1, tensor_type))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "corpus")
