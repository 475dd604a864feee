# Two commands do all set-up: `make run` and `make test`. Both are idempotent: a second run
# only re-installs when pyproject.toml changed and only re-extracts a model that is missing
# or damaged.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMPS := .stamps
ARTIFACTS ?= $(CURDIR)/test-artifacts
export CMAKE_BUILD_PARALLEL_LEVEL ?= 2

.PHONY: run qt-check test lint typecheck setup model models bench package package-test clean

setup: $(STAMPS)/install model

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(STAMPS)/install: pyproject.toml | $(PY)
	@mkdir -p $(STAMPS)
	$(PY) -m pip install --quiet -e '.[dev,bench]'
	@touch $@

model: $(STAMPS)/install
	$(PY) -m assistant provision

# Every registered model (the benchmark's W4 runs gemma-3-270m; the quick run is a test).
models: $(STAMPS)/install
	$(PY) -m assistant provision --all

# Qt's X11 plugin needs system libraries that pip cannot install: say which are missing (and
# the apt-get line that adds them) before the long first install, not after.
qt-check:
	@$(PYTHON) assistant/ui/qt_deps.py

run: qt-check setup
	$(PY) -m assistant

lint: $(STAMPS)/install
	$(PY) -m ruff check assistant tests
	$(PY) -m mypy
	$(VENV)/bin/lint-imports

test: setup models lint
	@mkdir -p $(ARTIFACTS)
	QT_QPA_PLATFORM=offscreen ASSISTANT_TEST_ARTIFACTS=$(ARTIFACTS) $(PY) -m pytest
	@echo "Screenshots and test artifacts: $(ARTIFACTS)"

# The quick side-by-side run of all five strategies, then the full workloads with the policy
# and no management (under an hour on 2 cores); both go into docs/BENCHMARKS.md.
# `python -m assistant bench` alone runs all five strategies on the full workloads (hours).
bench: setup models
	$(PY) -m assistant bench --quick --report docs/BENCHMARKS.md
	$(PY) -m assistant bench --strategy policy --strategy none --report docs/BENCHMARKS.md

package: setup
	$(PY) -m pip install --quiet -e '.[package]'
	$(PY) -m PyInstaller --noconfirm --distpath dist --workpath build/pyinstaller packaging/assistant.spec

package-test: package
	packaging/check-dist.sh dist/offline-assistant

clean:
	rm -rf $(STAMPS) build dist $(ARTIFACTS)
