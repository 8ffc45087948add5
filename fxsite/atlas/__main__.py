"""``python -m fxsite.atlas``: write ``fxguide/atlas/outcomes.json`` from the atlas pages' recordings."""

from fxsite.atlas import write

print(f"wrote {write()}")
