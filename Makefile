# wamdiff2_ros: `make demo` and `make test` set everything up from nothing.
SHELL := /bin/bash
VENV := .venv
STAMPS := .stamps
ROS_SOURCES := CMakeLists.txt package.xml $(shell find msg wamdiff2_ros scripts launch config -type f -not -path '*/__pycache__/*' 2>/dev/null)
PYTEST_ARGS ?=

.PHONY: setup test demo lint lock clean reproduce bench

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

demo: setup
	tools/ros_env.sh wamdiff2 demo

lint: setup
	$(VENV)/bin/ruff check .

lock: $(STAMPS)/venv
	$(VENV)/bin/pip install -q -r requirements.in
	$(VENV)/bin/python tools/lock.py > requirements.lock

clean:
	rm -rf build install log $(STAMPS)
