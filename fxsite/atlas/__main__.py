"""``python -m fxsite.atlas``: write ``fxguide/atlas/outcomes.json`` and ``reproduced.json``;
``python -m fxsite.atlas pages``: rewrite the family pages' "rows in full" sections from the registry."""

import sys

from fxsite.atlas import write

if sys.argv[1:] == ["pages"]:
    from fxsite.atlas.pages import write as write_pages
    for path in write_pages():
        print(f"wrote {path}")
else:
    print(f"wrote {write()}")
