"""Peak memory (max RSS, MiB) of running one page or gallery script alone in a fresh process."""

from __future__ import annotations

import contextlib
import io
import json
import os
import resource
import sys
from pathlib import Path


def main(argv: list[str]) -> None:
    from fxsite.bench.floor import ROOT, run_page, run_script

    os.environ["MPLBACKEND"] = "Agg"
    sys.path.insert(0, str(ROOT))
    path = Path(argv[0]).resolve()
    os.chdir(path.parent)
    with contextlib.redirect_stdout(io.StringIO()):
        (run_page if path.suffix == ".md" else run_script)(path)
    print(json.dumps({"max_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


if __name__ == "__main__":
    # Run the imported copy's main(): run_page empties __main__ (this copy's globals) to run the page there.
    from fxsite.bench import peak_memory

    peak_memory.main(sys.argv[1:])
