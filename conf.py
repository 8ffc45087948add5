"""Sphinx configuration for fxguide (read with ``sphinx-build -c . docs <out>``).

Everything the build needs to know lives here: the extensions, how pages and
gallery scripts are executed, and how execution caches are keyed so that a
change of torch (or of the fxguide package) re-executes everything.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
# Notebook kernels are child processes: they must import this checkout's fxguide too.
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))

from fxguide.drift.fingerprint import fingerprint, invalidate_stale_gallery  # noqa: E402

import torch  # noqa: E402

# -- Project -------------------------------------------------------------------

project = "fxguide"
author = "the fxguide authors"
copyright = "2026, the fxguide authors"
release = "0.1"
TORCH_VERSION = torch.__version__.split("+")[0]

# -- Extensions ------------------------------------------------------------------

extensions = [
    "myst_nb",
    "sphinx_gallery.gen_gallery",
    "sphinx_copybutton",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "fxguide.drift.sphinx_ext",  # names the file and line of a cell that raised unexpectedly
]

exclude_patterns = [
    "_build",
    "**.ipynb_checkpoints",
    # sphinx-gallery writes a notebook beside every generated page; those are
    # downloads, not sources: myst-nb must not parse them.
    "gallery/**.ipynb",
    "gallery/**.py",
    "gallery/**.md5",
    "gallery/**.json",
    "gallery/**.zip",
]

# A change of torch, of the fxguide package or of the execution settings
# changes this value; Sphinx then re-reads every page (it is an "env" value),
# and the caches below live in a directory named after it.
FINGERPRINT = fingerprint(ROOT)
fxguide_fingerprint = FINGERPRINT
IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
FORCE_EXECUTE = IN_CI or os.environ.get("FXGUIDE_EXECUTE") == "force"

# -- MyST-NB: the tutorial pages -------------------------------------------------

myst_enable_extensions = ["colon_fence", "deflist", "substitution"]
myst_heading_anchors = 3
myst_substitutions = {"torch_version": TORCH_VERSION}

nb_execution_mode = "force" if FORCE_EXECUTE else "cache"
nb_execution_cache_path = str(ROOT / ".jupyter_cache" / FINGERPRINT)
nb_execution_raise_on_error = False  # reported as a warning, which -W turns into a failure
nb_execution_show_tb = True  # ... and the log shows where
nb_execution_timeout = 120
nb_merge_streams = True

# -- sphinx-gallery: the worked examples -----------------------------------------

GALLERY_OUT = ROOT / "docs" / "gallery"
invalidate_stale_gallery(GALLERY_OUT, FINGERPRINT, force=FORCE_EXECUTE)

sphinx_gallery_conf = {
    "examples_dirs": "../gallery",
    "gallery_dirs": "gallery",
    "filename_pattern": r"/",  # execute every script, not only plot_*.py
    "ignore_pattern": r"__init__\.py",
    "image_scrapers": ("matplotlib",),
    "remove_config_comments": True,
    "download_all_examples": False,
    "min_reported_time": 0,
    "only_warn_on_example_error": False,  # a failing example fails the build
    "capture_repr": ("_repr_html_", "__repr__"),
    "reset_modules": ("matplotlib",),
}

# -- HTML -----------------------------------------------------------------------

html_theme = "pydata_sphinx_theme"
html_title = "fxguide"
html_static_path: list[str] = []
html_theme_options = {
    "navigation_with_keys": False,
    "show_prev_next": True,
    "secondary_sidebar_items": ["page-toc", "sourcelink"],
    "footer_start": ["copyright"],
    "footer_end": ["theme-version"],
}
html_context = {"default_mode": "light"}
html_last_updated_fmt = None

# Copy buttons strip Python and shell prompts and copy only the prompted lines
# of doctest blocks (so outputs are left behind).
copybutton_prompt_text = r">>> |\.\.\. |\$ "
copybutton_prompt_is_regexp = True
copybutton_only_copy_prompt_lines = True
copybutton_exclude = ".linenos, .gp, .go"

# -- Autodoc --------------------------------------------------------------------

autodoc_typehints = "description"
autodoc_member_order = "bysource"


def setup(app):
    app.add_config_value("fxguide_fingerprint", FINGERPRINT, "env")
