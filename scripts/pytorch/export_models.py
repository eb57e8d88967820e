#!/usr/bin/env python3
"""Exports the PyTorch half of issue 5's peer workload to ONNX (opset 17), so that Loom and PyTorch
run the same networks: torchvision ResNet-50, a BERT-base encoder built from its config with
transformers, and a 2-layer nn.LSTM of hidden 1024 over 64 steps. Weights are random but seeded:
peer_bench.py builds the same modules with the same seed, so both sides hold identical weights.

    python3 scripts/pytorch/export_models.py --out build/pytorch-models --batch 1

Writes <out>/resnet50.onnx, bert_base.onnx, lstm_2x1024.onnx and <out>/models.json (each file's inputs
and the loom-bench flags that bind them). Needs torch, torchvision, transformers and onnx.
"""

import argparse
import json
import os
import sys

import torch
from torch import nn

MODEL_NAMES = ("resnet50", "bert_base", "lstm_2x1024")  # also the ONNX file stems: loom-bench's model names
BERT_SEQ = 128
BERT_VOCAB = 30522  # BertConfig's default vocabulary (bert-base-uncased)
LSTM_HIDDEN = 1024
LSTM_LAYERS = 2
LSTM_SEQ = 64


class BertEncoder(nn.Module):
    """BertModel returning only the last hidden state, so the graph has one plain output."""

    def __init__(self):
        super().__init__()
        from transformers import AutoModel, BertConfig

        config = BertConfig()  # bert-base: 12 layers, hidden 768, 12 heads, ff 3072
        try:  # eager attention exports to plain MatMul/Softmax on every transformers version
            self.bert = AutoModel.from_config(config, attn_implementation="eager")
        except TypeError:
            self.bert = AutoModel.from_config(config)

    def forward(self, input_ids, attention_mask):
        return self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state


class LstmStack(nn.Module):
    """nn.LSTM with its output sequence as the only output (time-major [seq, batch, hidden])."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(LSTM_HIDDEN, LSTM_HIDDEN, num_layers=LSTM_LAYERS)

    def forward(self, x):
        y, _ = self.lstm(x)
        return y


def build_model(name, seed):
    """The module `name` with weights drawn from `seed`, in eval mode, on the CPU."""
    torch.manual_seed(seed)
    if name == "resnet50":
        import torchvision

        model = torchvision.models.resnet50(weights=None)
    elif name == "bert_base":
        model = BertEncoder()
    elif name == "lstm_2x1024":
        model = LstmStack()
    else:
        raise ValueError(f"unknown model {name!r}; expected one of {', '.join(MODEL_NAMES)}")
    return model.eval()


def example_inputs(name, batch, device="cpu", dtype=torch.float32, seed=0):
    """Inputs of one request: (names, tensors). Token ids and masks stay int64."""
    generator = torch.Generator(device="cpu").manual_seed(seed)
    if name == "resnet50":
        x = torch.randn(batch, 3, 224, 224, generator=generator)
        return ["images"], [x.to(device=device, dtype=dtype)]
    if name == "bert_base":
        ids = torch.randint(0, BERT_VOCAB, (batch, BERT_SEQ), generator=generator)
        mask = torch.ones(batch, BERT_SEQ, dtype=torch.int64)
        return ["input_ids", "attention_mask"], [ids.to(device), mask.to(device)]
    if name == "lstm_2x1024":
        x = torch.randn(LSTM_SEQ, batch, LSTM_HIDDEN, generator=generator)
        return ["x"], [x.to(device=device, dtype=dtype)]
    raise ValueError(f"unknown model {name!r}")


def output_names(name):
    return {"resnet50": ["logits"], "bert_base": ["last_hidden_state"], "lstm_2x1024": ["y"]}[name]


def dynamic_axes(name):
    if name == "resnet50":
        return {"images": {0: "batch"}, "logits": {0: "batch"}}
    if name == "bert_base":
        return {"input_ids": {0: "batch"}, "attention_mask": {0: "batch"}, "last_hidden_state": {0: "batch"}}
    return {"x": {1: "batch"}, "y": {1: "batch"}}


def loom_bench_flags(name, path):
    """The loom-bench flags that run this file (its symbolic dims are named batch: --batch binds them)."""
    flags = [f"--onnx={path}"]
    if name == "bert_base":
        flags += ["--input-range=input_ids:0,30522", "--input-range=attention_mask:1,2"]
    return flags


def export(model, inputs, path, names, outputs, axes, opset):
    """Writes the ONNX file; returns the exporter used ("torchscript" or "dynamo")."""
    # The TorchScript exporter keeps nn.LSTM as ONNX LSTM ops (what Loom's device loops take over)
    # and writes opset 17 directly. Newer torch defaults to the dynamo exporter, which unrolls the
    # LSTM into plain ops; it is the fallback where the TorchScript one is gone or fails.
    kwargs = dict(input_names=names, output_names=outputs, dynamic_axes=axes, opset_version=opset,
                  do_constant_folding=True)
    try:
        torch.onnx.export(model, tuple(inputs), path, dynamo=False, **kwargs)
        return "torchscript"
    except TypeError as e:
        if "dynamo" not in str(e):
            raise
        torch.onnx.export(model, tuple(inputs), path, **kwargs)  # a torch older than the switch
        return "torchscript"
    except Exception as e:  # noqa: BLE001 — any failure of the old exporter: try the new one
        print(f"export_models: TorchScript exporter failed ({e!r}); trying dynamo=True", file=sys.stderr)
        kwargs.pop("do_constant_folding")
        torch.onnx.export(model, tuple(inputs), path, dynamo=True, **kwargs)
        return "dynamo"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="build/pytorch-models", help="output folder (default %(default)s)")
    parser.add_argument("--batch", type=int, default=1, help="batch of the example inputs (the batch axis stays "
                        "symbolic in the files; default %(default)s)")
    parser.add_argument("--models", default=",".join(MODEL_NAMES), help="comma list (default %(default)s)")
    parser.add_argument("--opset", type=int, default=17)
    parser.add_argument("--seed", type=int, default=1, help="weight seed; peer_bench.py must use the same")
    args = parser.parse_args()

    os.makedirs(args.out, exist_ok=True)
    manifest = {"opset": args.opset, "seed": args.seed, "batch": args.batch, "torch": torch.__version__, "models": []}
    for name in args.models.split(","):
        model = build_model(name, args.seed)
        names, inputs = example_inputs(name, args.batch)
        path = os.path.join(args.out, f"{name}.onnx")
        print(f"export_models: {name} -> {path}", file=sys.stderr)
        with torch.no_grad():
            exporter = export(model, inputs, path, names, output_names(name), dynamic_axes(name), args.opset)
        import onnx

        onnx.checker.check_model(path)
        manifest["models"].append({
            "name": name,
            "file": path,
            "exporter": exporter,
            "inputs": {n: {"shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", "")}
                       for n, t in zip(names, inputs)},
            "loom_bench_flags": loom_bench_flags(name, path),
        })
    with open(os.path.join(args.out, "models.json"), "w") as f:
        json.dump(manifest, f, indent=2)
    flags = " ".join(flag for m in manifest["models"] for flag in m["loom_bench_flags"])
    print(f"export_models: wrote {args.out}/models.json\nloom-bench {flags} --batch={args.batch} --compare --json",
          file=sys.stderr)


if __name__ == "__main__":
    main()
