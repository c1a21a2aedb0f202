# minigrad: the course's commands. `make test`, `make lab-student` and `make lab` set everything up.
#
#   make test     unit tests, then every notebook under strict nbval
#   make lab-student  learners: JupyterLab on the exercises (build/student/), localhost only, with a token
#                 (both labs add PyTorch's CPU build, for the comparisons; TORCH=0 skips it)
#   make lab      instructors: JupyterLab on the reference notebooks (notebooks/), the same way
#   make lab LANG=zh  (and lab-student, student) the same in the Chinese edition (build/zh/)
#   make execute  re-run every notebook in place (Restart & Run All)
#   make site     the website: README and notebooks as saved, in build/site/ (nothing is run);
#                 the Chinese edition in build/site/zh/
#   make e2e      instructors: the course in JupyterLab and the website, in headless Chromium;
#                 also the Chinese notebooks under strict nbval (make nbtest-zh) and the autograder on every notebook (make slow)
#   make i18n-status  what the Chinese edition still needs translated (tools/i18n.py)
#   make lint     ruff on the package, the tests and the notebooks
#   make torch    add PyTorch's CPU build to .venv (the labs do it too; enables the comparisons)
#   make student  write build/student/: exercises blanked, outputs cleared
#   make assign   instructors: student notebooks and otter-grader autograders, in build/assign/
#   make grade SUBMISSIONS=dir  instructors: grade dir/<student>/<notebook>.ipynb into build/grades/
#   make slow     the slowest test: the autograder gives every reference notebook full marks (in e2e)
#   make publish-student  write student/ and zh/ (committed, for Colab links) from notebooks/ and i18n/zh/
#   make colab    insert or update every notebook's set-up cell (tools/colab.py)
#   make bench    time minigrad against hand-written NumPy (and PyTorch): benchmarks/RESULTS.md
#   make upgrade  re-resolve constraints.txt to the newest versions that work together, rebuild .venv
#   make clean    remove caches and build output (`make distclean` also drops .venv)
#   (conda instead of make: environment.yml's header says how, step by step)

SHELL      := /bin/bash
PYTHON     ?= python3
VENV       := .venv
BIN        := $(VENV)/bin
STAMP      := $(VENV)/.installed
NOTEBOOKS  := $(sort $(wildcard notebooks/[0-9][0-9]_*.ipynb))
TORCH_SPEC ?= torch==2.13.0
# Where PyTorch's CPU-only wheels are (pip takes the +cpu build from there); TORCH_INDEX= for PyPI only.
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
# The labs install PyTorch (make torch) unless TORCH=0.
TORCH ?= 1
ROOTFLAG   := $(if $(filter 0,$(shell id -u)),--allow-root)
NBVAL      := --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg \
              --nbval-cell-timeout 600

# Same hashes, one BLAS thread per process: steadier numbers on a small machine.
export PYTHONHASHSEED := 0
export OMP_NUM_THREADS ?= 1
export OPENBLAS_NUM_THREADS ?= 1
export MKL_NUM_THREADS ?= 1
# Saved outputs repeat on every x86-64 machine with AVX2: NumPy's AVX-512 kernels (exp, tanh, ...)
# and OpenBLAS's AVX-512 matmul round some results differently in the last bit, which a finite
# difference at h = 1e-6 or a count of bit-equal steps shows. The tests and `make execute` use the
# AVX2 kernels everywhere (set either variable to override).
ifeq ($(shell uname -m),x86_64)
ifneq ($(shell grep -m1 -o -w avx2 /proc/cpuinfo 2>/dev/null),)
export NPY_DISABLE_CPU_FEATURES ?= X86_V4 AVX512_ICL AVX512_SPR
export OPENBLAS_CORETYPE ?= Haswell
endif
endif

.PHONY: test unit slow grading-check nbtest lab site e2e execute lint torch student bench clean distclean venv dot trust help \
        publish-student colab assign grade
