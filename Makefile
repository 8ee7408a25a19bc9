# One-command entry points. Each target creates the virtual environment it needs.
#   make run    the main job: the controller driving the simulated arm, results in out/;
#               then the README's results table, doc/results.json and doc/figures/ regenerated
#   make test   the test suite
#   make bench  the benchmarks (run with nothing else busy on the machine)
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
OUT ?= out

.PHONY: install run test bench lint clean

$(VENV)/.installed: setup.py package.xml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

install: $(VENV)/.installed

run: install
	$(VENV)/bin/musculo model-report --json $(OUT)/model_report.json > /dev/null
	$(VENV)/bin/musculo report --out $(OUT)
	$(VENV)/bin/musculo publish $(OUT) --readme README.md --results doc/results.json --figures doc/figures

test: install
	$(PY) -m pytest -q -rs test

bench: install
	$(PY) benchmarks/bench_tick.py --out $(OUT)/bench
	$(PY) benchmarks/bench_dynamics.py --out $(OUT)/bench
	$(PY) benchmarks/bench_mock_arm.py --out $(OUT)/bench

lint: install
	$(PY) -m pip install --quiet mypy ruff
	$(VENV)/bin/ruff check musculo_control test benchmarks
	$(VENV)/bin/mypy musculo_control --ignore-missing-imports

clean:
	rm -rf $(VENV) $(OUT) build *.egg-info
