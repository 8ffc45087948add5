"""The inventory of torch's capture stack: every graph-break type and every message it raises, per release.

``python -m fxsite.inventory`` reads an installed torch's source files (and the
FX helpers of torchvision, timm and transformers beside it) and writes
``fxguide/diagnose/inventory/torch-<release>.json``, the data the reader's
lookup (:mod:`fxguide.diagnose.recognise`) recognises pasted errors from;
``python -m fxsite.inventory diff A.json B.json`` reports what changed between
two releases. Site tooling: the package only reads the committed JSON.

- :mod:`fxsite.inventory.sources`: which files, and their subsystems;
- :mod:`fxsite.inventory.templates`: a message's template from its expression;
- :mod:`fxsite.inventory.harvest`: the inventory of one installation;
- :mod:`fxsite.inventory.diff`: the drift between two inventories.
"""
