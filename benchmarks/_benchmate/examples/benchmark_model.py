"""benchit from a program of your own: build and time a model you hold, with benchit's cache and
statistics. Needs the `benchit` program (on PATH, or named by $BENCHIT_BIN) and torch, onnx and
onnxruntime in this interpreter (benchit's own environment has them all).

    python benchmarks/_benchmate/examples/benchmark_model.py

The last line printed is a JSON summary (used by `cargo xtask e2e`).
"""

import json

import torch

from benchmate.benchit.api import benchmark_model


def main():
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)
    ).eval()
    batch = torch.rand(8, 64)
    result = benchmark_model(model, (batch,), runtimes=["ort", "torch-eager"], iterations=50,
                             batch_size=len(batch))
    source = "the cache" if result.reused else "a new build"
    print(f"model {result.model_hash}, invocation {result.invocation_hash}, from {source}")
    for name, timing in result.runtimes.items():
        if timing.ok:
            print(f"  {name:12} {timing.mean_ms:.4f} ms (95% CI {timing.ci95_low_ms:.4f}-"
                  f"{timing.ci95_high_ms:.4f}), {timing.throughput:,.0f} samples/s")
        else:
            print(f"  {name:12} FAILED: {timing.message}")
    print(json.dumps({"model_hash": result.model_hash, "ok": result.ok, "reused": result.reused,
                      "mean_ms": {name: t.mean_ms for name, t in result.runtimes.items()}}))


if __name__ == "__main__":
    main()
