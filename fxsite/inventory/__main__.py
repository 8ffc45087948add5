"""``python -m fxsite.inventory``: harvest a torch installation's inventory, or report the drift between two.

    python -m fxsite.inventory [--site-packages DIR] [--out FILE]
    python -m fxsite.inventory diff OLD.json NEW.json [--limit N]

The first reads the torch in ``DIR`` (default: this Python's site-packages)
by its source files and writes ``fxguide/diagnose/inventory/torch-<release>.json``
(or ``FILE``); a torch in a side environment is read the same way, without
importing it. The second prints what appeared, disappeared or changed.
"""

from __future__ import annotations

import argparse
import json
import sys
import sysconfig
from pathlib import Path

from fxsite import ROOT
from fxsite.inventory.diff import drift, report
from fxsite.inventory.harvest import dumps, harvest

INVENTORY = ROOT / "fxguide" / "diagnose" / "inventory"
"""Where the committed inventories live: package data of the reader's lookup."""


def default_out(release: str) -> Path:
    """The committed inventory of ``release``."""
    return INVENTORY / f"torch-{release}.json"


def _harvest(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m fxsite.inventory", description=__doc__.split("\n\n")[0])
    parser.add_argument("--site-packages", type=Path, default=Path(sysconfig.get_paths()["purelib"]),
                        help="the site-packages folder torch is installed in (default: this Python's)")
    parser.add_argument("--out", type=Path, help="where to write (default: fxguide/diagnose/inventory/"
                                                 "torch-<release>.json)")
    args = parser.parse_args(argv)
    try:
        inventory = harvest(args.site_packages)
    except FileNotFoundError as error:
        print(f"fxsite.inventory: {error}", file=sys.stderr)
        return 2
    out = args.out or default_out(inventory["release"])
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(dumps(inventory), encoding="utf-8")
    total = inventory["summary"]["total"]
    print(f"torch {inventory['release']}: {len(inventory['graph_breaks'])} graph-break types, "
          f"{total['templates']} message templates ({total['raised_at']} raise sites; "
          f"{total['no_literal_words']} raises without literal words left out) -> {out}")
    return 0


def _diff(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m fxsite.inventory diff")
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    parser.add_argument("--limit", type=int, default=40, help="items shown per section (0: all; default 40)")
    args = parser.parse_args(argv)
    old, new = (json.loads(path.read_text(encoding="utf-8")) for path in (args.old, args.new))
    print(report(drift(old, new), args.limit))
    return 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    return _diff(args[1:]) if args[:1] == ["diff"] else _harvest(args)


if __name__ == "__main__":
    sys.exit(main())
