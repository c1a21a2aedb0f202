# minigrad: the course's commands. `make test` and `make lab` set everything up.
#
#   make test     unit tests, then every notebook under strict nbval
#   make lab      JupyterLab on notebooks/, localhost only, with its token
#   make execute  re-run every notebook in place (Restart & Run All)
#   make lint     ruff on the package, the tests and the notebooks
#   make torch    add PyTorch to .venv (optional; enables the comparisons)
#   make bench    time minigrad against hand-written NumPy (and PyTorch): benchmarks/RESULTS.md
#   make clean    remove caches and build output (`make distclean` also drops .venv)

SHELL      := /bin/bash
PYTHON     ?= python3
VENV       := .venv
BIN        := $(VENV)/bin
STAMP      := $(VENV)/.installed
NOTEBOOKS  := $(sort $(wildcard notebooks/[0-9][0-9]_*.ipynb))
TORCH_SPEC ?= torch==2.13.0
NBVAL      := --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg \
              --nbval-cell-timeout 600

# Same hashes, one BLAS thread per process: steadier numbers on a small machine.
export PYTHONHASHSEED := 0
export OMP_NUM_THREADS ?= 1
export OPENBLAS_NUM_THREADS ?= 1
export MKL_NUM_THREADS ?= 1

.PHONY: test unit nbtest lab execute lint torch bench clean distclean venv dot help
.DEFAULT_GOAL := help

help:
	@sed -n '3,10p' Makefile | sed 's/^# \{0,1\}//'

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
	@if command -v dot >/dev/null 2>&1; then exit 0; fi; \
	echo "Graphviz's 'dot' is not on the PATH; installing it..."; \
	if [ "$$(uname -s)" = Darwin ]; then \
	  if command -v brew >/dev/null 2>&1; then brew install graphviz; fi; \
	elif command -v apt-get >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ]; then SUDO=""; \
	  elif command -v sudo >/dev/null 2>&1; then SUDO="sudo"; \
	  else SUDO="none"; fi; \
	  if [ "$$SUDO" != none ]; then \
	    $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq graphviz >/dev/null; \
	  fi; \
	elif command -v dnf >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then dnf install -y graphviz; \
	fi; \
	if ! command -v dot >/dev/null 2>&1; then \
	  echo ""; \
	  echo "Could not install Graphviz automatically. Please install it, then re-run make:"; \
	  echo "  Debian/Ubuntu: sudo apt-get install -y graphviz"; \
	  echo "  Fedora:        sudo dnf install -y graphviz"; \
	  echo "  macOS:         brew install graphviz"; \
	  echo "  conda:         conda install -c conda-forge graphviz"; \
	  exit 1; \
	fi; \
	echo "Installed: $$(dot -V 2>&1)"

# ------------------------------------------------------------------- tests
test: unit nbtest

unit: $(STAMP) dot
	$(BIN)/python -m pytest -q tests

nbtest: $(STAMP) dot
	$(BIN)/python -m pytest -q $(NBVAL) $(NOTEBOOKS)

# ---------------------------------------------------------------- the lab
lab: $(STAMP) dot
	$(BIN)/jupyter lab --ServerApp.ip=127.0.0.1 --ServerApp.root_dir=notebooks

# -------------------------------------------------------- maintenance
# Restart & Run All, saved in place: outputs kept, execution counts 1..n.
execute: $(STAMP) dot
	$(BIN)/jupyter nbconvert --to notebook --execute --inplace \
	  --ExecutePreprocessor.timeout=900 --ExecutePreprocessor.kernel_name=python3 $(NBS)
	$(BIN)/python -m pytest -q tests/test_notebooks.py

# `make execute NBS=notebooks/03_backpropagation.ipynb` runs just that one.
NBS ?= $(NOTEBOOKS)

lint: $(STAMP)
	$(BIN)/ruff check minigrad tests notebooks benchmarks

torch: $(STAMP)
	@$(BIN)/python -c 'import torch' 2>/dev/null || $(BIN)/python -m pip install --quiet '$(TORCH_SPEC)'

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
