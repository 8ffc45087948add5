# fxguide — two commands: `make docs` builds the site, `make test` runs every check.
# Both create .venv from constraints.txt when it is missing and reuse it otherwise.

PYTHON   ?= python3
VENV     ?= .venv
BUILDDIR ?= _build
PORT     ?= 8000
SPHINXOPTS ?= -j auto
PY       := $(VENV)/bin/python
STAMP    := $(VENV)/.installed

.PHONY: help venv tools docs test serve update-expected drift bench lock clean

help:
	@echo "make docs             build the site into $(BUILDDIR)/html (creates $(VENV) if needed)"
	@echo "make test             unit tests, doctests, docs build and output checks"
	@echo "make serve            serve $(BUILDDIR)/html on http://127.0.0.1:$(PORT)"
	@echo "make update-expected  re-record every expected output from the installed torch"
	@echo "make drift TORCH=X    run all checks against torch X in a side environment; writes drift/torch-X/"
	@echo "make bench            measure build and test times (writes bench/results.md)"

venv: $(STAMP)

$(STAMP): constraints.txt pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet -c constraints.txt setuptools
	$(PY) -m pip install --quiet --no-build-isolation -c constraints.txt -e '.[docs,test]'
	@$(PY) -c "import torch, sys; v = torch.__version__.split('+')[0]; sys.exit(0 if v == '2.13.0' else 'reference venv has torch ' + v + ', expected 2.13.0: rm -rf $(VENV) and retry')"
	@touch $(STAMP)

docs: $(STAMP) tools
	$(PY) -m sphinx -b html -c . -W --keep-going $(SPHINXOPTS) docs $(BUILDDIR)/html

tools:
	@bash .ci/ensure-tools

test: $(STAMP) tools
	$(PY) -m pytest $(PYTEST_ARGS)

serve:
	@test -f $(BUILDDIR)/html/index.html || { echo "no site yet: run 'make docs' first"; exit 1; }
	$(PY) -m fxguide.site.serve $(BUILDDIR)/html --port $(PORT)

update-expected: $(STAMP)
	$(PY) -m fxguide.drift record

drift: $(STAMP)
	@test -n "$(TORCH)" || { echo "usage: make drift TORCH=2.14.1"; exit 2; }
	$(PY) -m fxguide.drift.side_env $(TORCH)

bench: $(STAMP)
	$(PY) -m bench $(BENCH_ARGS)

lock:
	rm -rf .venv-lock && $(PYTHON) -m venv .venv-lock
	.venv-lock/bin/pip install --quiet 'torch==2.13.0' setuptools -e '.[docs,test]'
	{ head -2 constraints.txt; .venv-lock/bin/pip freeze --exclude-editable | grep -v '^torch==' ; \
	  echo "setuptools==$$(.venv-lock/bin/python -c 'import setuptools; print(setuptools.__version__)')"; \
	  echo 'torch==2.13.0'; } > constraints.new && mv constraints.new constraints.txt
	rm -rf .venv-lock

clean:
	rm -rf $(BUILDDIR) docs/gallery docs/sg_execution_times.rst docs/api/generated docs/compatibility.md .jupyter_cache
