#!/usr/bin/env python3
"""Host-stage threads against a dialled pre-process cost (issue 16, item 2).

Runs loom-bench on the same workload with one thread per host stage, with a fixed larger count,
and with the automatic re-balancing, at several --pre-process-cost settings, all in one go on the
same machine, each --repeat times (the median run by throughput is reported), and prints a
Markdown table of throughput and p99 with the ratios against one thread per stage, and where the
re-balancing left the threads. Also times the same load with --stage-timing=off, to show what
timing every Step and copy costs.

  bench/stage_threads.py --loom-bench build/release/bin/loom-bench [--device cpu] [--models resnet]
"""
import argparse
import json
import subprocess
import sys


def run(bench, device, models, iterations, concurrency, extra):
    cmd = [bench, f"--device={device}", f"--models={models}", f"--iterations={iterations}",
           f"--concurrency={concurrency}", "--warmUp=200", "--json"] + extra
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=600).stdout
    doc = json.loads(out)
    p99 = max(m["latency_ms"]["p99"] for m in doc["models"])
    stages = {s["name"]: s for s in doc["pipeline"]["stages"]}
    return {
        "qps": doc["throughput_qps"],
        "p99": p99,
        "pre": stages["pre-process"]["threads"],
        "post": stages["post-process"]["threads"],
        "moves": sum(1 for d in doc["pipeline"]["rebalances"] if d["to"]),
        "cmd": " ".join(cmd),
    }


def median_run(args, extra):
    runs = sorted((run(args.loom_bench, args.device, args.models, args.iterations, args.concurrency, extra)
                   for _ in range(args.repeat)), key=lambda r: r["qps"])
    return runs[len(runs) // 2]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--loom-bench", required=True)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--models", default="resnet")
    ap.add_argument("--iterations", type=int, default=300)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--budget", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--costs", default="0,2000:sleep,4000:sleep,2000:spin")
    args = ap.parse_args()

    configs = [
        ("1 + 1 (fixed)", ["--stage-threads=pre-process=1,post-process=1"]),
        (f"{args.budget - 1} + 1 (fixed)", [f"--stage-threads=pre-process={args.budget - 1},post-process=1"]),
        (f"auto (budget {args.budget})", ["--stage-threads=auto", f"--thread-budget={args.budget}"]),
    ]
    print(f"loom-bench --models={args.models}, device {args.device}, closed loop, concurrency {args.concurrency} per "
          f"model, at least {args.iterations} requests per model; median of {args.repeat} runs by throughput\n")
    print("| pre-process cost | threads (pre + post) | throughput (qps) | vs 1 + 1 | worst p99 (ms) | vs 1 + 1 | "
          "threads at the end | thread moves |")
    print("|---|---|---|---|---|---|---|---|")
    for cost in args.costs.split(","):
        extra_cost = [] if cost == "0" else [f"--pre-process-cost={cost}"]
        base = None
        for label, flags in configs:
            r = median_run(args, flags + extra_cost)
            base = base or r
            print(f"| {cost} | {label} | {r['qps']:.1f} | {r['qps'] / base['qps']:.2f}x | {r['p99']:.2f} | "
                  f"{r['p99'] / base['p99']:.2f}x | {r['pre']} + {r['post']} | {r['moves']} |")
            sys.stdout.flush()
    print("\nStage timing (two timed events around every Step and copy), no pre-process cost, 1 + 1 threads:\n")
    print("| --stage-timing | throughput (qps) | vs off | worst p99 (ms) |")
    print("|---|---|---|---|")
    off = median_run(args, ["--stage-timing=off"])
    on = median_run(args, ["--stage-timing=on"])
    for name, r in (("off", off), ("on", on)):
        print(f"| {name} | {r['qps']:.1f} | {r['qps'] / off['qps']:.2f}x | {r['p99']:.2f} |")


if __name__ == "__main__":
    main()
