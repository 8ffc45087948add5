"""Every output the site shows is the same under other CPU kernels and another thread count.

The docs build every other output check reads runs with this machine's best kernels
(``ATEN_CPU_CAPABILITY`` unset) and torch's own thread count. Here a copy of the
checkout is built under the baseline kernels (``default``) and another thread count
(:func:`fxsite.drift.cpu.other_setting`), and each page's and script's outputs are
compared with the same recordings. A value printed at rounding level (a difference
from eager, an error against a reference, any digit a kernel or a thread split can
move) fails here, naming the cell: show it as a bound, a verdict or a count instead.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fxsite.drift import cpu
from fxsite.drift.extract import ROOT, gallery_sources, page_sources

pytestmark = [pytest.mark.docs, pytest.mark.xdist_group("cpu-check")]

SITE = Path(os.environ.get("FXGUIDE_BUILD_DIR", ROOT / "_build")) / "cpu-check"


@pytest.fixture(scope="session")
def site_on_other_cpu() -> tuple[Path, cpu.Setting, str]:
    """The copy of the checkout, built under the other setting (CI re-executes every page, as for the main build)."""
    setting = cpu.other_setting()
    site = cpu.copy_checkout(SITE)
    done = cpu.build_under(setting, site)
    log = "" if done.returncode == 0 else done.stdout[-8000:]
    return site, setting, log


def _sources() -> list[str]:
    return [str(p.relative_to(ROOT)) for p in page_sources() + gallery_sources()]


@pytest.mark.parametrize("source", _sources())
def test_outputs_do_not_depend_on_the_cpu(site_on_other_cpu, source):
    site, setting, log = site_on_other_cpu
    moved = cpu.moved(site, setting, [source])
    if moved:
        pytest.fail("\n\n".join(moved[source]) + f"\n\nThis output depends on the CPU's kernels or thread count "
                    f"(it differs under {setting}): print a bound, a verdict or a count instead of the value."
                    + (f"\n\nThe build under {setting} failed:\n{log}" if log else ""), pytrace=False)


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
