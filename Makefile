# wamdiff2_ros: `make demo` and `make test` set everything up from nothing.
SHELL := /bin/bash
VENV := .venv
STAMPS := .stamps
ROS_SOURCES := CMakeLists.txt package.xml $(shell find msg wamdiff2_ros scripts launch config checkpoints test/interfaces -type f -not -path '*/__pycache__/*' 2>/dev/null)
PYTEST_ARGS ?=

.PHONY: setup test test-fast demo lint lock clean reproduce bench

setup: $(STAMPS)/venv $(STAMPS)/colcon

$(STAMPS)/venv: requirements.lock setup.py tools/setup_venv.sh
	@mkdir -p $(STAMPS)
	bash tools/setup_venv.sh
	@touch $@

$(STAMPS)/colcon: $(STAMPS)/venv tools/build_ros.sh tools/fix_ros_cmake_paths.py $(ROS_SOURCES)
	@mkdir -p $(STAMPS) log
	bash tools/build_ros.sh
	@touch $@

test: setup
	tools/ros_env.sh python -m pytest $(PYTEST_ARGS)

# The quick subset (under a minute on 2 cores): no test marked slow or ros (test/conftest.py).
test-fast: setup
	tools/ros_env.sh python -m pytest -m "not slow and not ros" $(PYTEST_ARGS)

demo: setup
	tools/ros_env.sh wamdiff2 demo

lint: setup
	$(VENV)/bin/ruff check .

# The whole training ladder from synthetic data to the distilled student (long; not CI).
reproduce: setup
	tools/ros_env.sh bash tools/reproduce.sh

# Benchmarks of docs/BENCHMARKS.md (tables on stdout, JSON under bench_out/).
bench: setup
	tools/ros_env.sh python bench/decode.py --model "$$(tools/ros_env.sh python -c 'from wamdiff2_ros.model.checkpoints import default_checkpoint as d; print(d() or "tiny")')" --blocks 1,4,8,16,32 --engines reference,fast --json bench_out/decode.json --plot bench_out/decode.png
	tools/ros_env.sh python bench/synth.py --json bench_out/synth.json
	tools/ros_env.sh python bench/ros_latency.py --seconds 60 --json bench_out/ros_latency.json

lock: $(STAMPS)/venv
	$(VENV)/bin/pip install -q -r requirements.in
	$(VENV)/bin/python tools/lock.py > requirements.lock

clean:
	rm -rf build install log $(STAMPS)
