#!/usr/bin/env python3
"""PyTorch's decoding loop for loom_decode_bench (issue 6, item 5): nn.LSTM / nn.GRU stepped one
token at a time from a Python loop on the GPU, microseconds per step over the same batch x hidden x
dtype sweep, printed as JSON rows in loom_decode_bench's format so the two documents merge.

Columns (us_per_step):
  pytorch_eager           one module call per token (seqLength 1), queued without host syncs;
  pytorch_graph_step      one CUDA graph of one step, replayed per token (input copied in first);
  pytorch_graph_sequence  one CUDA graph of the whole unrolled loop, replayed once per sample.
--kind greedy adds the embedding, output projection and argmax fed back to every step, as
loom_decode_bench --kind greedy does (no end token: every row runs the full length).

    python3 scripts/pytorch/decode_baseline.py --cell lstm --batch 1,8,64 --hidden 128,1024,2048 \\
        --steps 64 --dtype f16 --merge loom_decode.json --json merged.json
"""

import argparse
import json
import statistics
import sys
import time

import torch
from torch import nn


def int_list(text):
    return [int(v) for v in text.split(",") if v]


def median_seconds(run, warmup, repeats):
    """Median wall time of `run()` followed by a device synchronisation."""
    for _ in range(warmup):
        run()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


class Decoder:
    """The cells (and, for greedy, embedding and projection) with static buffers for one sample."""

    def __init__(self, cell, kind, layers, hidden, batch, steps, vocab, dtype):
        rnn_type = nn.LSTM if cell == "lstm" else nn.GRU
        self.lstm = cell == "lstm"
        self.greedy = kind == "greedy"
        self.rnn = rnn_type(hidden, hidden, num_layers=layers).to("cuda", dtype=dtype).eval()
        self.steps = steps
        # Static state buffers: what a graph of one step reads and overwrites in place. Eager steps
        # rebind the state instead, as a plain framework decoding loop does.
        self.h = torch.zeros(layers, batch, hidden, device="cuda", dtype=dtype)
        self.c = torch.zeros_like(self.h)
        self.state = None
        if self.greedy:
            self.embedding = nn.Embedding(vocab, hidden).to("cuda", dtype=dtype)
            self.projection = nn.Linear(hidden, vocab).to("cuda", dtype=dtype)
            self.first = torch.randint(0, vocab, (batch,), device="cuda")
            self.tokens = torch.empty(steps, batch, dtype=torch.int64, device="cuda")
            self.token_buffer = self.first.clone()  # the static step's input token, fed back
            self.token = self.first
        else:
            self.x = torch.rand(steps, batch, hidden, device="cuda", dtype=dtype) * 2 - 1
            self.y = torch.empty(steps, batch, hidden, device="cuda", dtype=dtype)
            self.x_step = self.x[0:1].clone()  # the static step's one-token input

    def reset(self):
        self.h.zero_()
        self.c.zero_()
        self.state = (self.h, self.c) if self.lstm else self.h
        if self.greedy:
            self.token_buffer.copy_(self.first)
            self.token = self.first

    def step(self, t, x, static):
        """One token. static: reads and overwrites the static buffers (for a graph of one step)."""
        if self.greedy:
            x = self.embedding(self.token_buffer if static else self.token).unsqueeze(0)
        state = ((self.h, self.c) if self.lstm else self.h) if static else self.state
        out, new_state = self.rnn(x, state)
        if static and self.lstm:
            self.h.copy_(new_state[0])
            self.c.copy_(new_state[1])
        elif static:
            self.h.copy_(new_state)
        else:
            self.state = new_state
        if self.greedy:
            token = self.projection(out[0]).argmax(dim=-1)
            if static:
                self.token_buffer.copy_(token)
            else:
                self.token = token
            self.tokens[t].copy_(token)
        else:
            self.y[t].copy_(out[0])

    def sample_eager(self):
        self.reset()
        for t in range(self.steps):
            self.step(t, None if self.greedy else self.x[t:t + 1], static=False)

    def capture_step(self):
        """One graph of one step (writing row 0 of the outputs; the rows do not change its cost)."""
        self.reset()
        self._warm_up(lambda: self.step(0, None if self.greedy else self.x_step, static=True))
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            self.step(0, None if self.greedy else self.x_step, static=True)
        return graph

    def capture_sequence(self):
        self._warm_up(self.sample_eager)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            self.sample_eager()
        return graph

    def sample_graph_step(self, graph):
        self.reset()
        for t in range(self.steps):
            if not self.greedy:
                self.x_step.copy_(self.x[t:t + 1])
            graph.replay()

    @staticmethod
    def _warm_up(run):
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                run()
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()


