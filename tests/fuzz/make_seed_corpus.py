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


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "corpus")
