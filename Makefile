# contact_dynamics: the two commands of the README are `make demo` and `make test`.
# Every target creates or updates the environment first (tools/bootstrap.sh, quick when already done).
#
# Network rule: every ROS process started from here runs with discovery on loopback and its own domain.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
export ROS_AUTOMATIC_DISCOVERY_RANGE := LOCALHOST
export ROS_DOMAIN_ID ?= $(shell echo $$(( $$$$ % 100 + 1 )))
export ROS_LOG_DIR ?= $(CURDIR)/out/ros_log
export FASTDDS_DEFAULT_PROFILES_FILE ?= $(CURDIR)/tools/fastdds_fast_discovery.xml
PYTEST_ARGS ?=
# the suite's worker processes (pytest-xdist, whole files per worker); 0 runs it in this process
PYTEST_WORKERS ?= 2

.PHONY: env demo test test-fast bench lock config clean

env:
	@bash tools/bootstrap.sh

demo: env
	$(PY) -m contact_dynamics_common.cli demo --workdir out/demo

test: env
	$(PY) -m pytest -q -n $(PYTEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

test-fast: env  ## everything but the tests that start ROS nodes
	$(PY) -m pytest -q -m "not ros" $(PYTEST_ARGS)

bench: env  ## prints figures; the node benchmarks start ROS nodes on loopback in this run's domain
	$(PY) bench/bench_run_bag.py
	$(PY) bench/bench_replay_long.py
	$(PY) bench/bench_bag_read.py
	$(PY) bench/bench_bag_recovery.py
	$(PY) bench/bench_batch.py
	$(PY) bench/bench_node_1khz.py --algorithms rls ils kalman
	$(PY) bench/bench_node_overload.py
	$(PY) bench/bench_pkm_ukf.py
	$(PY) bench/bench_rover.py
	$(PY) bench/bench_posture_node.py
	$(PY) bench/bench_multipoint.py
	$(PY) bench/bench_impedance_node.py
	$(PY) -m contact_dynamics_common.cli calibrate --runs 20 --jobs 2

config: env  ## regenerate the documented config/*.yaml from the parameter specs
	$(PY) tools/gen_config.py

lock:  ## rebuild requirements/lock.txt from the direct requirements (never from pip freeze)
	bash tools/make_lock.sh

clean:
	rm -rf build out
