"""Peak memory (max RSS, MiB) of running one page or gallery script alone in a fresh process."""

from __future__ import annotations

import json
import resource
import sys
from pathlib import Path

from fxsite.bench.floor import ROOT, run_page, run_script

if __name__ == "__main__":
    import os

    os.environ["MPLBACKEND"] = "Agg"
    sys.path.insert(0, str(ROOT))
    path = Path(sys.argv[1]).resolve()
    os.chdir(path.parent)
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()):
        (run_page if path.suffix == ".md" else run_script)(path)
    print(json.dumps({"max_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
