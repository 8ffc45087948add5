"""Python side effects: printing, logging, warnings, clocks and files inside ``forward``."""

import contextlib
import logging
import os
import sys
import tempfile
import time
import warnings

import torch
from torch import nn

from fxguide.atlas import case, fix_for

log = logging.getLogger("fxguide.atlas.demo")


@case("print", fix="Print outside the captured code, or use torch._higher_order_ops.print (a graph node) "
      "for a value that must print at run time.")
class Print(nn.Module):
    def forward(self, x):
        print("forward ran")
        return x + 1


@case("print a tensor", fix="Return the tensor and print it after the call.",
      inputs=lambda: ((torch.ones(2, 4),), (torch.full((2, 4), 2.0),)))
class PrintTensor(nn.Module):
    def forward(self, x):
        print("sum:", round(x.sum().item(), 4))
        return x + 1


@case("sys.stdout.write", fix="Write outside the captured code.")
class StdoutWrite(nn.Module):
    def forward(self, x):
        sys.stdout.write("forward ran\n")
        return x + 1


@case("logger.warning(...)", fix="Under torch.compile: add the exact bound method to "
      "torch._dynamo.config.ignore_logging_functions (drop it) or reorderable_logging_functions (run it after "
      "the graph); otherwise log outside the captured code.")
class LoggerWarning(nn.Module):
    def forward(self, x):
        log.warning("forward ran")
        return x + 1


@case("logger.info(...)", fix="As for logger.warning: the method itself must be registered.")
class LoggerInfo(nn.Module):
    def forward(self, x):
        log.info("forward ran")
        return x + 1


@case("logger.debug(...) with a format argument", fix="As for logger.warning.")
class LoggerDebugFormat(nn.Module):
    def forward(self, x):
        log.debug("batch of %d", x.shape[0])
        return x + 1


@case("logging.info(...) (root logger)", fix="Root logging functions are module functions, not logger "
      "methods: register logging.info itself, or log outside the captured code.")
class RootLoggingInfo(nn.Module):
    def forward(self, x):
        logging.info("forward ran")
        return x + 1


@case("logging.getLogger(...) inside forward", fix="Create the logger at module level; log outside the "
      "captured code.")
class LoggerMadeInForward(nn.Module):
    def forward(self, x):
        logging.getLogger("fxguide.atlas.inner").warning("forward ran")
        return x + 1


@case("warnings.warn(...)", fix="Warn outside the captured code (at construction, or in a wrapper).")
class WarningsWarn(nn.Module):
    def forward(self, x):
        warnings.warn("forward ran")
        return x + 1


@case("warnings.warn(...) with a category", fix="As for warnings.warn.")
class WarningsWarnCategory(nn.Module):
    def forward(self, x):
        warnings.warn("deprecated input", DeprecationWarning)
        return x + 1


@case("time.time() kept on the module", fix="Time the call from outside: a clock read inside is read "
      "once, when the graph is made.",
      observe=lambda m: len(m.stamps))
class TimeOnModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.stamps = []

    def forward(self, x):
        self.stamps.append(time.time())
        return x + 1


@case("time.perf_counter() in the result", fix="Measure around the call; never return a clock reading.",
      observe=lambda m: len(m.durations))
class PerfCounterList(nn.Module):
    def __init__(self):
        super().__init__()
        self.durations = []

    def forward(self, x):
        start = time.perf_counter()
        y = x + 1
        self.durations.append(time.perf_counter() - start)
        return y


@case("a file written in forward", fix="Write files outside the captured code.",
      observe=lambda m: open(m.path).read())
class FileWrite(nn.Module):
    def __init__(self):
        super().__init__()
        handle, self.path = tempfile.mkstemp(prefix="fxguide-atlas-")
        os.close(handle)

    def forward(self, x):
        with open(self.path, "a") as f:
            f.write("call\n")
        return x + 1


@contextlib.contextmanager
def flag_set():
    os.environ["FXGUIDE_ATLAS_FLAG"] = "1"
    try:
        yield
    finally:
        del os.environ["FXGUIDE_ATLAS_FLAG"]


@case("os.environ read", fix="Read settings before capturing and pass them as constants; capture again "
      "after they change.", context=lambda run: flag_set(),
      note="the variable is set between the capture and the second call")
class EnvironRead(nn.Module):
    def forward(self, x):
        if os.environ.get("FXGUIDE_ATLAS_FLAG") == "1":
            return x - 1
        return x + 1


# --- The fixes, each run through every tool like the rows above --------------------------------


@fix_for(Print)
class PrintAsNode(nn.Module):
    def forward(self, x):
        torch._higher_order_ops.print("forward ran")
        return x + 1


@fix_for(PrintTensor)
class PrintTensorAsNode(nn.Module):
    def forward(self, x):
        torch._higher_order_ops.print("sum: {}", x.sum())
        return x + 1


@fix_for(LoggerWarning, around=lambda: torch._dynamo.config.patch(reorderable_logging_functions={log.warning}))
class LoggerWarningReordered(nn.Module):
    """Unchanged code; Dynamo is told to run ``log.warning`` after the graph."""

    def forward(self, x):
        log.warning("forward ran")
        return x + 1


@fix_for(EnvironRead)
class EnvironReadOnce(nn.Module):
    def __init__(self):
        super().__init__()
        self.flag = os.environ.get("FXGUIDE_ATLAS_FLAG") == "1"  # read once, when the model is built

    def forward(self, x):
        return x - 1 if self.flag else x + 1
