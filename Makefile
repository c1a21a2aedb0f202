# minigrad: the course's commands. `make test` and `make lab` set everything up.
#
#   make test     unit tests, then every notebook under strict nbval
#   make lab      JupyterLab on notebooks/, localhost only, with its token
#   make execute  re-run every notebook in place (Restart & Run All)
#   make site     the website: README and notebooks as saved, in build/site/ (nothing is run)
#   make e2e      instructors: the course in JupyterLab and the website, in headless Chromium
#   make lint     ruff on the package, the tests and the notebooks
#   make torch    add PyTorch to .venv (optional; enables the comparisons)
#   make student  write build/student/: exercises blanked, outputs cleared
#   make bench    time minigrad against hand-written NumPy (and PyTorch): benchmarks/RESULTS.md
#   make clean    remove caches and build output (`make distclean` also drops .venv)

SHELL      := /bin/bash
PYTHON     ?= python3
VENV       := .venv
BIN        := $(VENV)/bin
STAMP      := $(VENV)/.installed
NOTEBOOKS  := $(sort $(wildcard notebooks/[0-9][0-9]_*.ipynb))
TORCH_SPEC ?= torch==2.13.0
ROOTFLAG   := $(if $(filter 0,$(shell id -u)),--allow-root)
NBVAL      := --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg \
              --nbval-cell-timeout 600

# Same hashes, one BLAS thread per process: steadier numbers on a small machine.
export PYTHONHASHSEED := 0
export OMP_NUM_THREADS ?= 1
export OPENBLAS_NUM_THREADS ?= 1
export MKL_NUM_THREADS ?= 1

.PHONY: test unit nbtest lab site e2e execute lint torch student bench clean distclean venv dot trust help
.DEFAULT_GOAL := help

help:
	@sed -n '/^#   make /p' Makefile | sed 's/^# \{0,1\}//'

# ------------------------------------------------------------------ set-up
# The venv is (re)built only when pyproject.toml changes.
$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 10))' || { \
	  echo "minigrad needs Python 3.10 or newer; '$(PYTHON)' is $$($(PYTHON) --version 2>&1)."; \
	  echo "Run: make PYTHON=python3.11 test   (or any python >= 3.10)"; exit 1; }
	@[ -x $(BIN)/python ] || $(PYTHON) -m venv $(VENV) || { \
	  echo "Could not create $(VENV). On Debian/Ubuntu: sudo apt-get install -y python3-venv"; exit 1; }
	$(BIN)/python -m pip install --quiet -e '.[course]'
	@touch $(STAMP)

venv: $(STAMP)

# Graphviz's `dot` draws the graphs. Install it where we can, else say how.
dot:
	@tools/ensure_program.sh dot graphviz graphviz "Graphviz's dot program"

# JupyterLab shows saved SVG (the graphs) only for trusted notebooks; these are
# the course's own, so mark them trusted for this user.
trust: $(STAMP)
	@$(BIN)/jupyter trust $(NOTEBOOKS) >/dev/null

# ------------------------------------------------------------------- tests
test: unit nbtest

unit: $(STAMP) dot
	$(BIN)/python -m pytest -q tests

nbtest: $(STAMP) dot
	$(BIN)/python -m pytest -q $(NBVAL) $(NOTEBOOKS)

# ---------------------------------------------------------------- the lab
lab: $(STAMP) dot trust
	$(BIN)/jupyter lab --ServerApp.ip=127.0.0.1 --ServerApp.root_dir=notebooks $(ROOTFLAG)

# ------------------------------------------------------------ the website
# Sphinx + myst-nb + sphinx-book-theme (docs/requirements.txt, installed into
# .venv on first use) turn the saved notebooks into static pages; MathJax comes
# from the npm registry (its tarball's sha256 is checked) and is served by the
# site itself. Sources are laid out in build/site-src; docs/conf.py says why.
SITE_STAMP     := $(VENV)/.site-installed
SITE_SRC       := build/site-src
MATHJAX_VER    := 3.2.2
MATHJAX_SHA256 := 1b9c0a1c44df864e915690558e72adb9cc5203360daefd385084ced3b6c64c09
MATHJAX_DIR    := build/site-static/mathjax
# What tex-mml-chtml.js loads: itself, TeX extensions on demand, its fonts, the
# accessibility tools of its menu (and their speech rules).
MATHJAX_FILES  := tex-mml-chtml.js input output/chtml a11y sre ui

