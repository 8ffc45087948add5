"""Peak memory of a diagnosis against each of its tools run alone, as shares of the model's weights.

``python -m fxsite.bench.diagnose_memory [--layers N]`` builds a Llama from a config with
random weights (float32, CPU; 18 layers of width 1024 is about 300 M parameters), and in a
fresh process for each measurement: builds it, reads the resident memory, then runs one tool
alone (its capture on the example and one call on a second input) or the whole diagnosis
(:func:`fxguide.diagnose.examine`), and reads the process's peak resident memory. Each
figure is (peak - resident memory after the build) / bytes of the weights. A diagnosis
should add at most 0.25 x the weights beyond its hungriest tool.

This is a measurement, not a test: run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys

TOOLS = ("symbolic_trace", "concrete_trace", "export_strict", "export", "export_dynamic_batch", "compile_fullgraph")


def _build(layers: int):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    config = LlamaConfig(hidden_size=1024, intermediate_size=2816, num_hidden_layers=layers, num_attention_heads=16,
                         num_key_value_heads=16, vocab_size=32000)
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).eval()
    ids = torch.randint(0, 32000, (1, 16))
    return model, ((ids,), {})


def _rss_bytes() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def measure_one(what: str, layers: int) -> dict[str, float]:
    """In this process: build the model, run ``what`` (a tool, or ``diagnosis``), and return the figures."""
    import torch
    from fxguide.diagnose import examine, run_tool
    from fxguide.diagnose.compare import like
    model, example = _build(layers)
    weights = sum(p.numel() * p.element_size() for p in model.parameters())
    base = _rss_bytes()
    if what == "diagnosis":
        examine(model, example, tools=list(TOOLS), timeout=3000)
    else:
        other = like(example, 1)
        with torch.no_grad():
            eager = model(*other[0])
        run_tool(what, model, example, other, eager, timeout=3000)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {"params": sum(p.numel() for p in model.parameters()), "weights_gib": weights / 2**30,
            "added_share": (peak - base) / weights}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fxsite.bench.diagnose_memory", description=__doc__.split("\n")[0])
    parser.add_argument("--layers", type=int, default=18, help="decoder layers (18: about 300 M parameters)")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.one:
        print(json.dumps(measure_one(options.one, options.layers)))
        return 0
    figures = {}
    for what in (*TOOLS, "diagnosis"):
        done = subprocess.run([sys.executable, "-m", "fxsite.bench.diagnose_memory", "--layers", str(options.layers),
                               "--one", what], capture_output=True, text=True)
        lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
        if done.returncode or not lines:
            print(f"{what}: failed: {done.stderr.strip().splitlines()[-1:]}")
            continue
        figures[what] = json.loads(lines[-1])
        print(f"{what:22} adds {figures[what]['added_share']:.2f} x the weights "
              f"({figures[what]['params'] / 1e6:.0f} M parameters, {figures[what]['weights_gib']:.2f} GiB)", flush=True)
    tools = [f["added_share"] for w, f in figures.items() if w != "diagnosis"]
    if tools and "diagnosis" in figures:
        beyond = figures["diagnosis"]["added_share"] - max(tools)
        print(f"diagnosis beyond its hungriest tool: {beyond:.2f} x the weights")
    return 0


if __name__ == "__main__":
    sys.exit(main())
