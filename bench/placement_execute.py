#!/usr/bin/env python3
"""Issue 15's benchmark: a model with a shape subgraph, placed across two processors (the
placement executed: --placement-execute) against the same model all on the device (the placement
recorded only), both from one loom-run binary in the same run, rounds interleaved.

On a CPU-only machine the pair is cpu + cpu:accel (the same cores; the link is memcpy), so the
ratio measures what executing a placement adds there: the copy Steps and the hand-overs between
streams. Also checks that both configurations write byte-identical outputs.

  bench/placement_execute.py --loom-run build/release/bin/loom-run --model yolov8n=/path/320n.onnx \
      --processors cpu:accel,cpu --th1 2 --iterations 30 --rounds 3
"""
import argparse
import json
import os
import random
import re
import statistics
import struct
import subprocess
import sys
import tempfile

# Inputs per model: (dtype, shape, kind) in the model's input order.
INPUTS = {
    "yolov8n": [("<f4", (1, 3, 320, 320), "uniform")],
    "minilm": [("<i8", (2, 16), "ids"), ("<i8", (2, 16), "ones")],
}


def write_npy(path, dtype, shape, kind, rng):
    count = 1
    for d in shape:
        count *= d
    if kind == "uniform":
        data = struct.pack("<%df" % count, *(rng.random() for _ in range(count)))
    elif kind == "ids":
        data = struct.pack("<%dq" % count, *(rng.randrange(1000) for _ in range(count)))
    else:
        data = struct.pack("<%dq" % count, *([1] * count))
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        dtype, "".join("%d, " % d for d in shape))
    header += " " * (63 - (len(header) + 10) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + data)


def run(args, model, inputs, out, extra):
    cmd = [args.loom_run, "--onnx", model, "--input-dir", inputs, "--output-dir", out, "--device", args.device,
           "--iterations", str(args.iterations), "--placement-processors", args.processors,
           "--placement-th1", str(args.th1)] + extra
    text = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    m = re.search(r"min ([0-9.]+) ms, mean ([0-9.]+) ms", text)
    if not m:
        sys.exit("no latency line in loom-run's output:\n" + text)
    return float(m.group(1)), float(m.group(2))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--loom-run", required=True)
    p.add_argument("--model", action="append", required=True, help="NAME=PATH, NAME one of " + ", ".join(INPUTS))
    p.add_argument("--device", default="cpu")
    p.add_argument("--processors", default="cpu:accel,cpu")
    p.add_argument("--th1", type=float, default=2)
    p.add_argument("--iterations", type=int, default=30)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    work = tempfile.mkdtemp(prefix="loom_placement_bench_")
    print("| model | loaded graph's nodes on each processor (placed) | device: min / mean ms | placed: min / mean ms |"
          " ratio of medians (placed / device), min | mean | outputs |")
    print("|---|---|---|---|---|---|---|")
    for spec in args.model:
        name, path = spec.split("=", 1)
        inputs = os.path.join(work, name + "_in")
        os.makedirs(inputs)
        rng = random.Random(1)
        for i, (dtype, shape, kind) in enumerate(INPUTS[name]):
            write_npy(os.path.join(inputs, "input_%d.npy" % i), dtype, shape, kind, rng)
        report = os.path.join(work, name + "_placement.json")
        device, placed = [], []
        for r in range(args.rounds):
            device.append(run(args, path, inputs, os.path.join(work, name + "_device"), []))
            placed.append(run(args, path, inputs, os.path.join(work, name + "_placed"),
                              ["--placement-execute", "--placement-report", report]))
        doc = json.load(open(report))
        graph = doc["nodes"][:doc["summary"]["graph_nodes"]]  # the rest were folded or removed at load
        by_processor = {}
        for node in graph:
            by_processor[node["processor"]] = by_processor.get(node["processor"], 0) + 1
        same = all(
            open(os.path.join(work, name + "_device", f), "rb").read() ==
            open(os.path.join(work, name + "_placed", f), "rb").read()
            for f in os.listdir(os.path.join(work, name + "_device")))
        med = lambda runs, k: statistics.median(x[k] for x in runs)
        print("| %s | %s | %.2f / %.2f | %.2f / %.2f | %.2f× | %.2f× | %s |" % (
            name, ", ".join("%s %d" % kv for kv in sorted(by_processor.items())), med(device, 0), med(device, 1),
            med(placed, 0), med(placed, 1), med(placed, 0) / med(device, 0), med(placed, 1) / med(device, 1),
            "byte-identical" if same else "DIFFER"))
        print("rounds %s: device %s; placed %s" % (
            name, " ".join("%.2f/%.2f" % x for x in device), " ".join("%.2f/%.2f" % x for x in placed)),
            file=sys.stderr)


if __name__ == "__main__":
    main()
