#!/usr/bin/env python3
"""loom-run's file round trip and its errors, on a tiny model written here with onnx.helper:
sum = x + y and prod = x * y, x with a symbolic batch dim. Checks the outputs against numpy and
that each mistake (missing or extra input file, wrong dtype or shape, contradicting --shapes,
unknown op) exits non-zero with a message naming it.

Usage: check_loom_run.py --loom-run PATH [--venv DIR] [--work-dir DIR]
Exit status: 0 pass, 1 fail, 77 skipped (no venv / onnx or numpy missing).
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from venv_support import SKIP, enter_venv  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--loom-run", required=True)
    parser.add_argument("--venv")
    parser.add_argument("--work-dir")
    args = parser.parse_args()
    if args.venv:
        enter_venv(args.venv, "check_loom_run")
    try:
        import numpy as np
        import onnx
        from onnx import TensorProto, helper, numpy_helper
    except ImportError as error:
        print(f"check_loom_run: {error}; skipping")
        return SKIP

    work = args.work_dir or tempfile.mkdtemp(prefix="loom-run-cli-")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)

    def write_model(path, op="Add", domain=""):
        graph = helper.make_graph(
            [helper.make_node(op, ["x", "y"], ["sum"], domain=domain), helper.make_node("Mul", ["x", "y"], ["prod"])],
            "tiny",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3]),
             helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])],
            [helper.make_tensor_value_info("sum", TensorProto.FLOAT, ["batch", 3]),
             helper.make_tensor_value_info("prod", TensorProto.FLOAT, ["batch", 3])])
        opsets = [helper.make_opsetid("", 17)] + ([helper.make_opsetid(domain, 1)] if domain else [])
        onnx.save(helper.make_model(graph, opset_imports=opsets), path)

    model = os.path.join(work, "tiny.onnx")
    write_model(model)
    rng = np.random.default_rng(3)
    x = rng.random((2, 3), dtype=np.float32)
    y = rng.random((1, 3), dtype=np.float32)

    def make_inputs(name, files):
        folder = os.path.join(work, name)
        os.makedirs(folder)
        for file, array in files.items():
            if file.endswith(".npy"):
                np.save(os.path.join(folder, file), array)
            else:
                with open(os.path.join(folder, file), "wb") as f:
                    index = int(file.split(".")[0].split("_")[1])
                    name = ["x", "y"][index] if index < 2 else file.split(".")[0]
                    f.write(numpy_helper.from_array(array, name).SerializeToString())
        return folder

    failures = []

    def run(label, input_dir, extra=(), expect_rc=0, expect_text=None, onnx_file=model):
        out_dir = os.path.join(work, label + "-out")
        command = [args.loom_run, "--onnx", onnx_file, "--input-dir", input_dir, "--output-dir", out_dir,
                   "--device", "cpu", *extra]
        result = subprocess.run(command, capture_output=True, text=True)
        text = result.stdout + result.stderr
        ok = (result.returncode == 0) if expect_rc == 0 else (result.returncode == expect_rc)
        if ok and expect_text and expect_text not in text:
            ok = False
        print(f"{'ok  ' if ok else 'FAIL'} {label}: exit {result.returncode}"
              f"{'' if expect_text is None else f', wants {expect_text!r}'}")
        if not ok:
            print("     $ " + " ".join(command) + "\n     " + text.replace("\n", "\n     "))
            failures.append(label)
        return out_dir

    # One .pb and one .npy input; outputs against numpy, names kept.
    good = make_inputs("good", {"input_0.pb": x, "input_1.npy": y})
    out = run("round trip", good, ["--check", "--iterations", "2"], expect_text="Check passed")
    for i, (name, expected) in enumerate([("sum", x + y), ("prod", x * y)]):
        path = os.path.join(out, f"output_{i}.pb")
        if not os.path.exists(path):
            failures.append(f"output_{i}.pb missing")
            continue
        tensor = onnx.load_tensor(path)
        got = numpy_helper.to_array(tensor)
        if tensor.name != name or got.shape != expected.shape or not np.allclose(got, expected, rtol=1e-6, atol=0):
            failures.append(f"output_{i}.pb: {tensor.name} {got} != {name} {expected}")
            print(f"FAIL output_{i}.pb: name {tensor.name!r}, values {got.tolist()}")
        else:
            print(f"ok   output_{i}.pb: {name} matches numpy")
    run("--shapes agreeing", good, ["--shapes", "x:2x3,y:1x3"])

    # --dim-range: "batch" left open, two requests of different sizes in one executor.
    x4 = rng.random((4, 3), dtype=np.float32)
    four = make_inputs("batch4", {"input_0.pb": x4, "input_1.pb": y})
    four_out = os.path.join(work, "batch4-out")
    run("--dim-range, two sizes", good, ["--dim-range", "batch=1:2:4", "--input-dir", four, "--output-dir", four_out,
                                         "--check"], expect_text="Shape plans: 2")  # opt 2 and max 4: both made at load
    got = numpy_helper.to_array(onnx.load_tensor(os.path.join(four_out, "output_0.pb"))) \
        if os.path.exists(os.path.join(four_out, "output_0.pb")) else None
    if got is None or got.shape != (4, 3) or not np.allclose(got, x4 + y, rtol=1e-6, atol=0):
        failures.append("--dim-range: batch-4 sum")
        print(f"FAIL --dim-range: batch-4 sum {None if got is None else got.tolist()}")
    else:
        print("ok   --dim-range: batch-4 sum matches numpy")
    run("--dim-range, size out of range", four, ["--dim-range", "batch=1:2:3"], expect_rc=1,
        expect_text="outside its range 1..3")
    run("--dim-range of no dim", good, ["--dim-range", "seq=1:2:3"], expect_rc=1,
        expect_text="no input of the model has a symbolic dim 'seq'")
    run("--dim-range unordered", good, ["--dim-range", "batch=3:2:4"], expect_rc=2, expect_text="MIN <= OPT <= MAX")

    run("missing input file", make_inputs("missing", {"input_0.pb": x}), expect_rc=2, expect_text="missing input file")
    run("extra input file", make_inputs("extra", {"input_0.pb": x, "input_1.pb": y, "input_2.pb": y}),
        expect_rc=2, expect_text="input_2.pb exists")
    run("wrong dtype", make_inputs("dtype", {"input_0.pb": x.astype(np.int64), "input_1.pb": y}),
        expect_rc=1, expect_text="the model expects f32")
    run("wrong shape", make_inputs("shape", {"input_0.pb": x, "input_1.pb": np.ones((2, 3), np.float32)}),
        expect_rc=1, expect_text="the model declares")
    run("--shapes contradicting the files", good, ["--shapes", "x:4x3"], expect_rc=2, expect_text="--shapes")
    run("bad --device", good, ["--device", "gpu"], expect_rc=2, expect_text="expected auto, cpu, cpu:accel, cuda or cuda:N")
    run("--shapes of no input", good, ["--shapes", "z:4x3"], expect_rc=2, expect_text="no input 'z'")
    no_out = subprocess.run([args.loom_run, "--onnx", model, "--input-dir", good], capture_output=True, text=True)
    if no_out.returncode != 2 or "--output-dir is required" not in no_out.stderr:
        failures.append("missing --output-dir")
        print(f"FAIL missing --output-dir: exit {no_out.returncode}: {no_out.stderr}")
    else:
        print("ok   missing --output-dir: exit 2")
    unknown = os.path.join(work, "unknown_op.onnx")
    write_model(unknown, op="Frobnicate", domain="com.example")
    run("unknown op", good, expect_rc=1, expect_text="Frobnicate", onnx_file=unknown)

    listed = subprocess.run([args.loom_run, "--list-devices"], capture_output=True, text=True)
    if listed.returncode != 0 or not listed.stdout.startswith("cpu"):
        failures.append("--list-devices")
        print(f"FAIL --list-devices: exit {listed.returncode}: {listed.stdout}{listed.stderr}")
    else:
        print("ok   --list-devices lists cpu first")

    print(f"check_loom_run: {'PASS' if not failures else 'FAIL: ' + ', '.join(failures)}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