$(SITE_STAMP): $(STAMP) docs/requirements.txt
	$(BIN)/python -m pip install --quiet -r docs/requirements.txt
	@touch $@

$(MATHJAX_DIR)/tex-mml-chtml.js:
	@tools/ensure_program.sh npm npm node "npm (fetches MathJax for the website)"
	rm -rf build/mathjax-pack $(MATHJAX_DIR) && mkdir -p build/mathjax-pack $(MATHJAX_DIR)
	cd build/mathjax-pack && npm pack --silent mathjax@$(MATHJAX_VER) >/dev/null
	echo "$(MATHJAX_SHA256)  build/mathjax-pack/mathjax-$(MATHJAX_VER).tgz" | sha256sum -c --quiet
	tar -xzf build/mathjax-pack/mathjax-$(MATHJAX_VER).tgz -C build/mathjax-pack
	cd build/mathjax-pack/package/es5 && cp -r --parents $(MATHJAX_FILES) $(CURDIR)/$(MATHJAX_DIR)/
	cp build/mathjax-pack/package/LICENSE $(MATHJAX_DIR)/LICENSE
	rm -rf build/mathjax-pack

site: $(SITE_STAMP) $(MATHJAX_DIR)/tex-mml-chtml.js
	rm -rf $(SITE_SRC) build/site build/site-doctrees build/jupyter_execute && mkdir -p $(SITE_SRC)/notebooks $(SITE_SRC)/benchmarks
	cp docs/index.md README.md $(SITE_SRC)/
	cp $(NOTEBOOKS) $(SITE_SRC)/notebooks/
	cp benchmarks/RESULTS.md benchmarks/results.png $(SITE_SRC)/benchmarks/
	$(BIN)/sphinx-build -b html -c docs -d build/site-doctrees -E -W --keep-going -q $(SITE_SRC) build/site
	@echo "Website: build/site/index.html ($$(find build/site -name '*.html' -not -path '*/_static/*' | wc -l) pages)"

# For instructors: the course checked end to end in headless Chromium, in
# JupyterLab and on the website (so the site is built first).
e2e: $(STAMP) dot trust site
	@tools/ensure_program.sh "$${CHROMIUM:-chromium} chromium-browser google-chrome" chromium "" "Chromium"
	@$(BIN)/python -c 'import playwright' 2>/dev/null || $(BIN)/python -m pip install --quiet 'playwright>=1.40'
	$(BIN)/python tools/e2e.py

# -------------------------------------------------------- maintenance
# Restart & Run All, saved in place: outputs kept, execution counts 1..n.
execute: $(STAMP) dot
	$(BIN)/jupyter nbconvert --to notebook --execute --inplace \
	  --ExecutePreprocessor.timeout=900 --ExecutePreprocessor.kernel_name=python3 $(NBS)
	$(BIN)/python -m pytest -q tests/test_notebooks.py

# `make execute NBS=notebooks/03_backpropagation.ipynb` runs just that one.
NBS ?= $(NOTEBOOKS)

lint: $(STAMP)
	$(BIN)/ruff check minigrad tests notebooks tools benchmarks

torch: $(STAMP)
	@$(BIN)/python -c 'import torch' 2>/dev/null || $(BIN)/python -m pip install --quiet '$(TORCH_SPEC)'

# The student version: each "# BEGIN SOLUTION ... # END SOLUTION" region becomes
# `raise NotImplementedError`; outputs are cleared. See build/student/README.md.
student: $(STAMP)
	$(BIN)/python tools/make_student.py --out build/student $(NOTEBOOKS)

# Each case runs in its own process with one BLAS thread; a few minutes in all.
# PyTorch's columns say "not installed" until `make torch`. BENCH_ARGS=--quick for a smoke run.
bench: $(STAMP)
	$(BIN)/python benchmarks/run.py $(BENCH_ARGS)

clean:
	rm -rf build .pytest_cache .hypothesis .ruff_cache *.egg-info
	find . -name __pycache__ -type d -prune -not -path './$(VENV)/*' -exec rm -rf {} +
	find notebooks -name .ipynb_checkpoints -type d -prune -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV)
