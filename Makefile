# Two commands do all set-up: `make run` and `make test`. Both are idempotent: a second run
# only re-installs when pyproject.toml changed and only re-extracts a model that is missing
# or damaged.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMPS := .stamps
ARTIFACTS ?= $(CURDIR)/test-artifacts
export CMAKE_BUILD_PARALLEL_LEVEL ?= 2

.PHONY: run test lint typecheck setup model bench package package-test clean

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

run: setup
	$(PY) -m assistant

lint: $(STAMPS)/install
	$(PY) -m ruff check assistant tests
	$(PY) -m mypy

test: setup lint
	@mkdir -p $(ARTIFACTS)
	QT_QPA_PLATFORM=offscreen ASSISTANT_TEST_ARTIFACTS=$(ARTIFACTS) $(PY) -m pytest
	@echo "Screenshots and test artifacts: $(ARTIFACTS)"

bench: setup
	$(PY) -m assistant bench --report docs/BENCHMARKS.md

package: setup
	$(PY) -m pip install --quiet -e '.[package]'
	$(PY) -m PyInstaller --noconfirm --distpath dist --workpath build/pyinstaller packaging/assistant.spec

package-test: package
	packaging/check-dist.sh dist/offline-assistant

clean:
	rm -rf $(STAMPS) build dist $(ARTIFACTS)
