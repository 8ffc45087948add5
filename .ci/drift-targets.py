"""Which torch releases the drift workflow checks, as a GitHub Actions matrix output line.

With a version given: that one. Otherwise the newest release on PyPI, and the newest build on
PyTorch's test channel (its release candidates) when it is newer than that release.
Prints ``matrix=[{"torch": "X", "index": "extra index URL or empty"}, ...]``.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

TEST_CHANNEL = "https://download.pytorch.org/whl/test/cpu"


def versions(*pip_args: str) -> list[tuple[int, ...]]:
    done = subprocess.run([sys.executable, "-m", "pip", "index", "versions", "torch", *pip_args],
                          capture_output=True, text=True, check=False)
    listed = re.search(r"Available versions: (.*)", done.stdout)
    return sorted({tuple(int(p) for p in v.strip().split("+")[0].split("."))
                   for v in (listed.group(1).split(",") if listed else []) if re.fullmatch(r"[\d.]+(\+\w+)?", v.strip())})


def main() -> None:
    asked = sys.argv[1].strip() if len(sys.argv) > 1 else ""
    if asked:
        targets = [{"torch": asked, "index": ""}]
    else:
        released = versions()
        if not released:
            sys.exit("drift-targets: pip lists no torch release on PyPI")
        targets = [{"torch": ".".join(map(str, released[-1])), "index": ""}]
        candidates = versions("--pre", "--index-url", TEST_CHANNEL)
        if candidates and candidates[-1] > released[-1]:
            targets.append({"torch": ".".join(map(str, candidates[-1])), "index": TEST_CHANNEL})
    print("matrix=" + json.dumps(targets))


if __name__ == "__main__":
    main()