.PHONY: zh nbtest-zh i18n-status
.DEFAULT_GOAL := help
# Several targets install into the one .venv: never two at once, even under make -j.
.NOTPARALLEL:

help:
	@sed -n '/^#   make /p' Makefile | sed 's/^# \{0,1\}//'

# The edition: `make lab LANG=zh` (lab-student, student) serves the Chinese one.
# LANG is also the locale's variable, so only a LANG given on make's command
# line picks the edition, and the recipes then run with LANG=C.UTF-8.
EDITION := $(if $(filter command line,$(origin LANG)),$(LANG),en)
ifneq ($(filter-out en zh,$(EDITION)),)
$(error LANG=$(EDITION): the course's editions are LANG=en (the default) and LANG=zh)
endif
ifeq ($(origin LANG),command line)
override LANG := C.UTF-8
endif
ZH       := $(filter zh,$(EDITION))

# ------------------------------------------------------------------ set-up
.PHONY: lab-student dot-optional torch-optional upgrade

# Known-good versions of everything the course installs (see `make upgrade`).
# They were resolved on one Python version (the file says which); on another,
# or with `make venv CONSTRAINTS=`, the newest versions are installed instead.
CONSTRAINTS ?= constraints.txt

# The venv is (re)built only when pyproject.toml or the constraints change.
$(STAMP): pyproject.toml $(CONSTRAINTS)
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 10))' || { \
	  echo "minigrad needs Python 3.10 or newer; '$(PYTHON)' is $$($(PYTHON) --version 2>&1)."; \
	  echo "Run: make PYTHON=python3.11 test   (or any python >= 3.10)"; exit 1; }
	@[ -x $(BIN)/python ] || $(PYTHON) -m venv $(VENV) || { \
	  echo "Could not create $(VENV). On Debian/Ubuntu: sudo apt-get install -y python3-venv"; exit 1; }
	@# The distribution used to be called minigrad, like an unrelated PyPI project.
	@$(BIN)/python -m pip uninstall --quiet --yes minigrad 2>/dev/null || true
	@pin=; if [ -n "$(CONSTRAINTS)" ]; then \
	  want=$$(sed -n 's/^# Python: *//p' $(CONSTRAINTS)); \
	  have=$$($(BIN)/python -c 'import sys; print("%d.%d" % sys.version_info[:2])'); \
	  if [ "$$want" = "$$have" ]; then pin="-c $(CONSTRAINTS)"; \
	  else echo "Note: $(CONSTRAINTS) holds versions known to work on Python $$want; this is" \
	    "Python $$have, so the newest versions are installed instead."; fi; \
	fi; \
	echo "$(BIN)/python -m pip install --quiet $$pin -e '.[course]'"; \
	$(BIN)/python -m pip install --quiet $$pin -e '.[course]' || { \
	  [ -n "$$pin" ] && echo "Installing the versions in $(CONSTRAINTS) failed; trying the newest ones." && \
	  $(BIN)/python -m pip install --quiet -e '.[course]'; }
	@touch $(STAMP)

venv: $(STAMP)

