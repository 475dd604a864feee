# Two commands do all set-up: `make run` and `make test`. Both are idempotent: a second run
# only re-installs when pyproject.toml changed and only re-extracts a model that is missing
# or damaged.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMPS := .stamps
ARTIFACTS ?= $(CURDIR)/test-artifacts
export CMAKE_BUILD_PARALLEL_LEVEL ?= 2

.PHONY: run qt-check test long-tests check coverage lint typecheck setup model models bench package package-test clean \
	llama-build llama-server

setup: $(STAMPS)/install llama-build model

# llama.cpp's AMX matrix kernels crash some Sapphire Rapids-class CPUs: a segfault in
# ggml_backend_amx_mul_mat at the first prompt of a few dozen tokens (ggml-org/llama.cpp#20824,
# closed without a fix; seen here on 2026-11-25 with llama-cpp-python 0.3.36). Where the CPU
# has AMX, llama-cpp-python is built from source with every other instruction set the CPU
# has and without AMX, and a build that has AMX (from pip's wheel cache) is replaced.
ifneq ($(shell grep -qs amx_int8 /proc/cpuinfo && echo amx),)
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON \
	-DGGML_F16C=ON -DGGML_BMI2=ON -DGGML_AVX_VNNI=ON -DGGML_AVX512=ON -DGGML_AVX512_VBMI=ON \
	-DGGML_AVX512_VNNI=ON -DGGML_AVX512_BF16=ON -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF \
	-DGGML_AMX_BF16=OFF
endif
export CMAKE_ARGS ?= $(LLAMA_CMAKE_ARGS)

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(STAMPS)/install: pyproject.toml | $(PY)
	@mkdir -p $(STAMPS)
	$(PY) -m pip install --quiet -e '.[dev,bench]'
	@touch $@

llama-build: $(STAMPS)/install
ifneq ($(LLAMA_CMAKE_ARGS),)
	@if $(PY) -c "import sys, llama_cpp; sys.exit(b'AMX_INT8 = 1' not in llama_cpp.llama_print_system_info())"; then \
	  echo "llama-cpp-python has llama.cpp's AMX kernels, which crash on this CPU: rebuilding it without them (a few minutes)"; \
	  $(PY) -m pip install --quiet --no-cache-dir --force-reinstall --no-deps \
	    "llama-cpp-python==$$($(PY) -c 'import llama_cpp; print(llama_cpp.__version__)')"; \
	fi
endif

# llama.cpp's own server, built from the llama.cpp that llama-cpp-python vendors with the same
# CPU flags (AMX excluded above), for the engine tests and the benchmark's side-by-side. Built
# once per version and flags into ~/.cache/offline-assistant-build/ (outside the clone, so CI's
# fresh clone copies it in seconds) and copied to build/llama-server/ (ignored by git).
LLAMA_SERVER := $(CURDIR)/build/llama-server/llama-server
llama-server: llama-build
	packaging/build-llama-server.sh $(PY) $(LLAMA_SERVER)

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
	$(PY) -m ruff check assistant bench tests
	$(PY) -m mypy
	$(VENV)/bin/lint-imports

# The inner loop (a few minutes): lint, types, contracts and the unit tests, two at a time.
# No real model, no server, nothing marked slow: `make test` (what CI runs) has them all.
check: lint
	QT_QPA_PLATFORM=offscreen $(PY) -m pytest -q -n 2 -m "not integration and not slow"

# Everything, on two xdist workers: the real-model tests (marked integration) form one group
# that one worker runs one at a time, while the other worker runs the rest beside them
# (tests/conftest.py puts them in the group).
test: setup models llama-server lint
	@mkdir -p $(ARTIFACTS)
	QT_QPA_PLATFORM=offscreen ASSISTANT_TEST_ARTIFACTS=$(ARTIFACTS) \
	  ASSISTANT_LLAMA_SERVER=$(LLAMA_SERVER) $(PY) -m pytest -n 2 --dist loadgroup --durations=30 \
	  -m "not long"
	@echo "Screenshots and test artifacts: $(ARTIFACTS)"

# The tests marked long (whole sessions summarized by the real model: tens of minutes).
long-tests: setup models
	QT_QPA_PLATFORM=offscreen $(PY) -m pytest -q -m long

# Which lines of assistant/ no test runs: every test (as `make test`) under branch coverage
# (pytest-cov), the report sorted by lines missed (about 50 minutes on 2 idle cores). Tests
# that run the app in a subprocess (the terminal chat, repair, the smoke test) are not traced.
coverage: setup models llama-server
	QT_QPA_PLATFORM=offscreen ASSISTANT_LLAMA_SERVER=$(LLAMA_SERVER) $(PY) -m pytest -q -n 2 \
	  --dist loadgroup -p no:cacheprovider --cov=assistant --cov-branch \
	  --cov-report=term-missing:skip-covered

# The quick side-by-side run of all five strategies (with W1 also on a local OpenAI-compatible
# server, to compare the engines), then the full workloads with the policy and no management
# (under an hour on 2 cores); both go into docs/BENCHMARKS.md. Each run ends with the answer
# benchmark (bench/answers.py; docs/ANSWERS.md): a few minutes in the quick run, hours in the
# full one (48 questions per workload and the real session's 46, at up to four points of the
# chat, with both models).
# Last, the engines side by side (issue 29): quick W1 and W2 through the embedded engine, the
# app on llama.cpp's llama-server, and llama-server --cache-reuse cut from the front as chat
# front ends drive it, with the answer benchmark's questions at the end (7-10 minutes a
# workload on 2 cores under heavy load, less on idle ones); its table goes into its own part
# of docs/BENCHMARKS.md.
# `python -m bench` alone runs all five strategies on the full workloads (hours).
bench: setup models llama-server
	QT_QPA_PLATFORM=offscreen $(PY) -m pytest -q -m long
	$(PY) -m bench --quick --engine server --report docs/BENCHMARKS.md
	$(PY) -m bench --strategy policy --strategy none --report docs/BENCHMARKS.md
	ASSISTANT_LLAMA_SERVER=$(LLAMA_SERVER) $(PY) -m bench --side-by-side --quick \
	  --chunk-reuse --report docs/BENCHMARKS.md
	$(PY) -m bench --model-figures

package: setup
	$(PY) -m pip install --quiet -e '.[package]'
	$(PY) -m PyInstaller --noconfirm --distpath dist --workpath build/pyinstaller packaging/assistant.spec

package-test: package
	packaging/check-dist.sh dist/offline-assistant

clean:
	rm -rf $(STAMPS) build dist $(ARTIFACTS)
