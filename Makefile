# fxguide — two commands: `make docs` builds the site, `make test` runs every check.
# Both create .venv from constraints.txt when it is missing and reuse it otherwise.

PYTHON   ?= python3
VENV     ?= .venv
BUILDDIR ?= _build
PORT     ?= 8000
# pytest-xdist workers for `make test`; loadgroup keeps the tests of the docs build on the worker
# that builds it; units start in the order the conftest gives (long tests first: tests/conftest.py)
TEST_WORKERS ?= auto
SPHINXOPTS ?= -j auto
PY       := $(VENV)/bin/python
STAMP    := $(VENV)/.installed
# The reference torch: the one constraints.txt pins (and fxsite.drift.report.REFERENCE_TORCH reads).
REFERENCE_TORCH := $(shell sed -n 's/^torch==//p' constraints.txt)

.PHONY: help venv tools docs livehtml test serve check update-expected drift reports bench survey lock clean

help:
	@echo "make docs             build the site into $(BUILDDIR)/html (creates $(VENV) if needed)"
	@echo "make test             unit tests, doctests, docs build and output checks"
	@echo "make serve            serve $(BUILDDIR)/html on http://127.0.0.1:$(PORT)"
	@echo "make livehtml         build, serve on http://127.0.0.1:$(PORT), rebuild on every save; the page reloads itself"
	@echo "make check PAGE=docs/x.md   build, then compare that page's (or gallery script's) outputs with their expectations"
	@echo "make update-expected  re-record every expected output from the installed torch (PAGE=docs/x.md: that page only)"
	@echo "make drift TORCH=X    run all checks against torch X in a side environment; writes drift/torch-X/"
	@echo "                       (SURVEY=1 also runs the whole model-zoo survey there)"
	@echo "make reports          bring every committed drift report up to date (outputs only; one to two minutes"
	@echo "                       per release when its side environment is cached and one page changed)"
	@echo "make survey           trace every torchvision, timm and transformers model (SURVEY_ARGS='-n 4', '--sample');"
	@echo "                       writes drift/torch-<version>/survey.json; SHARD=i/N runs one of N shards balanced"
	@echo "                       by recorded time (_build/survey/shard-i-of-N.json); python -m fxsite.survey merge combines them"
	@echo "make bench            measure build and test times (writes fxsite/bench/results.md)"

venv: $(STAMP)

$(STAMP): constraints.txt pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet -c constraints.txt setuptools
	$(PY) -m pip install --quiet --no-build-isolation -c constraints.txt -e '.[docs,test]'
	@$(PY) -c "import torch, sys; v = torch.__version__.split('+')[0]; sys.exit(0 if v == '$(REFERENCE_TORCH)' else 'reference venv has torch ' + v + ', expected $(REFERENCE_TORCH): rm -rf $(VENV) and retry')"
	@touch $(STAMP)

# Sphinx runs unless nothing it reads changed since its last good build here (fxsite/sphinx/uptodate.py).
docs: $(STAMP)
	@bash .ci/ensure-tools docs
	@$(PY) -m fxsite.sphinx.uptodate $(BUILDDIR)/html/.make-docs-stamp -- \
	    $(PY) -m fxsite.sphinx.run -b html -c . -W --keep-going $(SPHINXOPTS) docs $(BUILDDIR)/html

# What the build itself writes where sphinx-autobuild watches is ignored, or each build would start the next.
# sphinx-autobuild resolves every --ignore against the folder it runs in: these are paths from the root, not globs.
LIVE_IGNORE := --ignore docs/gallery --ignore docs/api/generated --ignore docs/compatibility.md \
               --ignore .jupyter_cache --re-ignore '/__pycache__/'
livehtml: $(STAMP)
	@bash .ci/ensure-tools docs
	$(PY) -m fxsite.sphinx.live -b html -c . $(SPHINXOPTS) --port $(PORT) --watch fxguide --watch gallery \
	    $(LIVE_IGNORE) docs $(BUILDDIR)/html

tools:
	@bash .ci/ensure-tools

test: $(STAMP) tools
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadgroup --no-loadscope-reorder $(PYTEST_ARGS)

serve:
	@test -f $(BUILDDIR)/html/index.html || { echo "no site yet: run 'make docs' first"; exit 1; }
	$(PY) -m fxsite.web.serve $(BUILDDIR)/html --port $(PORT)

# PAGE=docs/x.md (or gallery/x.py): the incremental build re-runs what changed; only that page is compared or recorded.
check: docs
	@test -n "$(PAGE)" || { echo "usage: make check PAGE=docs/quickstart.md (or a gallery script)"; exit 2; }
	$(PY) -m fxsite.drift check --no-build --build-dir $(BUILDDIR) --page $(PAGE)

update-expected: $(STAMP)
	$(if $(PAGE),$(MAKE) docs && $(PY) -m fxsite.drift record --no-build --build-dir $(BUILDDIR) --page $(PAGE),$(PY) -m fxsite.drift record)

drift: $(STAMP)
	@test -n "$(TORCH)" || { echo "usage: make drift TORCH=2.14.1"; exit 2; }
	$(PY) -m fxsite.drift.side_env $(TORCH) $(if $(SURVEY),--survey)

reports: $(STAMP)
	$(PY) -m fxsite.drift.side_env --refresh

bench: $(STAMP)
	$(PY) -m fxsite.bench $(BENCH_ARGS)

survey: $(STAMP)
	$(PY) -m fxsite.survey $(if $(SHARD),--shard $(SHARD)) $(SURVEY_ARGS)

lock:
	rm -rf .venv-lock && $(PYTHON) -m venv .venv-lock
	.venv-lock/bin/pip install --quiet 'torch==$(REFERENCE_TORCH)' '$(shell grep '^torchvision==' constraints.txt)' setuptools -e '.[docs,test]'
	{ head -2 constraints.txt; .venv-lock/bin/pip freeze --exclude-editable | grep -v '^torch==\|^torchvision==\|^setuptools==' ; \
	  echo "setuptools==$$(.venv-lock/bin/python -c 'import setuptools; print(setuptools.__version__)')"; \
	  grep '^torch==\|^torchvision==' constraints.txt; } > constraints.new && mv constraints.new constraints.txt
	rm -rf .venv-lock

clean:
	rm -rf $(BUILDDIR) docs/gallery docs/api/generated docs/compatibility.md .jupyter_cache
