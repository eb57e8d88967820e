#!/usr/bin/env python3
"""The PyTorch peer of issue 5 (item 6): the models export_models.py exports, built here with the same
seed (so the same weights), run on one GPU closed-loop with one request outstanding per model:

  sequential  one model after another, round after round (each request to completion);
  concurrent  one host thread and one CUDA stream per model, all at once;

each eager and with CUDA graphs (one graph per model, captured once, replayed per request). Prints
one JSON document shaped like `loom-bench --compare --json`: {"policies": [{"policy",
"throughput_qps", "makespan_ms", "models": [{"name", "requests", "throughput_qps", "p50_ms",
"p99_ms"}]}]}; with --loom FILE (a loom-bench --compare --json document) it adds "ratios": each Loom
policy's throughput over each PyTorch run's.

    python3 scripts/pytorch/peer_bench.py --batch 1 --requests 200 --json build/peer.json

A request's latency runs from when its model's previous request completed (closed loop, as
loom-bench counts it) to its own completion, so in `sequential` it includes waiting for the models
ahead of it.
"""

import argparse
import json
import math
import os
import sys
import threading
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_models import MODEL_NAMES, build_model, example_inputs  # noqa: E402


def nearest_rank(sorted_values, percentile):
    """The nearest-rank percentile, as loom-bench reports it."""
    if not sorted_values:
        return 0.0
    rank = max(1, math.ceil(percentile / 100.0 * len(sorted_values)))
    return sorted_values[min(rank, len(sorted_values)) - 1]


class Runner:
    """One model ready to serve requests on its own stream, eagerly or by replaying a CUDA graph."""

    def __init__(self, name, model, inputs, use_graph, warmup):
        self.name = name
        self.model = model
        self.inputs = inputs
        self.stream = torch.cuda.Stream()
        self.graph = None
        with torch.inference_mode():
            # Warm up on the model's stream (cuDNN/cuBLAS pick their algorithms here), as
            # torch.cuda.graph requires before a capture.
            self.stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(self.stream):
                for _ in range(max(warmup, 3 if use_graph else 0)):
                    self.model(*self.inputs)
            torch.cuda.current_stream().wait_stream(self.stream)
            torch.cuda.synchronize()
            if use_graph:
                # A model whose forward syncs with the host cannot be captured: it then runs eager,
                # and its entry says so ("cuda_graph": false), rather than stopping the whole run.
                try:
                    graph = torch.cuda.CUDAGraph()
                    with torch.cuda.graph(graph, stream=self.stream):
                        self.output = self.model(*self.inputs)
                    self.graph = graph
                except Exception as e:
                    print(f"peer_bench: {name}: CUDA graph capture failed, running eager: {e!r}", file=sys.stderr)
                torch.cuda.synchronize()

    def request(self):
        """Runs one request on the model's stream and waits for it."""
        with torch.inference_mode(), torch.cuda.stream(self.stream):
            if self.graph is not None:
                self.graph.replay()
            else:
                self.output = self.model(*self.inputs)
        self.stream.synchronize()


def summarize(policy, runners, completions, start):
    """completions[i]: model i's completion times (s); latencies are gaps between them."""
    end = max(times[-1] for times in completions)
    makespan = end - start
    models = []
    for runner, times in zip(runners, completions):
        latencies = sorted(1e3 * (t - p) for p, t in zip([start] + times[:-1], times))
        models.append({
            "name": runner.name,
            "requests": len(times),
            "throughput_qps": round(len(times) / makespan, 3),
            "p50_ms": round(nearest_rank(latencies, 50), 4),
            "p99_ms": round(nearest_rank(latencies, 99), 4),
            "cuda_graph": runner.graph is not None,
        })
    total = sum(len(t) for t in completions)
    return {"policy": policy, "requests": total, "throughput_qps": round(total / makespan, 3),
            "makespan_ms": round(1e3 * makespan, 4), "models": models}


def run_sequential(runners, requests):
    completions = [[] for _ in runners]
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(requests):
        for i, runner in enumerate(runners):
            runner.request()
            completions[i].append(time.perf_counter())
    return start, completions


