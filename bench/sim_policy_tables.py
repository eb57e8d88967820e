#!/usr/bin/env python3
"""Every policy on every workload in bench/workloads, on the accelerator and on the GPU model.

Usage: python3 bench/sim_policy_tables.py LOOM_SIM [EXTRA_WORKLOAD.json ...]

Runs `loom-sim --workload F --compare --json` (with `--device-model gpu --gpu G` for the GPU
model) and prints Markdown tables: makespans, idle-time over the best baseline, per-model p99;
then idle-time over the best baseline on every shipped GPU. Run from the repository root.
Standard library only.
"""
import glob
import json
import os
import subprocess
import sys

GPUS = ["h100-sxm", "h100-pcie", "h200", "a100-sxm", "l4"]


def compare(sim, workload, gpu=None):
    command = [sim, "--workload", workload, "--compare", "--json"]
    if gpu:
        command += ["--device-model", "gpu", "--gpu", gpu]
    result = json.loads(subprocess.check_output(command))
    return {p["policy"]: p for p in result["policies"]}


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    sim = sys.argv[1]
    workloads = sorted(glob.glob("bench/workloads/*.json")) + sys.argv[2:]
    lines = []
    for gpu in [None, "h100-sxm"]:
        lines.append("\n### " + ("The source text's accelerator" if gpu is None else "GPU model, " + gpu) + "\n")
        lines.append("| workload | lower bound | fifo | round-robin | streams | idle-time | idle-time / best baseline "
                     "| p99 per model: idle-time / fifo |")
        lines.append("|---|---|---|---|---|---|---|---|")
        for workload in workloads:
            p = compare(sim, workload, gpu)
            p99 = " ; ".join(f"{m} {p['idle-time']['p99_us'][m]:.1f} / {p['fifo']['p99_us'][m]:.1f}"
                             for m in p["fifo"]["p99_us"])
            cells = [os.path.basename(workload), f"{p['fifo']['lower_bound_us']:.1f}"]
            cells += [f"{p[name]['makespan_us']:.1f}" for name in ["fifo", "round-robin", "streams", "idle-time"]]
            cells += [f"**{p['idle-time']['vs_best_baseline']:.3f}**", p99]
            lines.append("| " + " | ".join(cells) + " |")
    lines.append("\n### idle-time / best baseline on every shipped GPU\n")
    lines.append("| workload | " + " | ".join(GPUS) + " |")
    lines.append("|---|" + "---|" * len(GPUS))
    for workload in workloads:
        ratios = [f"{compare(sim, workload, gpu)['idle-time']['vs_best_baseline']:.3f}" for gpu in GPUS]
        lines.append(f"| {os.path.basename(workload)} | " + " | ".join(ratios) + " |")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
