# The two set-up commands (run as root): `make run` and `make test`.
VENV ?= .venv
EXPERIMENT ?= experiments/quick.yaml

.PHONY: install run test test-fast test-under-load lint clean

install:
	./scripts/install.sh

run: install
	$(VENV)/bin/srperf run $(EXPERIMENT)

# Two passes: the tests that send no traffic on one worker per CPU (pytest-xdist), then
# those that create namespaces, send traffic or boot a VM on two workers: one runs the
# tests that start a traffic generator one at a time, the other those that only
# configure, provision or boot a guest (tests/conftest.py, BESIDE_TRAFFIC).  Both passes
# always run; the target fails if either failed.
PYTEST = $(VENV)/bin/python -m pytest -q -p no:cacheprovider
test: install
	$(PYTEST) -n auto -m "not netns" tests; fast=$$?; \
	$(PYTEST) -n 2 --dist loadscope -m netns tests; netns=$$?; \
	exit $$(( fast != 0 || netns != 0 ))

# Between edits: every test that sends no traffic and boots nothing (not marked netns).
test-fast: $(VENV)/bin/srperf
	$(PYTEST) -n auto -m "not netns" tests

# The full suite beside one busy loop per CPU (a busy machine must not fail it).
test-under-load: install
	./scripts/under_load.sh $(MAKE) --no-print-directory test

$(VENV)/bin/srperf:
	./scripts/install.sh

lint: install
	shellcheck -x cfg_scripts/*.sh cfg_scripts/contract.bash scripts/*.sh .ci/run

clean:
	rm -rf srperf-results build *.egg-info
