"""A site people can run and read: install lines, runnable notebooks, readable outputs, site pieces.

Each test reads the built site (the ``built_site`` fixture, as ``make docs`` builds it) and
pins one thing a reader relies on (issue 39).
"""

from __future__ import annotations

import html as htmllib
import json
import re
import sys
import sysconfig
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from fxsite import ROOT
from fxsite.drift.report import REFERENCE_TORCH
from fxsite.sphinx.running import INSTALL_MARKER

pytestmark = pytest.mark.docs

PROJECT_URLS = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]
TORCH = REFERENCE_TORCH  # the torch constraints.txt pins


@pytest.fixture(scope="module")
def site(built_site) -> Path:
    return built_site / "html"


def _is_redirect(page: Path) -> bool:
    """A page sphinx-reredirects wrote in place of a page that moved (conf.py ``redirects``)."""
    return '<meta name="fxguide-moved"' in page.read_text(encoding="utf-8", errors="replace")[:600]


def _pages(site: Path) -> list[Path]:
    return sorted(p for p in site.rglob("*.html")
                  if "_static" not in p.parts and "_sources" not in p.parts and not _is_redirect(p))


def _executed_pages(site: Path) -> list[Path]:
    """Pages whose code ran: a notebook sits beside them, or they are gallery examples."""
    return [p for p in _pages(site) if p.with_suffix(".ipynb").is_file()
            or (p.parent.name == "gallery" and p.name not in {"index.html", "sg_execution_times.html"})]


def _machine_paths() -> list[str]:
    # the interpreter's own install too: a module's repr (a default argument on the API page) names its file
    paths = {str(ROOT), sys.prefix, sysconfig.get_paths()["purelib"], sys.base_prefix, sysconfig.get_paths()["stdlib"]}
    return sorted({p for p in paths if len(p) > 4}, key=len, reverse=True)


def test_no_page_or_notebook_shows_a_path_of_the_build_machine(site):
    """Outputs print torch's and the checkout's paths; the site shows them as <site-packages>, <repo>."""
    found = []
    for path in [*_pages(site), *site.rglob("*.ipynb")]:
        text = path.read_text(encoding="utf-8", errors="replace")
        found += [f"{path.relative_to(site)}: {p}" for p in _machine_paths() if p in text]
    assert found == [], "build-machine paths on the site:\n" + "\n".join(found[:30])


def test_every_executed_page_says_what_to_install_pinned_to_its_torch(site):
    pages = _executed_pages(site)
    assert len(pages) > 40
    missing = []
    for page in pages:
        text = page.read_text(encoding="utf-8")
        match = re.search(r'<pre class="fxguide-install"><code>(.*?)</code></pre>', text, re.S)
        if not match or f"torch=={TORCH}" not in match.group(1) or PROJECT_URLS["Source"] not in match.group(1):
            missing.append(str(page.relative_to(site)))
    assert missing == [], "executed pages without an install line pinned to torch " + TORCH + ":\n" + "\n".join(missing)


@pytest.mark.parametrize(("page", "extra"), [("feature-extraction.html", "models"), ("pt2/quantization.html", "quant")])
def test_the_install_line_names_the_extras_the_page_imports(site, page, extra):
    line = re.search(r'<pre class="fxguide-install"><code>(.*?)</code>', (site / page).read_text()).group(1)
    assert re.search(rf"fxguide\[[a-z,]*{extra}", htmllib.unescape(line)), line


def test_every_executed_page_links_its_source_in_the_repository(site):
    missing = [str(p.relative_to(site)) for p in _executed_pages(site)
               if f'href="{PROJECT_URLS["Source"]}/blob/main/' not in p.read_text(encoding="utf-8")]
    assert missing == [], "pages without a link to their source:\n" + "\n".join(missing)
    example = (site / "gallery" / "fuse_conv_bn.html").read_text()
    assert f'{PROJECT_URLS["Source"]}/blob/main/gallery/fuse_conv_bn.py' in example  # the script, not generated reST


