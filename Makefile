# The course's two commands (README, "Quick start"); each creates .venv first if it is missing.
#   make course   run every notebook in the smoke profile -> outputs/smoke/report.md
#   make site     the smoke run that `make course` wrote, as a static website -> outputs/smoke/site/index.html
#   make test     ruff, then in two lanes (LANES) the unit tests, the full-profile rehearsal and every notebook and
#                 lab solution under nbval, all offline (it installs Debian's chromium for the labs' browser test if
#                 it is missing)
#   make test-fast ruff (lint and format check), then the unit tests without subprocess launches, notebooks or
#                 pretraining runs (under 3 minutes)
#   make test-latest the fast tests and lessons 01 and 03 on the newest transformers, datasets, accelerate, peft,
#                 deepspeed, evaluate and lm-eval, in .venv-latest -> benchmarks/LATEST.md (not part of make test)
#   make rehearse the full profile at full size on this machine: prefetch from a Hub server on
#                 127.0.0.1 (olah), then an offline `course run --profile full --quick`
#   make wheels   (where pip reaches an index) the packages a bare GPU node lacks, as wheels in .whl/
#   make gpu-check OUT=folder   (on the GPU node) the GPU node check with the node's own python3 and .whl/, installed
#                 once into .whl/site inside the check's 6 minutes
#   make gpu-check-rehearsal    the GPU node check, tiny, in a venv like such a node (.venv-node) here
PYTHON ?= $(shell command -v python3.11 || command -v python3)
# Bytecode is compiled once, at install, in parallel (pip's own compile is serial): where PYTHONDONTWRITEBYTECODE
# is set, as on this course's CI machines, Python never writes it at import, and every process (a kernel, a
# launch) then compiled torch, transformers and DeepSpeed again, about 8 s each on 2 cores. `compileall` skips
# the files written for a newer Python (torch's py312_intrinsics.py) and carries on.
COMPILE := -c 'import compileall, sys; compileall.compile_dir(sys.argv[1], quiet=2, workers=0)'
VENV := .venv
BIN := $(VENV)/bin
# torch is pinned in pyproject.toml; DeepSpeed builds against it, so it is installed first.
TORCH_PIN := $(shell sed -n 's/.*"\(torch==[^"]*\)".*/\1/p' pyproject.toml)
STAMP := $(VENV)/.installed
# olah, the rehearsal's Hub server, has its own environment: its pins clash with the course's.
HUB_VENV := .venv-hub
HUB_STAMP := $(HUB_VENV)/.installed

.PHONY: course site test test-fast test-latest install hub-venv rehearse benchmark clean-outputs wheels gpu-check node-venv \
	gpu-check-rehearsal

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' || \
	  { echo "The course needs Python 3.11; $(PYTHON) is $$($(PYTHON) --version). Pass PYTHON=/path/to/python3.11."; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --no-compile "$(TORCH_PIN)" setuptools wheel
	$(BIN)/python -m pip install --quiet --no-compile --no-build-isolation -e ".[dev]"
	$(BIN)/python $(COMPILE) $(VENV)/lib
	touch $(STAMP)

install: $(STAMP)

$(HUB_STAMP): tests/rehearsal/requirements-hub.txt
	test -x $(HUB_VENV)/bin/python || $(PYTHON) -m venv $(HUB_VENV)
	$(HUB_VENV)/bin/python -m pip install --quiet --no-compile -r tests/rehearsal/requirements-hub.txt
	$(HUB_VENV)/bin/python $(COMPILE) $(HUB_VENV)/lib
	touch $(HUB_STAMP)

hub-venv: $(HUB_STAMP)

rehearse: $(STAMP) $(HUB_STAMP)
	$(BIN)/python tests/rehearsal/rehearse.py

course: $(STAMP)
	$(BIN)/course run --profile smoke

# Builds from what `make course` wrote and executes nothing; it names `make course` when that run is missing.
site: $(STAMP)
	$(BIN)/course site --profile smoke

# nbval's flags here, not in pyproject.toml: pytest alone must run tests/test_gpu.py on a bare GPU node.
NBVAL := --nbval-lax --nbval-current-env --nbval-cell-timeout=900

