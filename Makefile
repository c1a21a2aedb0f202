# minigrad: the course's commands. `make test` and `make lab` set everything up.
#
#   make test     unit tests, then every notebook under strict nbval
#   make lab      JupyterLab on notebooks/, localhost only, with its token
#   make execute  re-run every notebook in place (Restart & Run All)
#   make e2e      instructors: open every notebook in JupyterLab in headless Chromium
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

.PHONY: test unit nbtest lab e2e execute lint torch student bench clean distclean venv dot trust help
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
	@# The distribution used to be called minigrad, like an unrelated PyPI project.
	@$(BIN)/python -m pip uninstall --quiet --yes minigrad 2>/dev/null || true
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

# For instructors: the course checked end to end in headless Chromium.
e2e: $(STAMP) dot trust
	@tools/ensure_program.sh "$${CHROMIUM:-chromium} chromium-browser google-chrome" chromium "" "Chromium"
	@$(BIN)/python -c 'import playwright' 2>/dev/null || $(BIN)/python -m pip install --quiet 'playwright>=1.40'
	$(BIN)/python tools/e2e.py

# -------------------------------------------------------- maintenance
# Restart & Run All, saved in place: outputs kept, execution counts 1..n. No run
# timestamps are recorded (and old ones are stripped), and figures are saved as
# 256-colour PNGs, so a re-run changes only what the notebooks show.
execute: $(STAMP) dot
	$(BIN)/jupyter nbconvert --to notebook --execute --inplace \
	  --ExecutePreprocessor.timeout=900 --ExecutePreprocessor.kernel_name=python3 \
	  --ExecutePreprocessor.record_timing=False $(NBS)
	$(BIN)/python tools/strip_notebooks.py $(NBS)
	$(BIN)/python tools/shrink_pngs.py $(NBS)
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