def test_every_executed_page_opens_on_binder_from_the_repository(site):
    """Each executed page links mybinder.org at its own file; Binder builds .binder/ with the reference pins."""
    owner_repo = PROJECT_URLS["Source"].removeprefix("https://github.com/")
    pages = [p for p in _executed_pages(site) if "gallery" not in p.relative_to(site).parts]
    wrong = []
    for page in pages:
        source = "docs/" + page.relative_to(site).with_suffix(".md").as_posix()
        link = f"https://mybinder.org/v2/gh/{owner_repo}/main?urlpath=lab/tree/{source}"
        if link not in htmllib.unescape(page.read_text(encoding="utf-8")) or not (ROOT / source).is_file():
            wrong.append(source)
    assert len(pages) > 30 and wrong == [], "pages without a Binder link to their own file:\n" + "\n".join(wrong)


def test_binder_installs_the_reference_torch_and_every_extra_with_the_pins():
    lines = [line.split("#")[0].strip() for line in (ROOT / ".binder" / "requirements.txt").read_text().splitlines()]
    lines = [line for line in lines if line]
    assert f"torch=={REFERENCE_TORCH}" in lines and "-c ../constraints.txt" in lines
    extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    [editable] = [line for line in lines if line.startswith("-e .[")]
    assert set(editable.removeprefix("-e .[").rstrip("]").split(",")) == extras - {"docs", "test"}
    assert all(re.fullmatch(r"[A-Za-z0-9_.-]+==[0-9.]+", line) for line in lines
               if not line.startswith(("-", "torch=="))), "every other requirement is pinned exactly"
    assert (ROOT / ".binder" / "postBuild").stat().st_mode & 0o111, "postBuild must be executable"


def _notebooks(site: Path) -> list[Path]:
    return sorted([*(p for p in site.rglob("*.ipynb") if "_downloads" not in p.parts),
                   *(site / "_downloads").glob("*/*.ipynb")])


def test_every_downloadable_notebook_starts_with_its_install_cell(site):
    notebooks = _notebooks(site)
    assert len(notebooks) > 40
    wrong = []
    for path in notebooks:
        first = json.loads(path.read_text())["cells"][0]
        source = "".join(first["source"])
        if first["cell_type"] != "code" or not source.startswith(INSTALL_MARKER) or f"torch=={TORCH}" not in source:
            wrong.append(f"{path.relative_to(site)}: {source[:80]!r}")
    assert wrong == [], "\n".join(wrong)


def test_gallery_notebooks_text_is_markdown_not_rest(site):
    roles = []
    for path in (site / "_downloads").glob("*/*.ipynb"):
        for cell in json.loads(path.read_text())["cells"]:
            text = "".join(cell["source"])
            if cell["cell_type"] == "markdown" and re.search(r":[a-z]+:`|``\w", text):
                roles.append(f"{path.name}: {text[:100]!r}")
    assert roles == [], "reST left in Markdown cells:\n" + "\n".join(roles[:20])


def test_an_error_output_shows_the_message_and_folds_the_traceback(site):
    """limitations.html raises on purpose: each error shows a short form, the full traceback folded."""
    text = (site / "limitations.html").read_text()
    folded = re.findall(r'<details class="fxguide-traceback"><summary>Full traceback \((\d+) lines\)</summary>', text)
    assert folded, "no folded traceback on the limitations page"
    shown = re.findall(r'<div class="output traceback[^>]*><div class="highlight"><pre>((?:(?!</pre>).)*)</pre></div>'
                       r'\s*</div>\s*<details class="fxguide-traceback">', text, re.S)
    assert len(shown) == len(folded)
    longest = max(len(re.sub(r"<[^>]+>", "", block).strip().splitlines()) for block in shown)
    assert longest <= 20, f"the shown part of an error is {longest} lines"
    assert "TraceError: symbolically traced variables cannot be used as inputs to control flow" in \
        htmllib.unescape(re.sub(r"<[^>]+>", "", shown[0]))


#: The most lines an error may show before its fold: Dynamo's messages (explanation, hints, the
#: user's line) are the longest a reader needs.
ERROR_LINES = 30