# Re-resolve the constraints: install the course into a throw-away venv without
# them (JupyterLab kept at 4.x), write what was installed to constraints.txt,
# then bring .venv up to it. Review `git diff constraints.txt`, then `make test`.
# PyTorch stays out: `make torch` installs $(TORCH_SPEC).
upgrade:
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	echo "Resolving the newest versions in a fresh venv ($$tmp)..." && \
	$(PYTHON) -m venv "$$tmp/venv" && \
	"$$tmp/venv/bin/python" -m pip install --quiet '.[course,grading]' 'jupyterlab<5' && \
	{ echo "# Known-good versions of everything \`pip install -e '.[course,grading]'\` installs; the venv"; \
	  echo "# bootstrap installs with them (pip install -c constraints.txt). \`make upgrade\`"; \
	  echo "# writes this file anew from a fresh install with jupyterlab<5. PyTorch is not"; \
	  echo "# here (\`make torch\` installs $(TORCH_SPEC))."; \
	  echo "# Python: $$("$$tmp/venv/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"; \
	  "$$tmp/venv/bin/python" -m pip freeze --exclude minigrad-course | LC_ALL=C sort -f; \
	} > "$$tmp/constraints.txt" && \
	grep -qi '^jupyterlab==4\.' "$$tmp/constraints.txt" && \
	mv "$$tmp/constraints.txt" constraints.txt && echo "Wrote constraints.txt."
	@$(MAKE) --no-print-directory venv

# Graphviz's `dot` draws the graphs. Install it where we can, else say how.
# The tests need it; the lab goes on without it, because saved graphs display
# anyway (only cells that draw a new graph fail until it is installed).
dot:
	@tools/ensure_program.sh dot graphviz graphviz "Graphviz's dot program"

dot-optional:
	@tools/ensure_program.sh dot graphviz graphviz "Graphviz's dot program" || \
	  echo "Going on without it: the saved graphs display, but cells that draw a graph will fail." >&2

# JupyterLab shows saved SVG (the graphs) only for trusted notebooks; these are
# the course's own, so mark them trusted for this user. Redone only when a
# notebook changes.
TRUSTED := $(VENV)/.trusted
$(TRUSTED): $(NOTEBOOKS) | $(STAMP)
	@$(BIN)/jupyter trust $(NOTEBOOKS) >/dev/null
	@touch $@

trust: $(TRUSTED)

# ------------------------------------------------------------------- tests
test: unit nbtest

# The unit tests also test the website's alt text, which needs its tools (docs/requirements.txt),
# and the autograder, which needs otter-grader (the grading extra).
unit: $(STAMP) dot $(VENV)/.site-installed grading-check
	$(BIN)/python -m pytest -q -rs -m "not whole_course" tests

# The slowest test: the autograder grades the reference of every notebook (full marks
# expected), which runs each one end to end. Part of make e2e.
slow: $(STAMP) dot grading-check
	$(BIN)/python -m pytest -q -rs -m whole_course tests/test_grade.py

nbtest: $(STAMP) dot
	$(BIN)/python -m pytest -q $(NBVAL) $(NOTEBOOKS)

# ---------------------------------------------------------------- the lab
# `make lab-student` (learners: the exercises) and `make lab` (instructors: the
# reference notebooks, solutions and saved outputs included) serve JupyterLab
# the same way, through serve_lab below:
#  - on 127.0.0.1 only, on the first free port from PORT;
#  - behind a login token that is never empty: a fresh one each time, or yours
#    with `make lab TOKEN=...`. It reaches Jupyter through the environment
#    (JUPYTER_TOKEN) and a config file that comes first on JUPYTER_CONFIG_PATH,
#    so it outranks the user's own Jupyter config (c.IdentityProvider.token = ''
#    there has no effect) and does not show in the process list. Before printing
#    the URL with the token, the recipe checks that the server refuses a request
#    without it; if the server does not, it is stopped. The server's log line
#    about that refused request is kept out of the terminal;
#  - without JupyterLab's news and update check (no requests to the internet).
# LAB_ARGS adds JupyterLab options, e.g. LAB_ARGS=--no-browser.
PORT     ?= 8888
LAB_ARGS ?=
LABCONF  ?= $(VENV)/course-lab

$(LABCONF)/jupyter_server_config.py: Makefile
	@mkdir -p $(@D)
	@printf '%s\n' \
	  '# The course lab (make lab, make lab-student) puts this folder first on' \
	  '# JUPYTER_CONFIG_PATH, so these settings outrank every other Jupyter config.' \
	  '# Written by the Makefile.' \
	  'import os' \
	  'if os.environ.get("JUPYTER_TOKEN"):' \
	  '    c.IdentityProvider.token = os.environ["JUPYTER_TOKEN"]' \
	  'c.ServerApp.ip = "127.0.0.1"' > $@

# Default settings for the course lab only: no news feed, no update check.
$(LABCONF)/settings/overrides.json: Makefile
	@mkdir -p $(@D)
	@echo '{"@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": false}}' > $@

# Picks the port and the token, starts the server and watches it. Arguments:
# $(origin TOKEN), the first port to try, the config folder, --, the command
# ({port} in it is replaced). Once the server answers, a request without the
# token must be refused; then the URL is printed, else the server is stopped.
define LAB_RUN_PY
import os, re, secrets, signal, socket, subprocess, sys, threading, time, urllib.error, urllib.request

origin, first, confdir = sys.argv[1:4]
command = sys.argv[sys.argv.index("--") + 1:]
env = dict(os.environ)
env.pop("LAB_RUN", None)
if origin == "command line":
    token = env.get("TOKEN", "")
    if not token:
        sys.exit("make: TOKEN is empty. Leave it out to get a fresh token, or pass one: make lab TOKEN=...")
    if not re.fullmatch(r"[A-Za-z0-9._~-]+", token):
        sys.exit("make: TOKEN may hold only letters, digits and . _ ~ - (it goes into a URL).")
    if len(token) < 16:
        sys.exit(f"make: TOKEN is too short to keep the lab private ({len(token)} of at least 16 "
                 f"characters). Leave TOKEN out to get a fresh one, or pass a longer one.")
else:
    token = secrets.token_hex(24)


def free(port):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


port = next((p for p in range(int(first), int(first) + 50) if free(p)), None)
if port is None:
    sys.exit(f"make: no free port from {first} to {int(first) + 49}; try PORT=...")
url = f"http://127.0.0.1:{port}/lab?token={token}"
env["JUPYTER_TOKEN"] = token
env["JUPYTER_CONFIG_PATH"] = os.pathsep.join(p for p in (confdir, env.get("JUPYTER_CONFIG_PATH")) if p)
command = [a.replace("{port}", str(port)) for a in command]

# Ctrl-C is for the server (it asks before it stops); this process waits for it.
signal.signal(signal.SIGINT, lambda *_: None)
server = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True, bufsize=1)
# The server's log is passed on, less the two lines of the self-check's own refused
# request: its access line, and the first "wrote error: 'Forbidden'" (the server writes
# one for every refused API request; the self-check's is the first, and later ones show).
CHECK = "/api/contents?course-self-check"
REFUSED = "wrote error: 'Forbidden'"


