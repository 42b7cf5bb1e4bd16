# The course's two commands (README, "Quick start"); each creates .venv first if it is missing.
#   make course   run every notebook in the smoke profile -> outputs/smoke/report.md
#   make test     unit tests, the full-profile rehearsal, then every notebook under nbval, all offline
#   make test-fast the unit tests without subprocess launches, notebooks or pretraining runs (under 3 minutes)
#   make rehearse the full profile at full size on this machine: prefetch from a Hub server on
#                 127.0.0.1 (olah), then an offline `course run --profile full --quick`
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
# torch is pinned in pyproject.toml; DeepSpeed builds against it, so it is installed first.
TORCH_PIN := $(shell sed -n 's/.*"\(torch==[^"]*\)".*/\1/p' pyproject.toml)
STAMP := $(VENV)/.installed
# olah, the rehearsal's Hub server, has its own environment: its pins clash with the course's.
HUB_VENV := .venv-hub
HUB_STAMP := $(HUB_VENV)/.installed

.PHONY: course test test-fast install hub-venv rehearse benchmark clean-outputs

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' || \
	  { echo "The course needs Python 3.11; $(PYTHON) is $$($(PYTHON) --version). Pass PYTHON=/path/to/python3.11."; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet "$(TORCH_PIN)" setuptools wheel
	$(BIN)/python -m pip install --quiet --no-build-isolation -e ".[dev]"
	touch $(STAMP)

install: $(STAMP)

$(HUB_STAMP): tests/rehearsal/requirements-hub.txt
	test -x $(HUB_VENV)/bin/python || $(PYTHON) -m venv $(HUB_VENV)
	$(HUB_VENV)/bin/python -m pip install --quiet -r tests/rehearsal/requirements-hub.txt
	touch $(HUB_STAMP)

hub-venv: $(HUB_STAMP)

rehearse: $(STAMP) $(HUB_STAMP)
	$(BIN)/python tests/rehearsal/rehearse.py

course: $(STAMP)
	$(BIN)/course run --profile smoke

test: $(STAMP) $(HUB_STAMP)
	$(BIN)/python -m pytest

test-fast: $(STAMP)
	$(BIN)/python -m pytest tests -m "not slow and not gpu"

benchmark: $(STAMP)
	$(BIN)/python benchmarks/bench_course_run.py

clean-outputs:
	rm -rf outputs