def run_concurrent(runners, requests):
    completions = [[] for _ in runners]
    barrier = threading.Barrier(len(runners) + 1)
    errors = []

    def serve(i, runner):
        try:
            barrier.wait()
            for _ in range(requests):
                runner.request()
                completions[i].append(time.perf_counter())
        except Exception as e:  # reported after the join, so one failing model does not hang the rest
            errors.append(f"{runner.name}: {e!r}")

    threads = [threading.Thread(target=serve, args=(i, r)) for i, r in enumerate(runners)]
    for t in threads:
        t.start()
    torch.cuda.synchronize()
    start = time.perf_counter()
    barrier.wait()
    for t in threads:
        t.join()
    if errors:
        raise RuntimeError("; ".join(errors))
    return start, completions


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default=",".join(MODEL_NAMES), help="comma list (default %(default)s)")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--dtype", choices=["f32", "f16"], default="f32",
                        help="f16 matches loom-bench --fp16 (default %(default)s)")
    parser.add_argument("--requests", type=int, default=100, help="measured requests per model")
    parser.add_argument("--warmup", type=int, default=10, help="unmeasured requests per model first")
    parser.add_argument("--modes", default="sequential,concurrent")
    parser.add_argument("--graphs", default="eager,graph", help="eager, graph or both")
    parser.add_argument("--seed", type=int, default=1, help="weight seed, as given to export_models.py")
    parser.add_argument("--loom", help="a loom-bench --compare --json document to compare against")
    parser.add_argument("--json", default="-", help="output file, - for stdout (default)")
    args = parser.parse_args()
    modes, graph_modes = args.modes.split(","), args.graphs.split(",")
    if not set(modes) <= {"sequential", "concurrent"}:
        parser.error(f"--modes: expected sequential and/or concurrent, got {args.modes}")
    if not set(graph_modes) <= {"eager", "graph"}:
        parser.error(f"--graphs: expected eager and/or graph, got {args.graphs}")
    if not torch.cuda.is_available():
        sys.exit("peer_bench: needs a CUDA GPU")

    dtype = torch.float16 if args.dtype == "f16" else torch.float32
    names = args.models.split(",")
    models = {}
    for name in names:
        model = build_model(name, args.seed).to("cuda", dtype=dtype)
        _, inputs = example_inputs(name, args.batch, device="cuda", dtype=dtype, seed=args.seed)
        models[name] = (model, inputs)

    doc = {"device": torch.cuda.get_device_name(), "backend": "pytorch", "torch": torch.__version__,
           "precision": args.dtype, "batch": args.batch, "requests_per_model": args.requests, "policies": []}
    for graphs in graph_modes:
        use_graph = graphs == "graph"
        print(f"peer_bench: preparing {graphs} runners", file=sys.stderr)
        runners = [Runner(n, m, x, use_graph, args.warmup) for n, (m, x) in models.items()]
        for mode in modes:
            run = run_sequential if mode == "sequential" else run_concurrent
            run(runners, args.warmup)  # warm-up round: allocator, clocks, thread start
            start, completions = run(runners, args.requests)
            entry = summarize(f"torch-{mode}-{graphs}", runners, completions, start)
            print(f"peer_bench: {entry['policy']}: {entry['throughput_qps']} qps, "
                  + ", ".join(f"{m['name']} p50 {m['p50_ms']} p99 {m['p99_ms']} ms" for m in entry["models"]),
                  file=sys.stderr)
            doc["policies"].append(entry)
        del runners
        torch.cuda.synchronize()

    if args.loom:
        with open(args.loom) as f:
            loom = json.load(f)
        # ratio > 1: Loom's policy serves more requests per second than that PyTorch run.
        doc["ratios"] = {
            p["policy"]: {t["policy"]: round(p["throughput_qps"] / t["throughput_qps"], 4)
                          for t in doc["policies"] if t["throughput_qps"] > 0}
            for p in loom.get("policies", [])
        }

    text = json.dumps(doc, indent=2)
    if args.json == "-":
        print(text)
    else:
        with open(args.json, "w") as f:
            f.write(text + "\n")
        print(f"peer_bench: wrote {args.json}", file=sys.stderr)


if __name__ == "__main__":
    main()