def test_no_error_on_the_site_shows_more_than_the_reader_needs(site):
    shown_lengths = {}
    for page in _pages(site):
        # what shows before a reader opens anything: the folded full tracebacks left out
        text = re.sub(r'<details class="fxguide-traceback">.*?</details>', "", page.read_text(encoding="utf-8"),
                      flags=re.S)
        for block in re.findall(r'<div class="output traceback[^>]*><div class="highlight"><pre>((?:(?!</pre>).)*)</pre>',
                                text, re.S):
            lines = len(htmllib.unescape(re.sub(r"<[^>]+>", "", block)).strip().splitlines())
            name = str(page.relative_to(site))
            shown_lengths[name] = max(lines, shown_lengths.get(name, 0))
    assert shown_lengths, "no error output found on the site"
    too_long = {page: n for page, n in shown_lengths.items() if n > ERROR_LINES}
    assert too_long == {}, f"error outputs longer than {ERROR_LINES} lines before the fold: {too_long}"


def test_the_site_has_a_404_page_a_sitemap_and_a_favicon(site):
    missing = (site / "404.html").read_text()
    assert 'href="/en/latest/reference/errors.html"' in missing  # absolute: it is served from any address
    urls = {loc.text for loc in ET.parse(site / "sitemap.xml").getroot().iter()
            if loc.tag.endswith("loc")}
    pages = {PROJECT_URLS["Documentation"] + str(p.relative_to(site)) for p in _pages(site)
             if p.name not in {"404.html", "search.html", "genindex.html", "py-modindex.html"}}
    assert pages - urls == set(), f"pages missing from the sitemap: {sorted(pages - urls)[:10]}"
    assert 'rel="icon" href="_static/favicon.svg"' in (site / "index.html").read_text()


def test_every_page_has_an_opengraph_card_and_a_description(site):
    missing = []
    for page in _pages(site):
        if page.name in {"404.html", "search.html", "genindex.html", "py-modindex.html"}:
            continue
        text = page.read_text(encoding="utf-8")
        for tag in ('property="og:title"', 'property="og:image"', 'name="description"'):
            if tag not in text:
                missing.append(f"{page.relative_to(site)}: {tag}")
    assert missing == [], "\n".join(missing[:30])


def test_pictures_a_cell_printed_have_alternative_text_that_says_what_they_show(site):
    bad = []
    for page in _pages(site):
        for tag in re.findall(r"<img [^>]*>", page.read_text(encoding="utf-8")):
            src = re.search(r'src="([^"]*)"', tag).group(1)
            if not re.search(r"_images/[0-9a-f]{20,}", src):  # only pictures a page's cell printed
                continue
            alt = htmllib.unescape((re.search(r'alt="([^"]*)"', tag) or [None, ""])[1])
            if not alt or re.search(r"[0-9a-f]{20,}|\.(svg|png)$", alt):
                bad.append(f"{page.relative_to(site)}: {alt!r}")
    assert bad == [], "\n".join(bad[:20])
    assert "Graph drawing, " in (site / "ir.html").read_text()


def test_every_gallery_thumbnail_is_the_examples_own_card(site, tmp_path):
    """Not sphinx-gallery's placeholder nor a graph shrunk to a sliver: the card fxsite draws for it."""
    from fxsite.sphinx.thumbnails import CARDS, draw_card

    scripts = sorted(p.stem for p in (ROOT / "gallery").glob("*.py"))
    assert sorted(CARDS) == scripts, "every example of the guide has a card chosen for it in CARDS"
    index = (site / "gallery" / "index.html").read_text()
    for name in scripts:
        draw_card(*CARDS[name], tmp_path / f"{name}.png")
        shown = site / "_images" / f"sphx_glr_{name}_thumb.png"
        assert f"sphx_glr_{name}_thumb.png" in index
        assert shown.read_bytes() == (tmp_path / f"{name}.png").read_bytes(), f"{name}: the thumbnail is not its card"


