"""``torch.compile``'s own API: stances, recompilation limits, backends, and what it refuses to compile or to be
traced through.

Each reproduction is a call; its fix returns the compiled result and eager
mode's. Every call starts from ``torch._dynamo.reset()`` so that no compiled
code of another reproduction is reused, and stances are set as context
managers, so a failing one is undone.
"""

import torch
from torch import nn

from fxguide.atlas.repros import fix_of, repro

X = torch.arange(8.0).reshape(2, 4)
WIDER = torch.ones(3, 4)


class Plain(nn.Module):
    def forward(self, x):
        return x + 1


def compiled(model=None, **options):
    """``model`` (default ``Plain``) under ``torch.compile`` on ``aot_eager``, Dynamo's caches emptied."""
    torch._dynamo.reset()
    return torch.compile(model or Plain(), backend="aot_eager", **options)


@repro("Detected recompile when torch.compile stance is 'fail_on_recompile'", tool="torch.compiler.set_stance",
       entry="19c64b7d64", cause="A new input shape needs a new graph, and the stance forbids compiling one.")
def recompile_forbidden():
    model = compiled()
    model(X)
    with torch.compiler.set_stance("fail_on_recompile"):
        model(WIDER)


@fix_of(recompile_forbidden)
def warm_up_every_shape():
    """Call the model on every shape it will see before forbidding recompiles."""
    model = compiled()
    model(X)
    model(WIDER)
    with torch.compiler.set_stance("fail_on_recompile"):
        return model(WIDER), Plain()(WIDER)


@repro("invalid torch.compile stance", tool="torch.compiler.set_stance", entry="1f8ed7a889",
       cause="set_stance takes one of torch's stance names (default, force_eager, eager_on_recompile, "
             "fail_on_recompile).")
def unknown_stance():
    model = compiled()
    with torch.compiler.set_stance("eager_always"):
        model(X)


@fix_of(unknown_stance)
def force_eager_stance():
    model = compiled()
    with torch.compiler.set_stance("force_eager"):
        return model(X), Plain()(X)


@repro("Attempt to trace forbidden callable (set_stance inside the compiled code)", tool="torch.compile",
       entry="3c9094a9e0", cause="set_stance changes how torch.compile runs; it cannot be called from compiled code.")
def stance_inside_compiled():
    def step(x):
        torch.compiler.set_stance("force_eager")
        return x + 1
    compiled(step)(X)


@fix_of(stance_inside_compiled)
def stance_around_compiled():
    model = compiled()
    with torch.compiler.set_stance("force_eager"):
        return model(X), Plain()(X)


@repro("torch.compile does not support compiling torch.jit.script models directly", tool="torch.compile",
       entry="017cc56fae", cause="A ScriptModule is TorchScript, not Python code Dynamo can trace.")
def compile_script_module():
    compiled(torch.jit.script(Plain()))(X)


@fix_of(compile_script_module)
def compile_python_module():
    return compiled(Plain())(X), Plain()(X)


@repro("Invalid backend", tool="torch.compile(backend=...)", entry="630e9fd33e",
       cause="The backend name is not registered (torch._dynamo.list_backends() lists those that are).")
def unknown_backend():
    torch._dynamo.reset()
    torch.compile(Plain(), backend="aot_eagre")(X)


@fix_of(unknown_backend)
def known_backend():
    return compiled()(X), Plain()(X)


def add_number(x, n):
    return x + n


@repro("FailOnRecompileLimitHit: Hard failure due to fail_on_recompile_limit_hit", tool="torch.compile",
       entry="e682f4a7b7", cause="A Python number argument is specialised: every new value compiles a new graph, "
       "until the recompile limit.")
def recompile_limit():
    with torch._dynamo.config.patch(recompile_limit=1, fail_on_recompile_limit_hit=True):
        add = compiled(add_number, dynamic=False)
        for n in range(3):
            add(X, n)


@fix_of(recompile_limit)
def number_as_tensor():
    """Pass the changing number as a tensor: one graph for every value."""
    with torch._dynamo.config.patch(recompile_limit=1, fail_on_recompile_limit_hit=True):
        add = compiled(add_number, dynamic=False)
        got = [add(X, torch.tensor(n)) for n in range(3)]
    return got, [add_number(X, n) for n in range(3)]


@repro("Module [OptimizedModule] is missing the required \"forward\" function", tool="symbolic_trace(compiled)",
       entry="", cause="symbolic_trace was given the compiled wrapper; FX traces Python modules.")
def trace_compiled_module():
    torch.fx.symbolic_trace(compiled())


@fix_of(trace_compiled_module)
def trace_original_module():
    """Trace the module itself (a compiled module keeps it as _orig_mod)."""
    return torch.fx.symbolic_trace(compiled()._orig_mod)(X), Plain()(X)
