# One-command entry points. Each target creates the virtual environment it needs.
#   make run    the main job: the controller driving the simulated arm, results in out/;
#               then the example-run page's table (doc/results/example_run.md),
#               doc/results.json and doc/figures/ regenerated
#   make test   the test suite, then the documentation build (make docs)
#   make docs   the documentation site (Sphinx + MyST, doc/) into doc/_build/html, warnings as
#               errors
#   make bench  the benchmarks (run with nothing else busy on the machine)
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
OUT ?= out

.PHONY: install run test docs bench lint clean

$(VENV)/.installed: setup.py package.xml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

install: $(VENV)/.installed

# the docs extra (Sphinx, myst-parser) on top of the test environment: the API reference imports
# every module, the nodes' rclpy included
$(VENV)/.docs-installed: $(VENV)/.installed setup.py
	$(PY) -m pip install --quiet -e '.[test,docs]'
	touch $@

run: install
	$(VENV)/bin/musculo model-report --json $(OUT)/model_report.json > /dev/null
	$(VENV)/bin/musculo report --out $(OUT)
	$(VENV)/bin/musculo publish $(OUT) --page doc/results/example_run.md --results doc/results.json --figures doc/figures

test: install
	$(PY) -m pytest -q -rs test
	$(MAKE) docs

# -W: a warning fails the build; --keep-going: every warning is reported before it fails
docs: $(VENV)/.docs-installed
	rm -rf doc/_build doc/generated
	$(VENV)/bin/sphinx-build -W --keep-going -q -b html -d doc/_build/doctrees doc doc/_build/html

bench: install
	$(PY) benchmarks/bench_tick.py --out $(OUT)/bench
	$(PY) benchmarks/bench_dynamics.py --out $(OUT)/bench
	$(PY) benchmarks/bench_mock_arm.py --out $(OUT)/bench

lint: install
	$(PY) -m pip install --quiet mypy ruff
	$(VENV)/bin/ruff check musculo_control test benchmarks
	$(VENV)/bin/mypy musculo_control --ignore-missing-imports

clean:
	rm -rf $(VENV) $(OUT) build *.egg-info doc/_build doc/generated
