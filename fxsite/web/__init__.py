"""Tools for the built site: serving it, checking its links, and driving a browser over it."""