def relay():
    own_refusal = True
    for line in server.stderr:
        if own_refusal and REFUSED in line:
            own_refusal = False
        elif CHECK not in line:
            sys.stderr.write(line)
            sys.stderr.flush()


threading.Thread(target=relay, daemon=True).start()
signal.signal(signal.SIGTERM, lambda *_: server.terminate())
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
deadline = time.monotonic() + 120
while server.poll() is None and time.monotonic() < deadline:
    time.sleep(0.5)
    try:
        opener.open(f"http://127.0.0.1:{port}{CHECK}", timeout=5)
        status = 200
    except urllib.error.HTTPError as e:
        status = e.code
    except OSError:
        continue
    if status in (401, 403):
        print(f"\n    The course is at  {url}\n    (Ctrl-C stops the server.)\n", flush=True)
        break
    print(f"\nmake: the server answered a request without the token (HTTP {status}); stopping it.",
          file=sys.stderr, flush=True)
    server.terminate()
    server.wait()
    sys.exit(1)
sys.exit(server.wait())
endef

# $(call serve_lab,FOLDER): JupyterLab on FOLDER, as described above.
define serve_lab
	@$(BIN)/python -c "$$LAB_RUN" "$(origin TOKEN)" $(PORT) $(abspath $(LABCONF)) -- \
	  $(BIN)/jupyter lab --ServerApp.ip=127.0.0.1 --ServerApp.port={port} --ServerApp.port_retries=0 \
	  --ServerApp.root_dir=$(1) --LabApp.news_url=None \
	  --LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate \
	  --LabApp.app_settings_dir=$(abspath $(LABCONF))/settings $(ROOTFLAG) $(LAB_ARGS)
endef

