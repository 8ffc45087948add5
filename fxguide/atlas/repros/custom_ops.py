"""Custom-op registration (``torch.library``): schemas inferred from annotations or written by hand, ops defined
twice, outputs that alias inputs, fake kernels, backward formulas, and ``opcheck``'s checks.

Most of these messages are raised when an op is defined or checked, not when a
model is captured: each reproduction is a call, and its fix defines the op the
way torch expects and returns the op's output (through ``torch.compile`` where
that is the point) with eager mode's.
"""

import itertools

import torch
from torch.library import custom_op, opcheck

from fxguide.atlas.repros import fix_of, repro

X = torch.arange(8.0).reshape(2, 4)
_names = itertools.count()


def fresh(name: str) -> str:
    """A namespaced op name not used before in this process (an op may be defined once only)."""
    return f"fxguide_repros::{name}_{next(_names)}"


def compiled(fn, *args):
    """``fn`` through ``torch.compile(fullgraph=True)`` on ``aot_eager``."""
    torch._dynamo.reset()
    return torch.compile(fn, fullgraph=True, backend="aot_eager")(*args)


@repro("infer_schema: Parameter has unsupported type / missing annotation", tool="torch.library.custom_op",
       entry="3671bd7f4f", cause="custom_op infers the schema from type annotations; a parameter without one has no type.")
def unannotated_parameter():
    @custom_op(fresh("scale"), mutates_args=())
    def scale(x, factor: float) -> torch.Tensor:
        return x * factor


@fix_of(unannotated_parameter)
def annotated_parameter():
    @custom_op(fresh("scale"), mutates_args=())
    def scale(x: torch.Tensor, factor: float) -> torch.Tensor:
        return x * factor
    return scale(X, 2.0), X * 2.0


@repro("infer_schema: unsupported return type", tool="torch.library.custom_op", entry="b5bbb9f751",
       cause="A custom op returns tensors (or ints, floats...), not a dict.")
def dict_return():
    @custom_op(fresh("halves"), mutates_args=())
    def halves(x: torch.Tensor) -> dict:
        return {"a": x / 2}