def test_the_gallery_index_groups_the_examples_by_part_in_the_order_of_their_cards(site):
    """FX examples under the FX heading, PT2 ones under the PT2 heading, each once, as CARDS lists them;
    the previous/next links walk the same order."""
    from fxsite.sphinx.thumbnails import CARDS, PARTS

    index = (site / "gallery" / "index.html").read_text()
    sections = re.split(r'<section id="', index)[2:]  # [0]: before the page, [1]: the page's own section
    assert len(sections) == len(PARTS), f"{len(sections)} parts on the gallery index, expected {len(PARTS)}"
    for part, section in zip(PARTS, sections):
        shown = re.findall(r"sphx_glr_(\w+?)_thumb\.png", section)
        expected = [name for name, (where, _) in CARDS.items() if where == part]
        assert shown == expected, f"{part}: {shown}"
    order = [name for part in PARTS for name, (where, _) in CARDS.items() if where == part]
    for before, after in zip(order, order[1:]):
        page = (site / "gallery" / f"{before}.html").read_text()
        assert re.search(rf'class="right-next"\s+href="{after}\.html"', page), f"{before} -> {after}"


def test_a_gallery_part_that_names_no_part_of_the_guide_is_refused(tmp_path):
    from fxsite.sphinx.thumbnails import part_scripts

    (tmp_path / "pt2_a.py").write_text('"""A."""\n')
    (tmp_path / "b.py").write_text('"""B."""\n')
    assert part_scripts("PT2", tmp_path) == ["pt2_a"] and part_scripts("FX", tmp_path) == ["b"]
    with pytest.raises(ValueError, match="must be one of FX, PT2, not 'Fx'"):
        part_scripts("Fx", tmp_path)


# Pages split in issue 40: the old page -> the page holding its opening subject, and every id the old page
# had (its headings' and labels' anchors, as main's build of 2026-11-27 wrote them), which a link may name.
SPLIT_PAGES = {
    "beyond": ("concrete-tracing.html", [
        "beyond-symbolic-tracing", "four-models-that-ask-about-their-input", "symbolic-trace-refuses-all-four",
        "symbolic_trace-refuses-all-four", "concrete-tracing-real-values-alongside-the-proxies",
        "beyond-forty-lines", "the-idea-in-forty-lines", "one-graph-per-path", "all-four-models-guarded",
        "beyond-make-fx", "make-fx-real-tensors-an-aten-graph-no-guards", "make_fx-real-tensors-an-aten-graph-no-guards",
        "beyond-export", "torch-export-shape-guards-and-torch-cond-for-data",
        "torchexport-shape-guards-and-torchcond-for-data", "beyond-compile", "torch-compile-graph-breaks-and-recompiles",
        "torchcompile-graph-breaks-and-recompiles", "beyond-dynamic-shapes", "dynamic-shapes-sizes-as-symbols",
        "torch-export-with-dim", "torchexport-with-dim", "make-fx-with-tracing-mode-symbolic",
        "make_fx-with-tracing_modesymbolic", "which-inputs-each-capture-accepts",
        "a-fair-verdict-on-the-concrete-tracer", "side-by-side", "which-tool-for-which-job", "what-to-remember"]),
    "traceable-code": ("real-model-code.html", [
        "making-real-model-code-traceable", "most-models-trace-as-they-are",
        "a-block-with-shape-dependent-code-make-it-a-leaf-timm-mobilevit",
        "a-helper-that-needs-an-int-wrap-the-function-timm-nest",
        "a-wrapper-that-takes-lists-trace-the-part-that-is-a-tensor-program-torchvision-faster-r-cnn",
        "traceable-code-export", "branches-on-shapes-inside-many-blocks-move-to-torch-export-timm-convit",
        "branches-on-shapes-inside-many-blocks-move-to-torchexport-timm-convit", "traceable-code-decorated-forward",
        "hugging-face-models-a-decorator-in-front-of-forward", "torch-export-with-dynamic-shapes-bert",
        "torchexport-with-dynamic-shapes-bert", "traceable-code-export-outputs",
        "when-export-refuses-a-cache-in-the-output-gpt-2", "fxguide-s-concrete-tracer-a-graph-of-modules",
        "fxguides-concrete-tracer-a-graph-of-modules", "hugging-face-s-own-fx-tracer-until-transformers-4",
        "hugging-faces-own-fx-tracer-until-transformers-4", "side-by-side", "what-to-remember"]),
}


def _where_the_redirect_sends(redirect: str, old: str, anchor: str) -> str:
    """The page the redirect page's script opens for ``old.html#anchor`` (its MOVED list, else its target)."""
    target = re.search(r'var target = "([^"]+)"', redirect)[1]
    moved = json.loads(re.search(r"var MOVED = (\{.*?\n\});", redirect, flags=re.S)[1])
    return next((page for page, anchors in moved.get(old, {}).items() if anchor in anchors), target)