def measure_row(args, dtype, hidden, batch):
    decoder = Decoder(args.cell, args.kind, args.layers, hidden, batch, args.steps, args.vocab, dtype)
    per_step = 1e6 / args.steps
    row = {"batch": batch, "hidden": hidden, "us_per_step": {}}
    with torch.inference_mode():
        if "eager" in args.methods:
            row["us_per_step"]["pytorch_eager"] = per_step * median_seconds(
                decoder.sample_eager, args.warmup, args.repeats)
        if "graph_step" in args.methods:
            try:
                graph = decoder.capture_step()
                row["us_per_step"]["pytorch_graph_step"] = per_step * median_seconds(
                    lambda: decoder.sample_graph_step(graph), args.warmup, args.repeats)
            except RuntimeError as e:  # a column missing beats a sweep lost
                print(f"decode_baseline: graph_step capture failed: {e}", file=sys.stderr)
        if "graph_sequence" in args.methods:
            try:
                graph = decoder.capture_sequence()
                row["us_per_step"]["pytorch_graph_sequence"] = per_step * median_seconds(
                    graph.replay, args.warmup, args.repeats)
            except RuntimeError as e:
                print(f"decode_baseline: graph_sequence capture failed: {e}", file=sys.stderr)
    return row


def merge(loom_doc, rows):
    """Adds our columns to the loom_decode_bench rows of the same batch and hidden, and the ratios
    pytorch_eager/persistent and pytorch_graph_step/persistent where both are present."""
    by_key = {(r["batch"], r["hidden"]): r for r in rows}
    for row in loom_doc.get("rows", []):
        ours = by_key.get((row["batch"], row["hidden"]))
        if not ours:
            continue
        row["us_per_step"].update(ours["us_per_step"])
        persistent = row["us_per_step"].get("persistent")
        if persistent:
            ratios = row.setdefault("ratios", {})
            for name in ("pytorch_eager", "pytorch_graph_step"):
                if name in row["us_per_step"]:
                    ratios[f"{name}/persistent"] = row["us_per_step"][name] / persistent
    return loom_doc


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cell", choices=["lstm", "gru"], default="lstm")
    parser.add_argument("--kind", choices=["recurrent", "greedy"], default="recurrent")
    parser.add_argument("--batch", type=int_list, default=[1, 8, 64])
    parser.add_argument("--hidden", type=int_list, default=[128, 1024, 2048])
    parser.add_argument("--steps", type=int, default=64)
    parser.add_argument("--dtype", choices=["f16", "f32"], default="f16")
    parser.add_argument("--layers", type=int, default=1)
    parser.add_argument("--vocab", type=int, default=1000, help="--kind greedy only")
    parser.add_argument("--methods", default="eager,graph_step,graph_sequence")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--merge", help="a loom_decode_bench --json document to add these columns to")
    parser.add_argument("--json", default="-", help="output file, - for stdout (default)")
    args = parser.parse_args()
    args.methods = args.methods.split(",")
    unknown = set(args.methods) - {"eager", "graph_step", "graph_sequence"}
    if unknown:
        parser.error(f"--methods: unknown {', '.join(sorted(unknown))}")
    if not torch.cuda.is_available():
        sys.exit("decode_baseline: needs a CUDA GPU")

    torch.manual_seed(args.seed)
    torch.backends.cudnn.benchmark = False
    dtype = torch.float16 if args.dtype == "f16" else torch.float32
    rows = []
    for hidden in args.hidden:  # hidden-major, as loom_decode_bench orders its rows
        for batch in args.batch:
            print(f"decode_baseline: batch {batch} hidden {hidden}", file=sys.stderr)
            rows.append(measure_row(args, dtype, hidden, batch))
            print("decode_baseline:   " + ", ".join(f"{k} {v:.2f} us/step" for k, v in rows[-1]["us_per_step"].items()),
                  file=sys.stderr)

    doc = {"device": torch.cuda.get_device_name(), "backend": "pytorch", "torch": torch.__version__,
           "dtype": args.dtype, "cell": args.cell, "kind": args.kind, "steps": args.steps, "layers": args.layers,
           "rows": rows}
    if args.merge:
        with open(args.merge) as f:
            doc = merge(json.load(f), rows)
        doc["pytorch"] = {"torch": torch.__version__, "device": torch.cuda.get_device_name()}
    text = json.dumps(doc, indent=2)
    if args.json == "-":
        print(text)
    else:
        with open(args.json, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
