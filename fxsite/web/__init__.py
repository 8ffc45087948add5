"""Tools for the built site: serving it and driving a browser over it."""