# Two lanes (pytest-xdist): the lessons in order on one worker (lesson 05 reads what 01, 03 and 04 wrote), the
# full-size rehearsal first on the other, and the rest to whichever is free; tests/conftest.py groups them and gives
# each worker its share of the cores.
LANES := -n 2 --dist loadscope --no-loadscope-reorder

# The labs' browser test drives Debian's Chromium (tests/test_browser.py); installed once, with apt.
CHROMIUM := /usr/bin/chromium
$(CHROMIUM):
	@command -v apt-get >/dev/null || { echo "tests/test_browser.py needs Chromium at $(CHROMIUM) (Debian's chromium package)."; exit 1; }
	apt-get install -y -q chromium >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q chromium >/dev/null; }

test: $(STAMP) $(HUB_STAMP) $(CHROMIUM)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python -m pytest $(LANES) $(NBVAL)

test-fast: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python -m pytest tests -m "not slow and not gpu"

# An early warning when the libraries move (tools/test_latest.py): never part of `make test`, so that an upstream
# release cannot break CI.
test-latest: $(STAMP)
	$(BIN)/python tools/test_latest.py

benchmark: $(STAMP)
	$(BIN)/python benchmarks/bench_course_run.py

clean-outputs:
	rm -rf outputs

# The GPU node check on a node without an index or the Hub (tools/gpu_check.py). Its python3 has a CUDA
# torch; what it lacks travels as wheels for CPython 3.12 on x86-64 Linux, built or downloaded here.
WHEELS := .whl
NODE_PYTHON ?= python3
NODE_PYTHON_VERSION ?= 3.12
OUT ?= gpu-check
WHEEL_PLATFORMS := $(foreach p,manylinux_2_28_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux_2_5_x86_64 \
	manylinux1_x86_64,--platform $(p))

wheels: $(STAMP)
	rm -rf $(WHEELS) && mkdir -p $(WHEELS)
	$(BIN)/python -m pip download --quiet --no-deps --only-binary=:all: --python-version $(NODE_PYTHON_VERSION) --implementation cp \
	  $(WHEEL_PLATFORMS) -d $(WHEELS) -r benchmarks/gpu_wheels.txt
	DS_BUILD_OPS=0 $(BIN)/python -m pip wheel --quiet --no-deps --no-build-isolation -w $(WHEELS) \
	  "$$(grep -o 'deepspeed==[0-9.]*' pyproject.toml)"
	$(BIN)/python tools/gpu_check.py --list-wheels $(WHEELS)

gpu-check:
	@ls $(WHEELS)/*.whl >/dev/null 2>&1 || echo "no wheels in $(WHEELS)/ (make wheels, where pip reaches an index): using $(NODE_PYTHON)'s packages"
	$(NODE_PYTHON) tools/gpu_check.py --out $(OUT) --wheels $(WHEELS) $(GPU_CHECK_FLAGS)

# A venv like a bare GPU node's Python (benchmarks/gpu_node.txt), to rehearse the check here.
NODE_VENV := .venv-node
# A python3.12 that runs: `command -v` alone can find a pyenv shim that exits 127.
PYTHON312 = $(shell python3.12 -c 'import sys; print(sys.executable)' 2>/dev/null)
$(NODE_VENV)/.installed: benchmarks/gpu_node.txt
	@test -n "$(PYTHON312)" || { echo "make node-venv needs a python3.12 that runs (python3.12 -c 'import sys' failed)."; exit 1; }
	test -x $(NODE_VENV)/bin/python || $(PYTHON312) -m venv $(NODE_VENV)
	$(NODE_VENV)/bin/python -m pip install --quiet -r benchmarks/gpu_node.txt
	touch $@

node-venv: $(NODE_VENV)/.installed

gpu-check-rehearsal: node-venv wheels
	$(MAKE) gpu-check NODE_PYTHON=$(CURDIR)/$(NODE_VENV)/bin/python OUT=$(OUT) GPU_CHECK_FLAGS="--tiny $(GPU_CHECK_FLAGS)"
