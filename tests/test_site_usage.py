"""The reference's "used in" links credit a torch.fx name only where the code really uses it.

The tests that read code run twice: through :mod:`fxsite.sphinx.usage` (what the
site uses) and through sphinx-codeautolink's own analysis, resolved against the
same reference, the way the build links code cells. Where codeautolink misses a
use, the test is a strict xfail naming what it misses: that is why the "used in"
lists come from our analysis and not from codeautolink's data. If a codeautolink
release starts passing one, the xfail turns into a failure, a reminder to look again.
"""

from __future__ import annotations

import textwrap

import pytest
import torch.fx as fx

from fxsite.drift.extract import ROOT, code_cells
from fxsite.sphinx.usage import canonical_names, documented_names, public_members, uses_in_code

# What sphinx-codeautolink 0.19 does not follow (it reads the code statically, looks names
# up in the installed modules and follows return annotations only):
CODEAUTOLINK_MISSES = {
    "test_a_method_is_credited_to_the_class_of_its_receiver":
        "properties have no return annotation to follow: gm.graph.nodes, and the nodes a loop over them yields",
    "test_overriding_a_hook_in_a_subclass_uses_it":
        "a method defined in a subclass is not a use of the hook it overrides; self and super() have no class",
    "test_super_inside_a_subclass_uses_the_base_method": "super() has no class",
    "test_annotated_parameters_type_their_uses": "gm.graph is a property: gm.graph.lint is not followed",
}


def _codeautolink_uses(code: str) -> set[str]:
    """The torch.fx names sphinx-codeautolink links in ``code``, as documented names.

    Resolved against the reference's names plus the aliases the build registers
    (``torch.fx.graph_module.GraphModule`` for classes, from autodoc;
    :func:`~fxsite.sphinx.usage.canonical_names` for members), like the build does.
    """
    from sphinx_codeautolink.extension.resolve import CouldNotResolve, resolve_location
    from sphinx_codeautolink.parse import parse_names

    inventory = {name: name for name in documented_names()} | canonical_names()
    for name in fx.__all__:
        obj = getattr(fx, name)
        if hasattr(obj, "__module__") and hasattr(obj, "__qualname__"):
            inventory[f"{obj.__module__}.{obj.__qualname__}"] = f"torch.fx.{name}"
    found = set()
    for name in parse_names(code, None):
        try:
            location = resolve_location(name, inventory)
        except CouldNotResolve:
            continue
        if location in inventory:
            found.add(inventory[location])
    return found


@pytest.fixture(params=["fxguide", "codeautolink"])
def uses(request):
    """``uses(code)``: the torch.fx names a code block uses, by our analysis or by codeautolink's."""
    if request.param == "codeautolink" and request.node.originalname in CODEAUTOLINK_MISSES:
        request.applymarker(pytest.mark.xfail(strict=True, reason=CODEAUTOLINK_MISSES[request.node.originalname]))
    find = (lambda code: uses_in_code([code])) if request.param == "fxguide" else _codeautolink_uses
    return lambda code: find(textwrap.dedent(code))


def test_names_are_resolved_through_every_import_style(uses):
    assert uses("""
        import torch
        from torch import fx
        from torch.fx import Proxy as P
        torch.fx.wrap("len")
        fx.replace_pattern
        P
    """) == {"torch.fx.wrap", "torch.fx.replace_pattern", "torch.fx.Proxy"}


def test_a_decorator_is_a_use(uses):
    assert uses("""
        import torch

        @torch.fx.wrap
        def noise(x):
            return x
    """) == {"torch.fx.wrap"}


def test_a_method_is_credited_to_the_class_of_its_receiver(uses):
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


def test_common_method_names_on_unknown_values_are_not_credited(uses):
    assert uses("""
        items = []
        items.append(1)
        result = runner.run()
        print(err.args)
    """) == set()


def test_overriding_a_hook_in_a_subclass_uses_it(uses):
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
])
def test_uses_the_reference_once_missed_are_credited(uses, code, credited):
    assert credited in uses(code)


def test_super_inside_a_subclass_uses_the_base_method(uses):
    assert "torch.fx.Tracer.call_module" in uses("""
        import torch.fx as fx
        class Quiet(fx.Tracer):
            def is_leaf_module(self, m, name):
                return super().call_module(m, None, (), {}) is None
    """)


def test_annotated_parameters_type_their_uses(uses):
    assert {"torch.fx.Graph.lint", "torch.fx.Tracer.create_node"} <= uses("""
        import torch.fx as fx
        def passes(gm: fx.GraphModule, /, *, tracer: fx.Tracer = None):
            gm.graph.lint()
            tracer.create_node("output", "output", (), {})
    """)


def test_a_lookalike_outside_torch_fx_is_not_credited(uses):
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


def _guide_sources() -> list[tuple[str, str]]:
    """Every executed page's code (its cells, in order) and every gallery script's."""
    found = [(page.name, "\n".join(c.source for c in code_cells(page) if not c.source.lstrip().startswith("%")))
             for page in sorted((ROOT / "docs").glob("*.md"))]
    found += [(script.name, script.read_text()) for script in sorted((ROOT / "gallery").glob("*.py"))]
    return [(name, code) for name, code in found if code.strip()]


@pytest.mark.slow  # codeautolink's analysis parses the source of every torch module it meets
def test_on_every_page_our_index_finds_what_codeautolink_links():
    """On the guide's real code, every torch.fx function and member codeautolink links is in
    our "used in" data (which finds about twice as many: see CODEAUTOLINK_MISSES).

    Classes are left out: codeautolink links a variable to its class (``show_code(gm)``
    links ``gm`` to ``GraphModule``); the reference credits a class where the code names it.
    """
    classes = {f"torch.fx.{cls.__name__}" for cls in (fx.Graph, fx.Node, fx.GraphModule, fx.Tracer,
                                                      fx.Interpreter, fx.Transformer, fx.Proxy)}
    missing, ours_total, theirs_total = [], 0, 0
    for name, code in _guide_sources():
        ours, theirs = uses_in_code([code]), _codeautolink_uses(code) - classes
        ours_total, theirs_total = ours_total + len(ours), theirs_total + len(theirs)
        missing += [f"{name}: {n}" for n in sorted(theirs - ours)]
    assert missing == [], "codeautolink links these, our index misses them:\n" + "\n".join(missing)
    assert ours_total > theirs_total > 0, (ours_total, theirs_total)


@pytest.mark.xfail(strict=True, reason="sphinx-codeautolink 0.19 reads back from its cache only documents "
                                       "whose source is .rst: a MyST page's data is lost on every rebuild "
                                       "that does not re-read it")
def test_codeautolinks_cache_keeps_the_data_of_a_myst_page(tmp_path):
    from sphinx_codeautolink.extension.cache import DataCache

    source = tmp_path / "docs"
    source.mkdir()
    (source / "page.md").write_text("# A page\n")
    written = DataCache(tmp_path, source)
    written.transforms = {"page": []}
    written.write()
    read = DataCache(tmp_path, source)
    read.read()
    assert "page" in read.transforms


def test_doctest_flags_are_dropped_before_matching_a_doctest_to_its_html():
    from fxsite.sphinx.codelinks import clean_doctest

    shown, code = clean_doctest('>>> get("lenn")  # doctest: +ELLIPSIS\nTraceback (most recent call last):\n...')
    assert shown == '>>> get("lenn")\nTraceback (most recent call last):\n...'  # what Sphinx writes
    assert code.strip() == 'get("lenn")'