LAB_CONFIG := $(LABCONF)/jupyter_server_config.py $(LABCONF)/settings/overrides.json
lab lab-student: export LAB_RUN := $(LAB_RUN_PY)

lab: $(STAMP) dot-optional torch-optional $(if $(ZH),$(ZH_STAMP),$(TRUSTED)) $(LAB_CONFIG)
ifeq ($(ZH),)
	$(call serve_lab,notebooks)
else
	$(call serve_lab,$(ZH_DIR))
endif

# The student notebooks are rewritten when a notebook or the tool changes; a
# notebook the learner has changed is kept (see tools/make_student.py).
STUDENT_STAMP := build/student/.make_student.json
$(STUDENT_STAMP): $(NOTEBOOKS) tools/make_student.py | $(STAMP)
	$(BIN)/python tools/make_student.py --out build/student $(NOTEBOOKS)

lab-student: $(STAMP) dot-optional torch-optional $(if $(ZH),$(ZH_STUDENT_STAMP),$(STUDENT_STAMP)) $(LAB_CONFIG)
ifeq ($(ZH),)
	$(call serve_lab,build/student)
else
	$(call serve_lab,build/zh/student)
endif

# ------------------------------------------------------ the Chinese edition
# The Chinese notebooks are the English ones with the prose of i18n/zh/ (code,
# outputs and checks unchanged): tools/i18n.py writes them to build/zh/notebooks
# when a notebook or a translation changes, and they are trusted like the
# English ones. `make i18n-status` lists what is missing or stale.
ZH_DIR           := build/zh/notebooks
ZH_NOTEBOOKS     := $(patsubst notebooks/%,$(ZH_DIR)/%,$(NOTEBOOKS))
ZH_STAMP         := $(ZH_DIR)/.built
ZH_STUDENT_STAMP := build/zh/student/.make_student.json

