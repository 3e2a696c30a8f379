# txnlab: one virtual environment in $(VENV), nothing installed or registered outside it.
#
#   make lab            install if needed, then JupyterLab on a working copy of the chapters (build/lab,
#                       127.0.0.1 only): the tracked notebooks never receive a learner's outputs
#   make author         JupyterLab on notebooks/ itself, saving every notebook without outputs (for teachers)
#   make test           install if needed, then every test: tests/ and the notebooks
#   make bench          install if needed, then the benchmarks (writes bench/results.json)
#   make compiled       optional: the engine's hottest modules compiled with mypyc into build/compiled (mypy in its
#                       own venv, build/mypyc-venv), then gated: traces identical to the pure-Python engine's
#   make browser-deps   Debian's Chromium for the real-browser tests and PNG export
#   make clean          remove the venv and build/test leftovers
#
# Knobs: VENV=path, PYTHON=interpreter used to create the venv, NO_BROWSER=1 (or the
# environment variable LAB_NO_BROWSER=1) for `make lab` without opening a browser.

VENV   ?= .venv
PYTHON ?= python3

VENV_DIR := $(abspath $(VENV))
VENV_PY  := $(VENV_DIR)/bin/python
STAMP    := $(VENV)/.installed

# Everything that runs Python code of the lab gets this environment:
# - the venv's bin first on PATH, so the `python3` kernelspec (which runs plain `python`)
#   starts the venv's interpreter in nbclient/nbmake and in JupyterLab;
# - Spark on loopback, and Spark's Python workers on the venv's interpreter;
# - bytecode cached even where the shell sets PYTHONDONTWRITEBYTECODE (as some containers do): otherwise every
#   kernel, Spark worker and subprocess compiles txnlab and widgets again before its first picture.
RUN_ENV := PATH="$(VENV_DIR)/bin:$$PATH" \
           SPARK_LOCAL_IP=127.0.0.1 \
           PYSPARK_PYTHON="$(VENV_PY)" \
           PYTHONDONTWRITEBYTECODE=

# Notebooks are tested once there are any; until then only tests/ runs.
NOTEBOOKS := $(sort $(wildcard notebooks/*.ipynb))
NBMAKE    := $(if $(NOTEBOOKS),--nbmake $(NOTEBOOKS))

# `make lab` flags: loopback only; no JupyterLab news fetched from the internet (the lab works offline, and a
# learner is not asked about announcements); --allow-root when run as root (JupyterLab refuses otherwise);
# --no-browser on request (NO_BROWSER=1 on the command line or LAB_NO_BROWSER=1 in the env).
# The offline settings, and what a save keeps, are in jupyter/jupyter_lab_config.py.
LAB_FLAGS := --ip 127.0.0.1 --LabApp.news_url=None --config="$(abspath jupyter/jupyter_lab_config.py)"
ifeq ($(shell id -u),0)
LAB_FLAGS += --allow-root
endif
ifneq ($(filter 1 true yes,$(NO_BROWSER) $(LAB_NO_BROWSER)),)
LAB_FLAGS += --no-browser
endif

# The learner's working copy: each chapter (and the glossary, the index) copied once, when absent, so a
# learner's outputs and edits stay there; `rm -rf build/lab` starts afresh.
LAB_DIR := build/lab
LAB_FILES := $(wildcard notebooks/*.ipynb notebooks/GLOSSARY.md notebooks/INDEX.md)

.PHONY: install lab author test bench compiled browser-deps clean

# ---- install -----------------------------------------------------------------------------
# The stamp is redone when pyproject.toml changes, and when a top-level package gains its
# __init__.py: the editable install only maps packages that existed when it ran.
$(STAMP): pyproject.toml $(wildcard txnlab/__init__.py widgets/__init__.py)
	test -x "$(VENV_PY)" || $(PYTHON) -m venv "$(VENV)"
	"$(VENV_PY)" -m pip install --upgrade pip
	"$(VENV_PY)" -m pip install -e '.[test]'
	touch "$@"

install: $(STAMP)

# Spark's classes, recorded once into an archive its JVM maps at start-up (txnlab/spark/session.py: chapter 07's
# Spark starts ~3 s sooner).  Half a minute, once; without Java it says so and the lab runs without the archive.
SPARK_CLASSES := build/spark-classes/.recorded
$(SPARK_CLASSES): $(STAMP)
	$(RUN_ENV) "$(VENV_PY)" -m txnlab.spark.session || echo "Spark's classes were not recorded: chapter 07 starts Spark without the archive"
	mkdir -p "$(@D)" && touch "$@"

# ---- run ---------------------------------------------------------------------------------
lab: $(STAMP) $(SPARK_CLASSES)
	mkdir -p "$(LAB_DIR)"
	for f in $(LAB_FILES); do test -e "$(LAB_DIR)/$${f##*/}" || cp "$$f" "$(LAB_DIR)/"; done
	cd "$(LAB_DIR)" && $(RUN_ENV) "$(VENV_DIR)/bin/jupyter" lab $(LAB_FLAGS)

author: $(STAMP)
	$(RUN_ENV) TXNLAB_AUTHOR=1 "$(VENV_DIR)/bin/jupyter" lab $(LAB_FLAGS) notebooks/

test: $(STAMP)
	$(RUN_ENV) "$(VENV_PY)" -m pytest tests/ $(NBMAKE)

bench: $(STAMP) $(SPARK_CLASSES)
	$(RUN_ENV) "$(VENV_PY)" -m bench

# Never needed by the lab or its tests: a measuring build (bench/instructions.py's *_compiled figures).
compiled: $(STAMP)
	$(RUN_ENV) "$(VENV_PY)" scripts/compile_engine.py

# ---- system packages ---------------------------------------------------------------------
# Chromium from apt (root only; says so and succeeds when it cannot). Never `playwright install`.
browser-deps:
	bash scripts/install-chromium.sh

# ---- housekeeping ------------------------------------------------------------------------
# bench/results.json and tests/artifacts/fidelity.md (the last differential run of every scenario) are tracked on
# purpose and stay; build/fidelity.md (the table of the last run, however few scenarios it ran) goes with build.
clean:
	rm -rf "$(VENV)" build dist *.egg-info .pytest_cache .hypothesis \
	       spark-warehouse metastore_db derby.log reference/target
	find tests/artifacts -mindepth 1 ! -name fidelity.md -delete 2>/dev/null || true
	find . -path ./.git -prune -o -type d \
	       \( -name __pycache__ -o -name .ipynb_checkpoints \) -print0 | xargs -0 rm -rf
