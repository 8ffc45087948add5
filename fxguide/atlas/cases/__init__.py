"""The atlas's cases, one family a module; each class is a row (see :func:`fxguide.atlas.case`)."""