@pytest.mark.parametrize("old", sorted(SPLIT_PAGES))
def test_a_split_pages_old_url_redirects_and_its_anchors_land_on_the_page_that_holds_them(site, old):
    opening, anchors = SPLIT_PAGES[old]
    page = site / f"{old}.html"
    assert page.is_file(), f"{old}.html is gone: its old URL no longer answers"
    redirect = page.read_text(encoding="utf-8")
    assert _is_redirect(page) and f'http-equiv="refresh" content="0; url={opening}"' in redirect, redirect[:400]
    assert _where_the_redirect_sends(redirect, old, "") == opening
    lost = []
    for anchor in anchors:
        landing = _where_the_redirect_sends(redirect, old, anchor)
        if f'id="{anchor}"' not in (site / landing).read_text(encoding="utf-8") and anchor != anchors[0]:
            lost.append(f"#{anchor} -> {landing}")  # the old page's own title (anchors[0]) opens its successor
    assert lost == [], "anchors of the old page that land where they are not: " + ", ".join(lost)


def test_no_page_links_to_a_page_that_moved(site):
    moved = "|".join(re.escape(f"{old}.html") for old in SPLIT_PAGES)
    linking = [f"{p.relative_to(site)}" for p in _pages(site)
               if re.search(rf'href="(?:\.\./)*(?:{moved})[#"]', p.read_text(encoding="utf-8"))]
    assert linking == [], f"pages that still link to a moved page (through its redirect): {linking}"


def test_every_atlas_row_that_differs_on_another_release_says_so_under_its_heading(site):
    """Issue 51 item 4: a row whose table cells differ on a reported release carries one line per release and
    column under its heading, from the committed drift reports; rows that do not differ carry none."""
    from fxsite.drift import compat

    current = compat.current_snapshots()
    covs = [compat.coverage(r, current) for r in compat.load_reports() if r["torch"] != compat.REFERENCE_TORCH]
    notes = compat.table_row_changes(covs, current)
    assert notes, "no atlas row differs on any reported release: the reports or the table parser changed"
    problems = []
    for page in sorted((ROOT / "docs" / "atlas").glob("*.md")):
        source = f"docs/atlas/{page.name}"
        built = htmllib.unescape((site / "atlas" / page.name).with_suffix(".html").read_text(encoding="utf-8"))
        boxes = built.count("fxguide-other-releases")
        wanted = [lines for (where, _), lines in notes.items() if where == source]
        if boxes != len(wanted):
            problems.append(f"{source}: {boxes} release notes, {len(wanted)} rows differ")
        for lines in wanted:
            problems += [f"{source}: missing {line!r}" for line in lines if line not in built]
    assert not problems, "\n".join(problems[:20])


def test_a_release_note_goes_under_the_heading_of_its_row_as_sphinx_typesets_it():
    """Smart quotes turn a heading's ``...`` into an ellipsis: the row is still found, and only its section
    gets the note."""
    from docutils import nodes
    from docutils.frontend import get_default_settings
    from docutils.parsers.rst import Parser
    from docutils.utils import new_document

    from fxsite.sphinx.sphinx_ext import add_release_notes_to_rows

    doctree = new_document("page", get_default_settings(Parser))
    for heading in ("logger.warning(\u2026): what each tool does", "print: what each tool does"):
        section = nodes.section()
        section += nodes.title(text=heading)
        doctree += section

    class App:
        fxguide_row_notes = {"docs/atlas/side-effects.md": {"logger.warning(...)": ["torch 2.13.0, compile: x"]}}

    add_release_notes_to_rows(App(), doctree, "atlas/side-effects")
    boxes = [section for section in doctree.findall(nodes.section)
             if any("fxguide-other-releases" in box["classes"] for box in section.findall(nodes.admonition))]
    assert [box.next_node(nodes.title).astext() for box in boxes] == ["logger.warning(\u2026): what each tool does"]
    assert "torch 2.13.0, compile: x" in boxes[0].astext()
