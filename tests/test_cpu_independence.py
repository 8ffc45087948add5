"""Every output the site shows is the same under other CPU kernels and another thread count.

The docs build every other output check reads runs with this machine's best kernels
(``ATEN_CPU_CAPABILITY`` unset) and torch's own thread count. Here each page and script
runs again under the baseline kernels (``default``) and another thread count
(:func:`fxsite.drift.cpu.other_setting`), and its outputs are compared with the same
recordings. A value printed at rounding level (a difference from eager, an error against
a reference, any digit a kernel or a thread split can move) fails here, naming the cell:
show it as a bound, a verdict or a count instead.

A page runs as the notebook a reader downloads, in a fresh environment
(``tests/test_notebooks.py`` runs it once for both files); the gallery scripts run in a
copy of the checkout built under the other setting, its pages read but not executed.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from fxsite.drift import cpu
from fxsite.drift.extract import ROOT, gallery_sources, page_sources
from tests.test_notebooks import _executed_sources, as_in_the_checkout, reader_cpu, run_downloaded

pytestmark = [pytest.mark.docs]

SITE = Path(os.environ.get("FXGUIDE_BUILD_DIR", ROOT / "_build")) / "cpu-check"


ADVICE = "print a bound, a verdict or a count instead of the value"


@pytest.fixture(scope="session")
def site_on_other_cpu() -> tuple[Path, cpu.Setting, str]:
    """The copy of the checkout, its examples run under the other setting (CI re-executes them, as for the
    main build); its pages are read, not executed (they run as notebooks below)."""
    setting = reader_cpu()
    site = cpu.copy_checkout(SITE)
    done = cpu.build_under(setting, site, pages=False)
    log = "" if done.returncode == 0 else done.stdout[-8000:]
    return site, setting, log


@pytest.mark.xdist_group("cpu-check")
@pytest.mark.parametrize("source", [str(p.relative_to(ROOT)) for p in gallery_sources()])
def test_an_examples_outputs_do_not_depend_on_the_cpu(site_on_other_cpu, source):
    site, setting, log = site_on_other_cpu
    moved = cpu.moved(site, setting, [source])
    if moved:
        pytest.fail("\n\n".join(moved[source]) + f"\n\nThis output depends on the CPU's kernels or thread count "
                    f"(it differs under {setting}): {ADVICE}."
                    + (f"\n\nThe build under {setting} failed:\n{log}" if log else ""), pytrace=False)


@pytest.mark.spread
@pytest.mark.parametrize("source", [str(p.relative_to(ROOT)) for p in page_sources()])
def test_a_pages_outputs_do_not_depend_on_the_cpu_or_the_readers_environment(source, built_site, wheel, once_per_run):
    """(``source``, not ``page``: pytest-playwright's ``page`` fixture would parametrize the test by browser.)"""
    name = Path(source).relative_to("docs").with_suffix("").as_posix()
    run = run_downloaded(name, built_site, wheel, once_per_run)
    result = json.loads((run / "result.json").read_text())
    if not (run / "executed.ipynb").is_file():
        pytest.fail(f"{name}.ipynb did not start under {reader_cpu()}:\n{result['stderr']}", pytrace=False)
    moved = cpu.moved_in_notebook(source, as_in_the_checkout(run), reader_cpu())
    if moved:
        pytest.fail("\n\n".join(moved) + f"\n\nThe notebook a reader downloads shows something else than the page: "
                    f"it ran under {reader_cpu()}, in an environment holding only what its install cell installs. "
                    f"Either the output depends on the CPU's kernels or thread count ({ADVICE}), or on a package "
                    f"the build has and the reader does not get (make the install cell ask for it: "
                    f"fxsite/sphinx/running.py)."
                    + (f"\n\nThe notebook stopped:\n{result['stderr']}" if result["returncode"] else ""),
                    pytrace=False)


def test_every_page_the_notebooks_run_is_compared_here():
    pages = {Path(p).relative_to(ROOT / "docs").with_suffix("").as_posix() for p in page_sources()}
    assert pages == {name for name in _executed_sources() if not name.startswith("gallery/")}


def test_the_other_setting_differs_from_this_processs_in_kernels_and_threads():
    now, other = cpu.torch_reads(), cpu.other_setting()
    assert other.threads != now.threads
    best = cpu.torch_reads({k: v for k, v in os.environ.items() if k != "ATEN_CPU_CAPABILITY"}).capability
    if best != "default":  # a machine with vector kernels beyond the baseline: they differ too
        assert other.capability != now.capability
    assert cpu.torch_reads(dict(os.environ, **other.env)) == other, "torch must run under the setting it was given"


def test_a_build_under_other_cpu_settings_keys_its_caches_apart(monkeypatch):
    from fxsite.sphinx.fingerprint import environment, inductor_cache_dir

    for name in [n for n in os.environ if n.startswith(("ATEN_", "ONEDNN_", "DNNL_", "TORCHINDUCTOR_CACHE_DIR"))]:
        monkeypatch.delenv(name)
    plain = environment()
    assert inductor_cache_dir() is None, "no CPU setting: Inductor's own default folder"
    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "avx2")
    assert environment() != plain
    assert "ATEN_CPU_CAPABILITY=avx2" in inductor_cache_dir()
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", "/somewhere/chosen")
    assert inductor_cache_dir() is None
