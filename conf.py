"""Sphinx configuration for fxguide (read with ``sphinx-build -c . docs <out>``).

Everything the build needs to know lives here: the extensions, how pages and
gallery scripts are executed, and how execution caches are keyed so that a
change of torch (or of the fxguide package) re-executes everything.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
# Notebook kernels are child processes: they must import this checkout's fxguide too.
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))

from fxsite.sphinx.fingerprint import (  # noqa: E402
    fingerprint, forced_execution, inductor_cache_dir, rerun_gallery_when_stale, torch_version,
)

# A build under other CPU settings (ATEN_CPU_CAPABILITY=avx2, say) compiles Inductor code into a cache of
# its own: torch's cache key leaves the vector width out, and code cached for another one computes garbage.
if inductor_cache_dir() is not None:
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = inductor_cache_dir()

# -- Project -------------------------------------------------------------------

project = "fxguide"
author = "the fxguide authors"
copyright = "2026, the fxguide authors"
import fxguide  # noqa: E402  (fxguide/__init__.py imports nothing: its version is the one source)

release = fxguide.__version__
TORCH_VERSION = torch_version().split("+")[0]  # from torch's metadata: conf.py does not import torch

# -- Extensions ------------------------------------------------------------------

extensions = [
    "myst_nb",
    "sphinx_gallery.gen_gallery",
    "sphinx_copybutton",
    "sphinx.ext.intersphinx",  # torch names link to pytorch.org, from a committed inventory
    "fxsite.sphinx.codelinks",  # sphinx-codeautolink: every name in every code cell links to its entry
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "fxsite.sphinx.sphinx_ext",  # names the file and line of a cell that raised unexpectedly
    "fxsite.sphinx.warm_kernels",  # page kernels forked from a process that imported torch once
    "fxsite.sphinx.prerun",  # pages executed in parallel, while sphinx-gallery runs the examples
    "fxsite.sphinx.limits",  # a page cell or an example past its time limit fails the build, named
    "fxsite.sphinx.site",  # sidebar, notebook downloads, install lines, source links, readable outputs
    # Site pieces readers expect, each from the extension made for it:
    "notfound.extension",  # a 404 page whose links work from any URL
    "sphinxext.opengraph",  # OpenGraph cards and a meta description on every page
    "sphinx_reredirects",  # old URLs of moved or split pages redirect to their new home
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
FORCE_EXECUTE = forced_execution()  # CI, or FXGUIDE_EXECUTE=force

# -- MyST-NB: the tutorial pages -------------------------------------------------

myst_enable_extensions = ["colon_fence", "deflist", "substitution"]
myst_heading_anchors = 3
myst_substitutions = {"torch_version": TORCH_VERSION}

# Always cache mode, so that fxsite.sphinx.prerun can execute the pages while the gallery
# runs and hand the results over through the cache. A forced build (CI) gets a new, empty
# cache of its own: it executes every page and leaves the local cache alone.
nb_execution_mode = "cache"
if FORCE_EXECUTE:
    nb_execution_cache_path = tempfile.mkdtemp(prefix="fxguide-forced-")
    atexit.register(shutil.rmtree, nb_execution_cache_path, ignore_errors=True)
else:
    nb_execution_cache_path = str(ROOT / ".jupyter_cache" / FINGERPRINT)
nb_execution_raise_on_error = False  # reported as a warning, which -W turns into a failure
nb_execution_show_tb = True  # ... and the log shows where
# The time limit of each page cell and of each gallery example (fxsite/sphinx/limits.py): one that
# runs longer is stopped and fails the build, named. FXGUIDE_TIMEOUT changes it (the tests use seconds).
nb_execution_timeout = int(os.environ.get("FXGUIDE_TIMEOUT", "120"))
nb_merge_streams = True
nb_ipywidgets_js: dict = {}  # the default loads require.js and widget managers from CDNs

# Each page still runs in a fresh kernel of its own, but the kernels are forked from one
# process that imported torch once (fxsite/sphinx/warm_kernels.py): about 1.5 s less per
# page. FXGUIDE_WARM_KERNELS=0 starts every kernel cold, as Jupyter does by default.
fxguide_warm_kernels = os.environ.get("FXGUIDE_WARM_KERNELS", "1") != "0"
# Pages that need executing run two at a time while sphinx-gallery runs the examples
# (fxsite/sphinx/prerun.py). FXGUIDE_PRERUN=0 leaves execution to myst-nb, page by page.
fxguide_prerun = os.environ.get("FXGUIDE_PRERUN", "1") != "0"

# -- sphinx-gallery: the worked examples -----------------------------------------

GALLERY_OUT = ROOT / "docs" / "gallery"
# sphinx-gallery re-runs only the examples whose source changed. When FINGERPRINT
# changed since the examples last ran, or the build is forced, setup() below turns
# on its `run_stale_examples` option for this build (fxsite/sphinx/fingerprint.py).

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
    # No execution-times page: sphinx-gallery's loads its table's scripts from CDNs, and
    # make bench records each example's time (fxsite/bench/results.md).
    "write_computation_times": False,
    # gallery/index.rst lays the examples out in two parts (FX, PT2) with `.. gallery-part::`
    # (fxsite/sphinx/thumbnails.py), each in the order of the cards listed there.
    "minigallery_sort_order": "fxsite.sphinx.thumbnails.card_order",
    "copyfile_regex": r"index\.rst$",  # the gallery's own index is copied to docs/gallery (not generated)
    # minigallery looks names up there first (then reads its arguments as paths); no module's API
    # pages list examples (doc_module is empty), so it holds an empty index.
    "backreferences_dir": str(ROOT / "_build" / "gallery-backreferences"),
}

# -- HTML -----------------------------------------------------------------------

html_theme = "pydata_sphinx_theme"
html_title = "fxguide"
# Where the guide is published and where its source lives: pyproject's project URLs (the one
# place they are written; fxguide.diagnose links to the Documentation URL as well).
PROJECT_URLS = tomllib.loads(Path(__file__).with_name("pyproject.toml").read_text())["project"]["urls"]
html_baseurl = PROJECT_URLS["Documentation"]
fxguide_repository = PROJECT_URLS["Source"]  # fxsite.sphinx.site: source/edit links, install lines
fxguide_torch = TORCH_VERSION  # the torch every page was executed with: pinned in the install lines
from fxsite.sphinx.running import EXTRA_MARKERS, install_command  # noqa: E402

myst_substitutions["repository"] = fxguide_repository
myst_substitutions["install_all"] = f"`{install_command(sorted(EXTRA_MARKERS), TORCH_VERSION, fxguide_repository)}`"
html_static_path: list[str] = []
html_favicon = "fxsite/sphinx/static/favicon.svg"
html_theme_options = {
    "navigation_with_keys": False,
    "show_prev_next": True,
    # Under each page's table of contents: run it (install line, notebook), its source, an issue.
    "secondary_sidebar_items": ["page-toc", "notebook-download", "source-links"],
    "article_header_end": ["run-this-page-short"],
    "icon_links": [{"name": "Source on GitHub", "url": fxguide_repository, "icon": "fa-brands fa-github"}],
    # The whole guide, section by section, sits in the left sidebar
    # (templates/sidebar-guide.html in fxsite/sphinx), so the header does not repeat it.
    "navbar_center": [],
    "show_toc_level": 2,
    # Results under the search box while one types (the theme's own option; the search page keeps Sphinx's).
    "search_as_you_type": True,
    "footer_start": ["copyright"],
    "footer_end": ["theme-version"],
}
html_sidebars = {"**": ["sidebar-guide"]}
html_context = {"default_mode": "light"}
html_last_updated_fmt = None

# -- Site pieces ------------------------------------------------------------------
# 404 page: links are made absolute under the published path (/en/latest/).
from urllib.parse import urlparse  # noqa: E402

notfound_urls_prefix = urlparse(html_baseurl).path
notfound_context = {
    "title": "Page not found",
    "body": (
        "<h1>Page not found</h1>\n"
        "<p>This address is not a page of the guide: it may have moved when a page was split.</p>\n"
        "<ul><li>Search the guide with the search box above (an error message pasted whole works).</li>\n"
        f'<li>Start from the <a href="{notfound_urls_prefix}index.html">home page</a> or the '
        f'<a href="{notfound_urls_prefix}reference/errors.html">error index</a>.</li></ul>\n'
    ),
}
# sitemap.xml lists every page under html_baseurl (fxsite.sphinx.running.write_sitemap).
# OpenGraph: the card a chat or a social site shows for a link to a page.
ogp_site_url = html_baseurl
ogp_site_name = "fxguide"
ogp_image = html_baseurl + "_static/fxguide-card.png"
ogp_image_alt = "fxguide: a guide to torch.fx, every output checked"
ogp_description_length = 200
# Pages that moved: old docname -> new URL (relative to the old page). Kept for good.
# A page split in two redirects to the page that holds its opening subject; the template
# sends an anchor that went to the other page there (its MOVED list; tests/test_site_pieces.py).
redirects: dict[str, str] = {
    "beyond": "concrete-tracing.html",  # split: concrete tracing | capture tools compared (issue 40)
    "traceable-code": "real-model-code.html",  # split: real model code | past symbolic_trace (issue 40)
}
redirect_html_template_file = "../fxsite/sphinx/templates/moved-page.html"  # relative to docs/

# Copy buttons strip Python and shell prompts and copy only the prompted lines
# of doctest blocks (so outputs are left behind).
copybutton_prompt_text = r">>> |\.\.\. |\$ "
copybutton_prompt_is_regexp = True
copybutton_only_copy_prompt_lines = True
copybutton_exclude = ".linenos, .gp, .go"

# -- Code cells link their names: sphinx-codeautolink ------------------------------
# Each name in a page's or an example's code links to its entry: torch.fx and fxguide
# on the reference pages, the rest of torch on pytorch.org (intersphinx, below).
# A page's cells run in one kernel, an example's blocks in one namespace: names
# imported in one cell resolve in the later ones.
codeautolink_concat_default = True
codeautolink_custom_blocks = {"pycon": "fxsite.sphinx.codelinks.clean_doctest"}
# The reference's "used in" lists come from fxsite/sphinx/usage.py, not from
# codeautolink's tables (which would be a second list under each entry).
codeautolink_autodoc_inject = False

# -- Autodoc --------------------------------------------------------------------

autodoc_typehints = "description"
autodoc_member_order = "bysource"

# -- Links to torch's reference: intersphinx, offline -------------------------------
# The inventory of docs.pytorch.org for the pinned torch is committed
# (fxsite/sphinx/torch-objects.inv); the build reads it and fetches nothing.
# Refresh it with `python -m fxsite.sphinx.torch_inventory` (README, "Links to torch").
from fxsite.sphinx.torch_inventory import INVENTORY, docs_url  # noqa: E402

intersphinx_mapping = {"torch": (docs_url(TORCH_VERSION), str(INVENTORY))}

# -- Cross-references -----------------------------------------------------------
# Every reference must resolve (the reference pages document torch.fx and
# fxguide from the installed code; the rest of torch resolves through intersphinx).

nitpicky = True
# The only references allowed to stay unresolved, each for a stated reason.
nitpick_ignore_regex = [
    # torch outside torch.fx resolves through intersphinx, except what pytorch.org does not
    # document: torch._ops.OpOverload (private; the type of torch.ops.aten.* targets), and
    # `nn.Module` as a dataclass field's annotation string (`from __future__ import annotations`).
    (r"py:class", r"torch\._ops\.OpOverload|nn\.Module"),
    # torch.fx internals that torch.fx.__all__ does not export, seen in its signatures and
    # docstrings: private type variables and aliases (_R, _F, _P, Argument, ArgumentT,
    # Target) and helper classes the reference does not document.
    (r"py:class", r"torch\.fx\.[\w.]*\._\w+|~?_P"),
    (r"py:class", r"(torch\.fx\.node\.)?(Argument|ArgumentT|Target)"),
    (r"py:class", r"(torch\.fx\.[\w.]+\.)?(TracerBase|PythonCode|CodeGen|Scope|ArgsKwargsPair|Module)"),
    # The standard library and Sphinx in fxguide's and torch's signatures: offline, there
    # is no Python or Sphinx inventory to link to.
    (r"py:(class|obj|mod)", r"(collections|pathlib|os|re|types|contextlib|subprocess|sphinx)(\.[\w.]+)?"),
]
# torch 2.13's Google-style docstrings that napoleon reads as return types (prose before
# a colon in a "Returns:" section) or that name a type in lower case.
nitpick_ignore = [
    ("py:class", text) for text in (
        "A PythonCode object", "consisting", "two fields", "whether a node is impure. If this is",
        "then the default behavior is", "use", "any",
    )
]


def _module_names_in_signatures(app, what, name, obj, options, signature, return_annotation):
    """A default that is a module shows as its name (`autowrap_modules=(math,)`), not as its repr, which names
    the file of the machine that built the site (`<module 'math' from '/root/.pyenv/...'>`)."""
    import re

    module = re.compile(r"<module '([\w.]+)' (?:from '[^']*'|\(built-in\))>")
    return (module.sub(r"\1", signature) if signature else signature,
            module.sub(r"\1", return_annotation) if return_annotation else return_annotation)


def setup(app):
    app.add_config_value("fxguide_fingerprint", FINGERPRINT, "env")
    app.connect("autodoc-process-signature", _module_names_in_signatures)
    # -- gallery: every example re-runs under a new fingerprint or in a forced build --
    rerun_gallery_when_stale(app, GALLERY_OUT, FINGERPRINT, force=FORCE_EXECUTE)