$(ZH_STAMP): $(NOTEBOOKS) $(wildcard i18n/zh/*.json) tools/i18n.py | $(STAMP)
	$(BIN)/python tools/i18n.py build --out $(ZH_DIR)
	@$(BIN)/jupyter trust $(ZH_NOTEBOOKS) >/dev/null
	@touch $@

$(ZH_STUDENT_STAMP): $(ZH_STAMP) tools/make_student.py
	$(BIN)/python tools/make_student.py --out build/zh/student $(ZH_NOTEBOOKS)

zh: $(ZH_STAMP)

i18n-status: $(STAMP)
	@$(BIN)/python tools/i18n.py status

# The Chinese notebooks under strict nbval: their outputs are the English
# notebooks' own, so this checks that generating them broke nothing. It takes
# as long as nbtest, so `make e2e` runs it rather than `make test`.
nbtest-zh: $(STAMP) dot $(ZH_STAMP)
	$(BIN)/python -m pytest -q -p no:cacheprovider $(NBVAL) $(ZH_NOTEBOOKS)

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

# With the constraints, so that the website's tools never move a package the course pinned
# (the tools themselves are not pinned; without a fit, they are installed unconstrained).
$(SITE_STAMP): $(STAMP) docs/requirements.txt
	$(BIN)/python -m pip install --quiet $(if $(CONSTRAINTS),-c $(CONSTRAINTS)) -r docs/requirements.txt || \
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

site: $(SITE_STAMP) $(MATHJAX_DIR)/tex-mml-chtml.js $(ZH_STAMP)
	rm -rf $(SITE_SRC) build/site build/site-doctrees build/jupyter_execute && mkdir -p $(SITE_SRC)/notebooks $(SITE_SRC)/benchmarks
	cp docs/index.md README.md LICENSE LICENSE-CONTENT $(SITE_SRC)/
	cp $(NOTEBOOKS) $(SITE_SRC)/notebooks/
	cp benchmarks/RESULTS.md benchmarks/results.png $(SITE_SRC)/benchmarks/
	$(MAKE) --no-print-directory site-src-zh
	$(BIN)/python tools/i18n.py glossary --lang en > $(SITE_SRC)/glossary.md
	rm -rf build/site-extra && $(BIN)/python tools/colab.py --publish-student build/site-extra/student $(NOTEBOOKS)
	$(BIN)/sphinx-build -b html -c docs -d build/site-doctrees -E -W --keep-going -q $(SITE_SRC) build/site
	rm -rf build/site-extra-zh && $(BIN)/python tools/colab.py --publish-student build/site-extra-zh/student \
	  $(ZH_NOTEBOOKS) && rm build/site-extra-zh/student/README.md
	MINIGRAD_SITE_LANG=zh $(BIN)/sphinx-build -b html -c docs -d build/site-doctrees-zh -E -W --keep-going -q \
	  $(SITE_SRC_ZH) build/site/zh
	@echo "Website: build/site/index.html ($$(find build/site -name '*.html' -not -path '*/_static/*' | wc -l) pages)"

# The Chinese edition's sources: its landing page (README.zh.md), glossary and notebooks.
SITE_SRC_ZH := build/site-src-zh
.PHONY: site-src-zh
site-src-zh: $(ZH_STAMP)
	rm -rf $(SITE_SRC_ZH) build/site-doctrees-zh && mkdir -p $(SITE_SRC_ZH)/notebooks
	cp docs/zh/index.md README.zh.md $(SITE_SRC_ZH)/
	cp $(ZH_NOTEBOOKS) $(SITE_SRC_ZH)/notebooks/
	$(BIN)/python tools/i18n.py glossary --lang zh > $(SITE_SRC_ZH)/glossary.md

# axe-core (the accessibility rules browsers' audits use) from the npm registry,
# its tarball's sha256 checked; only `make e2e` uses it, on every page.
AXE_VER    := 4.10.3
AXE_SHA256 := 0f2b4d7dcdf7d1219df8d1959ad68e565f51d14c3f0d88bb71cd59abeb956292
AXE_JS     := build/e2e-tools/axe.min.js

$(AXE_JS):
	@tools/ensure_program.sh npm npm node "npm (fetches axe-core for the accessibility audit)"
	rm -rf build/axe-pack && mkdir -p build/axe-pack $(@D)
	cd build/axe-pack && npm pack --silent axe-core@$(AXE_VER) >/dev/null
	echo "$(AXE_SHA256)  build/axe-pack/axe-core-$(AXE_VER).tgz" | sha256sum -c --quiet
	tar -xzf build/axe-pack/axe-core-$(AXE_VER).tgz -C build/axe-pack
	cp build/axe-pack/package/axe.min.js $@ && cp build/axe-pack/package/LICENSE $(@D)/axe-LICENSE
	rm -rf build/axe-pack

# For instructors: the course checked end to end in headless Chromium, in
# JupyterLab and on the website (so the site is built first).
e2e: $(STAMP) dot trust site nbtest-zh slow $(AXE_JS)
	@tools/ensure_program.sh "$${CHROMIUM:-chromium} chromium-browser google-chrome" chromium "" "Chromium"
	@tools/ensure_cjk_font.sh
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
	$(BIN)/ruff check minigrad tests notebooks tools benchmarks grading

torch: $(STAMP)
	@$(BIN)/python -c 'import torch' 2>/dev/null || \
	  $(BIN)/python -m pip install --quiet $(if $(TORCH_INDEX),--extra-index-url $(TORCH_INDEX)) '$(TORCH_SPEC)'

# The labs: PyTorch's CPU build, so that the cells that show PyTorch's graph and
# saved tensors beside minigrad's (notebooks 02, 06, 12, ...) run for learners too.
# TORCH=0 skips it; so does a failed install (offline), with a note: those
# cells then say that PyTorch is not installed.
torch-optional: $(STAMP)
ifeq ($(TORCH),0)
	@echo "TORCH=0: PyTorch is left out; the cells that compare with it say so and skip."
else
	@$(MAKE) --no-print-directory torch || \
	  echo "Could not install $(TORCH_SPEC); going on without it (the PyTorch comparisons skip; make torch retries)." >&2
endif

# The student version: each "# BEGIN SOLUTION ... # END SOLUTION" region becomes
# `raise NotImplementedError`; outputs are cleared. See build/student/README.md.
student: $(STAMP) $(if $(ZH),$(ZH_STAMP))
	$(BIN)/python tools/make_student.py --out $(if $(ZH),build/zh/student $(ZH_NOTEBOOKS),build/student $(NOTEBOOKS))

# student/ is committed so that Colab can open the student notebooks from
# GitHub; tests/test_colab.py checks it is in step with notebooks/. So is the
# Chinese edition's zh/ (zh/notebooks, zh/student; tests/test_i18n.py checks it).
publish-student: $(STAMP)
	$(BIN)/python tools/colab.py --publish-student student $(NOTEBOOKS)
	$(BIN)/python tools/i18n.py publish --out zh

# Every notebook's first code cell installs the package where it is missing
# (Colab) and does nothing here; re-execute the notebooks afterwards.
colab: $(STAMP)
	$(BIN)/python tools/colab.py $(NOTEBOOKS)

# ---------------------------------------------------------- autograding
# The grading extra of pyproject.toml (otter-grader), installed into .venv on
# first use; tools/grade.py says how assign and grade work. GRADE_ARGS adds
# options, e.g. GRADE_ARGS="--jobs 2 --cell-timeout 120".
GRADING_STAMP := $(VENV)/.grading-installed
SUBMISSIONS   ?=
GRADE_ARGS    ?=

$(GRADING_STAMP): $(STAMP) pyproject.toml
	@mkdir -p build && $(BIN)/python -c "import sys; t = __import__('tomllib' if sys.version_info >= (3, 11) \
	  else 'tomli'); print('\n'.join(t.load(open('pyproject.toml', 'rb'))['project']['optional-dependencies']['grading']))" \
	  > build/grading-requirements.txt
	$(BIN)/python -m pip install --quiet $(if $(CONSTRAINTS),-c $(CONSTRAINTS)) -r build/grading-requirements.txt
	@touch $@

# Installed is not enough: otter must import, in a fresh process (an install can be broken,
# or the venv changed since). If it does not, its error is shown and the grading extra is
# reinstalled once; if it still does not, make stops with the error.
grading-check: $(GRADING_STAMP)
	@$(BIN)/python -c 'import otter' || { \
	  echo "otter-grader does not import (above); reinstalling the grading extra." >&2; \
	  $(BIN)/python -m pip install --quiet --force-reinstall $(if $(CONSTRAINTS),-c $(CONSTRAINTS)) \
	    -r build/grading-requirements.txt && $(BIN)/python -c 'import otter'; }

assign: grading-check
	$(BIN)/python tools/grade.py assign --out build/assign

grade: assign
	@[ -n "$(SUBMISSIONS)" ] || { echo "make grade needs SUBMISSIONS=dir (dir/<student>/<notebook>.ipynb)"; exit 1; }
	$(BIN)/python tools/grade.py grade "$(SUBMISSIONS)" --autograder build/assign/autograder --out build/grades $(GRADE_ARGS)

# Each case runs in its own process with one BLAS thread; a few minutes in all.
# PyTorch's columns say "not installed" until `make torch`. BENCH_ARGS=--quick for a smoke run.
# With valgrind (installed here as dot is, where we can), also instruction counts.
bench: $(STAMP)
	@tools/ensure_program.sh valgrind valgrind valgrind "valgrind (for instruction counts)" || true
	$(BIN)/python benchmarks/run.py $$(command -v valgrind >/dev/null && echo --instructions) $(BENCH_ARGS)

clean:
	rm -rf build .pytest_cache .hypothesis .ruff_cache *.egg-info
	find . -name __pycache__ -type d -prune -not -path './$(VENV)/*' -exec rm -rf {} +
	find notebooks -name .ipynb_checkpoints -type d -prune -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV)
