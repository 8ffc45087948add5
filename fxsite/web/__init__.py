"""Serving the built site (``make serve``, and the browser tests)."""
