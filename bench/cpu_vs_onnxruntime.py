#!/usr/bin/env python3
"""Loom's CPU backend against onnxruntime's CPU execution provider on the published models the tests
use (issue 18, item 4), in one run: the same model files, the same seeded inputs, each engine timed
on this machine back to back, reported as ratios.

For each model and each thread count of --threads (default: 1 and the cores this process may use):
loom-run --threads T --iterations N (its min and mean latency, submit to outputs on the host, as
loom-run prints them) and onnxruntime InferenceSession.run N times with intra_op_num_threads = T
(inter_op 1, sequential execution, full graph optimisations), after one warm-up run each. The
whole set is repeated --rounds times, engines and thread counts interleaved, because a shared
machine drifts by tens of percent between runs a few seconds apart: each figure is the minimum
over rounds of each round's minimum ("min") and the median over rounds of each round's mean
("median mean"). The quantized variants are made with onnxruntime's quantizer exactly as
tests/published/check_model.py makes them; onnxruntime runs them optimised (its fused integer
kernels), the configuration a user would deploy.

Usage (the venv is the test venv scripts/setup-test-venv makes):
  bench/cpu_vs_onnxruntime.py --venv build/release/test-venv --loom-run build/release/bin/loom-run \\
      [--iterations 20] [--rounds 3] [--threads 1,2] [--models yolov8n_nudenet,minilm_l3,...] \\
      [--markdown FILE]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "published"))
sys.dont_write_bytecode = True
from venv_support import enter_venv  # noqa: E402


def loom_times(loom_run, model_path, in_dir, threads, iterations):
    out_dir = tempfile.mkdtemp(prefix="loom-bench-out-")
    command = [loom_run, "--onnx", model_path, "--input-dir", in_dir, "--output-dir", out_dir, "--device", "cpu",
               "--threads", str(threads), "--iterations", str(iterations + 1)]
    run = subprocess.run(command, capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"cpu_vs_onnxruntime: loom-run failed on {model_path}:\n{run.stderr}")
    match = re.search(r"min ([0-9.]+) ms, mean ([0-9.]+) ms", run.stdout)
    if not match:
        sys.exit(f"cpu_vs_onnxruntime: no latency line in loom-run's output:\n{run.stdout}")
    return float(match.group(1)), float(match.group(2))


def ort_times(ort, model_path, inputs, threads, iterations):
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    session = ort.InferenceSession(model_path, options, providers=["CPUExecutionProvider"])
    session.run(None, inputs)  # warm-up
    times = []
    for _ in range(iterations):
        start = time.perf_counter()
        session.run(None, inputs)
        times.append((time.perf_counter() - start) * 1e3)
    return min(times), sum(times) / len(times)


def summary(rounds):
    """min over rounds of the round minimums, median over rounds of the round means."""
    means = sorted(mean for _, mean in rounds)
    return min(low for low, _ in rounds), means[len(means) // 2]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--venv", required=True)
    parser.add_argument("--loom-run", required=True)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", help="thread counts, e.g. 1,2 (default: 1 and the cores this process may use)")
    parser.add_argument("--models", default="yolov8n_nudenet,minilm_l3,minilm_l3_int8,yolov8n_nudenet_qdq")
    parser.add_argument("--markdown", help="also write the table to this file")
    args = parser.parse_args()
    enter_venv(args.venv, "cpu_vs_onnxruntime")
    import check_model as cm
    cm.import_reference_tools()
    np, onnx, ort, numpy_helper = cm.np, cm.onnx, cm.ort, cm.numpy_helper

    cores = len(os.sched_getaffinity(0))
    threads = [int(t) for t in args.threads.split(",")] if args.threads else sorted({1, cores})
    work = tempfile.mkdtemp(prefix="loom-cpu-vs-ort-")
    prepared = []
    for name in args.models.split(","):
        distribution, file_name, make_inputs, quantize, _ = cm.MODELS[name]
        path = cm.locate(distribution, file_name)
        if quantize:
            quantized = os.path.join(work, name + ".onnx")
            quantize(path, quantized, make_inputs, np.random.default_rng(1001))
            path = quantized
        model = onnx.load(path)
        inputs = make_inputs(model, np.random.default_rng(1))
        initializers = {t.name for t in model.graph.initializer}
        order = [v.name for v in model.graph.input if v.name not in initializers]
        in_dir = os.path.join(work, name + "-input")
        os.makedirs(in_dir, exist_ok=True)
        for i, input_name in enumerate(order):
            with open(os.path.join(in_dir, f"input_{i}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(inputs[input_name], input_name).SerializeToString())
        prepared.append((name, path, inputs, in_dir))

    # (model, threads) -> engine -> [(min, mean) per round]
    measured = {}
    for round_index in range(args.rounds):
        for name, path, inputs, in_dir in prepared:
            for t in threads:
                entry = measured.setdefault((name, t), {"loom": [], "ort": []})
                entry["loom"].append(loom_times(args.loom_run, path, in_dir, t, args.iterations))
                entry["ort"].append(ort_times(ort, path, inputs, t, args.iterations))
                loom, ortt = entry["loom"][-1], entry["ort"][-1]
                print(f"round {round_index + 1}: {name}, {t} thread(s): loom {loom[0]:.2f}/{loom[1]:.2f} ms, "
                      f"ort {ortt[0]:.2f}/{ortt[1]:.2f} ms (min/mean)", flush=True)

    lines = [f"onnxruntime {ort.__version__}, {cores} cores available, {args.rounds} rounds of {args.iterations} timed "
             "runs each (min over rounds / median of the round means, ms; ratio = Loom min / onnxruntime min, below "
             "1 is Loom faster; scaling = Loom's 1-thread min / this min)", "",
             "| model | threads | Loom | onnxruntime | ratio | Loom scaling | onnxruntime scaling |",
             "|---|---|---|---|---|---|---|"]
    for name, _, _, _ in prepared:
        base_loom = summary(measured[(name, threads[0])]["loom"])[0]
        base_ort = summary(measured[(name, threads[0])]["ort"])[0]
        for t in threads:
            loom = summary(measured[(name, t)]["loom"])
            ortt = summary(measured[(name, t)]["ort"])
            lines.append(f"| {name} | {t} | {loom[0]:.2f} / {loom[1]:.2f} | {ortt[0]:.2f} / {ortt[1]:.2f} | "
                         f"{loom[0] / ortt[0]:.2f}× | {base_loom / loom[0]:.2f}× | {base_ort / ortt[0]:.2f}× |")
    table = "\n".join(lines)
    print(table)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(table + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