@fix_of(dict_return)
def tuple_return():
    @custom_op(fresh("halves"), mutates_args=())
    def halves(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return x / 2, x / 2
    return halves(X), (X / 2, X / 2)


LIBRARY = torch.library.Library("fxguide_repros", "FRAGMENT")
LIBRARY.define("twice(Tensor x) -> Tensor")
LIBRARY.impl("twice", lambda x: x * 2, "CompositeExplicitAutograd")


@repro("an op defined twice", tool="torch.library.Library.define", entry="",
       cause="The op's name is taken (re-running a cell, or a module imported twice under two names).",
       says=r"Tried to register an operator \([^\n]{0,300}?\) with the same name and overload name")
def defined_twice():
    LIBRARY.define("twice(Tensor x) -> Tensor")


@fix_of(defined_twice)
def reuse_defined_op():
    """Define each op once, at module level, and call it through torch.ops."""
    return torch.ops.fxguide_repros.twice(X), X * 2


@repro("an output that aliases an input", tool="custom op call", entry="4a28042bad",
       cause="A custom op may not return one of its inputs (or a view of it); return a new tensor.")
def output_aliases_input():
    @custom_op(fresh("identity"), mutates_args=())
    def identity(x: torch.Tensor) -> torch.Tensor:
        return x
    identity(X)


@fix_of(output_aliases_input)
def output_cloned():
    @custom_op(fresh("identity"), mutates_args=())
    def identity(x: torch.Tensor) -> torch.Tensor:
        return x.clone()
    return identity(X), X


@repro("opcheck: undeclared mutation of an argument", tool="opcheck", entry="",
       cause="The op writes into an argument it did not list in mutates_args.",
       says=r"Argument \w+ is not defined as mutable but was mutated")
def undeclared_mutation():
    @custom_op(fresh("add_one"), mutates_args=())
    def add_one(x: torch.Tensor) -> torch.Tensor:
        x.add_(1)
        return x.clone()

    @add_one.register_fake
    def _(x):
        return torch.empty_like(x)
    opcheck(add_one, (X.clone(),))


@fix_of(undeclared_mutation)
def declared_mutation():
    @custom_op(fresh("add_one"), mutates_args=("x",))
    def add_one(x: torch.Tensor) -> None:
        x.add_(1)
    opcheck(add_one, (X.clone(),))
    y = X.clone()
    add_one(y)
    return y, X + 1


@repro("opcheck: fake kernel returns the wrong shape", tool="opcheck", entry="",
       cause="The fake kernel says the output has another shape than the real kernel returns.",
       says=r"test_faketensor failed with When comparing the output of \S+ on FakeTensor and concrete Tensors")
def wrong_fake_shape():
    @custom_op(fresh("first_row"), mutates_args=())
    def first_row(x: torch.Tensor) -> torch.Tensor:
        return x[0].clone()

    @first_row.register_fake
    def _(x):
        return torch.empty_like(x)
    opcheck(first_row, (X,))


@fix_of(wrong_fake_shape)
def right_fake_shape():
    @custom_op(fresh("first_row"), mutates_args=())
    def first_row(x: torch.Tensor) -> torch.Tensor:
        return x[0].clone()

    @first_row.register_fake
    def _(x):
        return x.new_empty(x.shape[1:])
    opcheck(first_row, (X,))
    return compiled(first_row, X), X[0]


@repro("There was no fake impl registered (export)", tool="torch.export.export", entry="f5bfe55476",
       cause="export traces with fake tensors: a custom op needs a fake kernel to say its output's shape.")
def export_without_fake():
    @custom_op(fresh("plus"), mutates_args=())
    def plus(x: torch.Tensor) -> torch.Tensor:
        return x + 1

    class UsesOp(torch.nn.Module):
        def forward(self, x):
            return plus(x)
    torch.export.export(UsesOp(), (X,))


@fix_of(export_without_fake)
def export_with_fake():
    @custom_op(fresh("plus"), mutates_args=())
    def plus(x: torch.Tensor) -> torch.Tensor:
        return x + 1

    @plus.register_fake
    def _(x):
        return torch.empty_like(x)

    class UsesOp(torch.nn.Module):
        def forward(self, x):
            return plus(x)
    return torch.export.export(UsesOp(), (X,)).module()(X), X + 1


@repro("register_autograd: no backward for an op that needs grad", tool="custom op backward", entry="9bd0789131",
       cause="A custom op without register_autograd cannot be differentiated.")
def backward_without_autograd():
    @custom_op(fresh("square"), mutates_args=())
    def square(x: torch.Tensor) -> torch.Tensor:
        return x * x
    x = X.clone().requires_grad_()
    square(x).sum().backward()


@fix_of(backward_without_autograd)
def backward_with_autograd():
    @custom_op(fresh("square"), mutates_args=())
    def square(x: torch.Tensor) -> torch.Tensor:
        return x * x

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 2 * x
    square.register_autograd(backward, setup_context=setup_context)
    x = X.clone().requires_grad_()
    square(x).sum().backward()
    return x.grad, 2 * X


@repro("infer_schema: Parameter has unsupported type <class 'list'>", tool="torch.library.custom_op", entry="947aea4429",
       cause="A bare list has no element type; the schema needs list[float], list[int], list[Tensor]...")
def bare_list_parameter():
    @custom_op(fresh("weighted"), mutates_args=())
    def weighted(x: torch.Tensor, weights: list) -> torch.Tensor:
        return x * weights[0]


@fix_of(bare_list_parameter)
def typed_list_parameter():
    @custom_op(fresh("weighted"), mutates_args=())
    def weighted(x: torch.Tensor, weights: list[float]) -> torch.Tensor:
        return x * weights[0]
    return weighted(X, [2.0]), X * 2.0


@repro("infer_schema: in mutates_args were not found in the custom op's signature", tool="torch.library.custom_op",
       entry="1b5a6ee706", cause="mutates_args names an argument the function does not have.")
def mutates_unknown_argument():
    @custom_op(fresh("fill"), mutates_args=("out",))
    def fill(x: torch.Tensor) -> None:
        x.fill_(1)


@fix_of(mutates_unknown_argument)
def mutates_known_argument():
    @custom_op(fresh("fill"), mutates_args=("x",))
    def fill(x: torch.Tensor) -> None:
        x.fill_(1)
    y = X.clone()
    fill(y)
    return y, torch.ones_like(X)


@repro("operator ... does not exist (register_fake before the op is defined)", tool="torch.library.register_fake",
       entry="", cause="register_fake names an op that no library has defined (yet): a typo, or the import order.",
       says=r"operator \w+::\w+ does not exist")
def fake_for_missing_op():
    torch.library.register_fake("fxguide_repros::not_defined")(lambda x: torch.empty_like(x))


@fix_of(fake_for_missing_op)
def fake_after_definition():
    name = fresh("defined")

    @custom_op(name, mutates_args=())
    def defined(x: torch.Tensor) -> torch.Tensor:
        return x + 1
    torch.library.register_fake(name)(lambda x: torch.empty_like(x))
    return compiled(defined, X), X + 1


@repro("mutates_args must either be a sequence of the names ... or the string 'unknown'",
       tool="torch.library.custom_op", entry="5d757efe8a",
       cause="mutates_args=\"x\" is a string, not a sequence of names: it must be (\"x\",).")
def mutates_args_as_string():
    @custom_op(fresh("bump"), mutates_args="x")
    def bump(x: torch.Tensor) -> None:
        x.add_(1)


@fix_of(mutates_args_as_string)
def mutates_args_as_tuple():
    @custom_op(fresh("bump"), mutates_args=("x",))
    def bump(x: torch.Tensor) -> None:
        x.add_(1)
    y = X.clone()
    bump(y)
    return y, X + 1


@repro("opcheck(op, ...): op must be instance of torch._ops.OpOverload", tool="opcheck", entry="",
       cause="opcheck checks a registered op, not the Python function it was made from.")
def opcheck_plain_function():
    def halve(x: torch.Tensor) -> torch.Tensor:
        return x / 2
    opcheck(halve, (X,))


@fix_of(opcheck_plain_function)
def opcheck_custom_op():
    @custom_op(fresh("halve"), mutates_args=())
    def halve(x: torch.Tensor) -> torch.Tensor:
        return x / 2

    @halve.register_fake
    def _(x):
        return torch.empty_like(x)
    opcheck(halve, (X,))
    return halve(X), X / 2


SCHEMA_ONLY = torch.library.Library("fxguide_repros_schema", "FRAGMENT")
SCHEMA_ONLY.define("halve(Tensor x) -> Tensor")


@repro("Could not run ... with arguments from the 'CPU' backend", tool="torch.ops call", entry="",
       cause="The op has a schema but no kernel for this device (the library that registers it was not loaded).",
       says=r"Could not run '\w+::\w+' with arguments from the '\w+' backend")
def op_without_kernel():
    torch.ops.fxguide_repros_schema.halve(X)


WITH_KERNEL = torch.library.Library("fxguide_repros_kernel", "FRAGMENT")
WITH_KERNEL.define("halve(Tensor x) -> Tensor")
WITH_KERNEL.impl("halve", lambda x: x / 2, "CompositeExplicitAutograd")


@fix_of(op_without_kernel)
def op_with_kernel():
    """Register a kernel for every backend (CompositeExplicitAutograd) or one per device (CPU, CUDA)."""
    return torch.ops.fxguide_repros_kernel.halve(X), X / 2


@repro("'_OpNamespace' object has no attribute", tool="torch.ops call", entry="",
       cause="No library defined this op: the module that registers it was not imported (or the name is misspelt).",
       says=r"'_OpNamespace' '\w+' object has no attribute")
def op_never_defined():
    torch.ops.fxguide_repros.never_defined(X)


@fix_of(op_never_defined)
def op_defined_first():
    """Import (or define) the op's library before calling it."""
    return torch.ops.fxguide_repros_kernel.halve(X), X / 2


@repro("infer_schema(func): We do not support positional-only args, varargs, or varkwargs",
       tool="torch.library.custom_op", entry="24f5f205ee",
       cause="An op's schema lists each argument by name and type; *args (or **kwargs) has no fixed list.")
def varargs_op():
    @custom_op(fresh("total"), mutates_args=())
    def total(*tensors: torch.Tensor) -> torch.Tensor:
        return sum(tensors)


@fix_of(varargs_op)
def list_argument_op():
    """Take the tensors as one list[Tensor] argument."""
    @custom_op(fresh("total"), mutates_args=())
    def total(tensors: list[torch.Tensor]) -> torch.Tensor:
        return torch.stack(tensors).sum(0)
    return total([X, X, X]), X * 3


@repro("infer_schema(func): Parameter has an unsupported default value type <class 'list'>",
       tool="torch.library.custom_op", entry="350f357aea",
       cause="A schema's defaults are single values (a number, a bool, a string, None); a list default is not one.")
def list_default():
    @custom_op(fresh("shift"), mutates_args=())
    def shift(x: torch.Tensor, offsets: list[float] = [1.0, 2.0]) -> torch.Tensor:
        return x + torch.tensor(offsets).sum()


@fix_of(list_default)
def none_default():
    """Default to None and fill in the list in the body."""
    @custom_op(fresh("shift"), mutates_args=())
    def shift(x: torch.Tensor, offsets: list[float] | None = None) -> torch.Tensor:
        return x + torch.tensor([1.0, 2.0] if offsets is None else offsets).sum()
    return shift(X), X + 3.0


def product_op():
    @custom_op(fresh("product"), mutates_args=())
    def product(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x * y

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs)
    return product, setup_context


@repro("The backward formula ... returned an incorrect number of gradients", tool="custom op backward",
       entry="5364f6e6ff",
       cause="register_autograd's backward returns one gradient where the op has two tensor inputs: it must return "
             "one per input (None for one that needs none).")
def too_few_gradients():
    product, setup_context = product_op()

    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        return grad * y
    product.register_autograd(backward, setup_context=setup_context)
    x = X.clone().requires_grad_()
    product(x, X + 1).sum().backward()


@fix_of(too_few_gradients)
def one_gradient_per_input():
    product, setup_context = product_op()

    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        return grad * y, grad * x
    product.register_autograd(backward, setup_context=setup_context)
    x = X.clone().requires_grad_()
    product(x, X + 1).sum().backward()
    return x.grad, X + 1


@repro("define(qualname, schema, ...): expected schema to look like e.g. \"(Tensor x) -> Tensor\"",
       tool="torch.library.define", entry="fb229e9a7a",
       cause="The schema string is not in torch's schema syntax (arguments in parentheses, then ->, then the "
             "returns).")
def malformed_schema():
    torch.library.define(fresh("halve"), "(Tensor x) => Tensor")


@fix_of(malformed_schema)
def wellformed_schema():
    name = fresh("halve")
    torch.library.define(name, "(Tensor x) -> Tensor")
    torch.library.impl(name, "CompositeExplicitAutograd")(lambda x: x / 2)
    namespace, op = name.split("::")
    return getattr(getattr(torch.ops, namespace), op)(X), X / 2
