#!/usr/bin/env python3
"""CPU stream shares against one Step at a time (issue 18, item 2; docs/cpu-threads.md): loom-bench
--compare on the default workload (resnet, bert, lstm at once, closed loop) with --cpu-threads T,
once without and once with --cpu-stream-shares, repeated --rounds times with the two modes
interleaved, because a shared machine drifts by tens of percent between runs seconds apart. Each
figure is the median over rounds; the ratio columns are shares / without, per policy (throughput:
above 1 is shares faster; the worst model's p99 latency: below 1 is shares faster).

Usage:
  bench/cpu_stream_shares.py --loom-bench build/release/bin/loom-bench [--threads 2] [--rounds 3] \\
      [--duration 2] [--concurrency 1] [--markdown FILE]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys


def run(loom_bench, threads, shares, duration, concurrency):
    command = [loom_bench, "--device", "cpu", "--cpu-threads", str(threads), "--compare", "--json",
               "--duration", str(duration), "--iterations", "10", "--concurrency", str(concurrency)]
    if shares:
        command.append("--cpu-stream-shares")
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"cpu_stream_shares: loom-bench failed:\n{done.stderr}")
    return {p["policy"]: p for p in json.loads(done.stdout)["policies"]}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--loom-bench", required=True)
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=float, default=2.0, help="seconds measured per policy and mode")
    parser.add_argument("--concurrency", type=int, default=1, help="requests outstanding per model")
    parser.add_argument("--markdown", help="also write the table to this file")
    args = parser.parse_args()

    runs = {False: [], True: []}
    for round_index in range(args.rounds):
        for shares in (False, True):
            result = run(args.loom_bench, args.threads, shares, args.duration, args.concurrency)
            runs[shares].append(result)
            print(f"round {round_index + 1}, {'shares' if shares else 'one Step at a time'}: " +
                  ", ".join(f"{name} {p['throughput_qps']:.1f} qps" for name, p in result.items()), flush=True)

    def median(shares, policy, field):
        return statistics.median(r[policy][field] for r in runs[shares])

    def p99(shares, policy):
        return statistics.median(max(m["p99_ms"] for m in r[policy]["models"]) for r in runs[shares])

    policies = list(runs[False][0].keys())
    lines = [f"loom-bench --compare, default workload, --cpu-threads {args.threads}, concurrency "
             f"{args.concurrency}, {args.duration:g} s per policy; median of {args.rounds} rounds (modes "
             "interleaved); ratio = with shares / without.", "",
             "| policy | qps without | qps shares | ratio | worst p99 without (ms) | worst p99 shares (ms) | ratio | "
             "busy without | busy shares |",
             "|---|---|---|---|---|---|---|---|---|"]
    for policy in policies:
        q0, q1 = median(False, policy, "throughput_qps"), median(True, policy, "throughput_qps")
        l0, l1 = p99(False, policy), p99(True, policy)
        b0, b1 = median(False, policy, "busy_percent"), median(True, policy, "busy_percent")
        lines.append(f"| {policy} | {q0:.1f} | {q1:.1f} | {q1 / q0:.2f}× | {l0:.2f} | {l1:.2f} | {l1 / l0:.2f}× | "
                     f"{b0:.0f}% | {b1:.0f}% |")
    table = "\n".join(lines)
    print(table)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(table + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
