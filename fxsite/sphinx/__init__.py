"""Sphinx extensions of the fxguide site (listed in ``conf.py``)."""
