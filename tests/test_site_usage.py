"""The reference's "used in" links credit a torch.fx name only where the code really uses it."""

from __future__ import annotations

import textwrap

import pytest
import torch.fx as fx

from fxsite.sphinx.apiref import page_code
from fxsite.sphinx.usage import documented_names, public_members, uses_in_code


def uses(code: str) -> set[str]:
    return uses_in_code([textwrap.dedent(code)])


def test_names_are_resolved_through_every_import_style():
    assert uses("""
        import torch
        from torch import fx
        from torch.fx import Proxy as P
        torch.fx.wrap("len")
        fx.replace_pattern
        P
    """) == {"torch.fx.wrap", "torch.fx.replace_pattern", "torch.fx.Proxy"}


def test_a_method_is_credited_to_the_class_of_its_receiver():
    found = uses("""
        import torch.fx as fx
        gm = fx.symbolic_trace(lambda x: x)
        graph = gm.graph
        for node in graph.nodes:
            with graph.inserting_after(node):
                new = graph.call_function(abs, (node,))
            node.replace_all_uses_with(new)
            new.append(node)
        gm.recompile()
    """)
    assert {"torch.fx.Graph.inserting_after", "torch.fx.Graph.call_function", "torch.fx.Node.replace_all_uses_with",
            "torch.fx.Node.append", "torch.fx.GraphModule.recompile"} <= found
    assert "torch.fx.Interpreter.call_function" not in found and "torch.fx.Tracer.call_module" not in found


def test_common_method_names_on_unknown_values_are_not_credited():
    assert uses("""
        items = []
        items.append(1)
        result = runner.run()
        print(err.args)
    """) == set()


def test_overriding_a_hook_in_a_subclass_uses_it():
    found = uses("""
        import torch.fx as fx
        class Profiler(fx.Interpreter):
            def run_node(self, n: fx.Node):
                n.format_node()
                return super().run_node(n)
        class Swap(fx.Transformer):
            def call_function(self, target, args, kwargs):
                return self.fetch_attr("x")
    """)
    assert {"torch.fx.Interpreter", "torch.fx.Interpreter.run_node", "torch.fx.Node", "torch.fx.Node.format_node",
            "torch.fx.Transformer", "torch.fx.Transformer.call_function",
            "torch.fx.Interpreter.fetch_attr"} <= found
    assert "torch.fx.Graph.call_function" not in found


def test_cells_that_are_not_python_are_skipped():
    assert uses_in_code(["%timeit 1", "import torch.fx as fx\nfx.map_arg"]) == {"torch.fx.map_arg"}
    with pytest.raises(TypeError, match="list of code blocks"):
        uses_in_code("fx.Graph")


def test_documented_names_cover_all_and_the_six_classes():
    names = documented_names()
    assert {f"torch.fx.{n}" for n in fx.__all__} <= set(names)
    assert "torch.fx.Tracer.create_proxy" in names  # inherited from torch.fx's TracerBase
    assert "torch.fx.GraphModule.eval" not in names  # inherited from nn.Module: not torch.fx's API
    assert "run_node" not in public_members(fx.Transformer)  # documented once, under Interpreter
    assert "transform" in public_members(fx.Transformer)


def test_page_code_reads_each_code_cell_without_its_options():
    page = "# T\n\n```{code-cell} python\n:tags: [raises-exception]\nx = 1\n```\n\ntext\n\n```{code-cell} python\ny = 2\n```\n"
    assert page_code(page) == ["x = 1\n", "y = 2\n"]


# The uses the torch.fx reference once listed as "no executed example uses it yet" (issue 14),
# each written the way a page or gallery script of the guide writes it.
@pytest.mark.parametrize(("code", "credited"), [
    ("""
        import torch.fx as fx
        from fxguide.transforms.replace import SwapOps
        SwapOps(fx.symbolic_trace(model), {}).run(x)
     """, "torch.fx.Interpreter.run"),  # a class from fxguide: its base is looked up in the installed code
    ("""
        from fxguide.transforms.replace import Retarget
        new_gm = Retarget(gm, {}).transform()
     """, "torch.fx.Transformer.transform"),
    ("""
        import torch.fx as fx
        tracer = fx.Tracer()
        tracer.record_stack_traces = True
     """, "torch.fx.Tracer.record_stack_traces"),  # an annotated attribute of TracerBase, assigned to
    ("""
        from fxguide.tracing.tracers import ModulePathTracer
        show_source(ModulePathTracer.call_module, ModulePathTracer.create_node)
     """, "torch.fx.Tracer.create_node"),  # a hook read off a subclass, not an instance
    ("""
        import torch.fx as fx
        class Quiet(fx.Tracer):
            def is_leaf_module(self, m, name):
                return super().call_module(m, None, (), {}) is None
     """, "torch.fx.Tracer.call_module"),  # super() inside a subclass's method
    ("""
        import torch.fx as fx
        args = fx.node.map_arg(node.args, lambda n: env[n])
     """, "torch.fx.map_arg"),  # the home module of a name torch.fx re-exports
    ("""
        from torch.fx.node import map_arg as substitute
        substitute((1,), str)
     """, "torch.fx.map_arg"),
    ("""
        from fxguide.tracing.tracers import ModulePathTracer, trace
        gm = trace(model, tracer=ModulePathTracer())
        gm.recompile()
     """, "torch.fx.GraphModule.recompile"),  # a function's return annotation (-> fx.GraphModule)
    ("""
        import torch.fx as fx
        def passes(*, gm: fx.GraphModule, tracer: fx.Tracer = None):
            gm.graph.lint()
            tracer.create_node("output", "output", (), {})
     """, "torch.fx.Tracer.create_node"),  # annotated keyword-only parameters
])
def test_uses_the_reference_once_missed_are_credited(code, credited):
    assert credited in uses(code)


def test_a_lookalike_outside_torch_fx_is_not_credited():
    found = uses("""
        class Runner:
            def run(self):
                return super().run()
        Runner().run()
        from collections import OrderedDict
        OrderedDict().keys()
        node.op, step.target, record.meta
    """)
    assert found == set(), found


def test_annotated_attributes_count_as_documented_names():
    names = documented_names()
    assert {"torch.fx.Tracer.record_stack_traces", "torch.fx.Node.op", "torch.fx.Node.meta"} <= set(names)
