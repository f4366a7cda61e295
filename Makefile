# The two set-up commands (run as root): `make run` and `make test`.
VENV ?= .venv
EXPERIMENT ?= experiments/quick.yaml

.PHONY: install run test test-fast test-under-load lint clean

install:
	./scripts/install.sh

run: install
	$(VENV)/bin/srperf run $(EXPERIMENT)

test: install
	$(VENV)/bin/python -m pytest -q -p no:cacheprovider tests

# Between edits: every test that sends no traffic and boots nothing (not marked netns).
test-fast: $(VENV)/bin/srperf
	$(VENV)/bin/python -m pytest -q -p no:cacheprovider -m "not netns" tests

# The full suite beside one busy loop per CPU (a busy machine must not fail it).
test-under-load: install
	./scripts/under_load.sh $(VENV)/bin/python -m pytest -q -p no:cacheprovider tests

$(VENV)/bin/srperf:
	./scripts/install.sh

lint: install
	shellcheck -x cfg_scripts/*.sh cfg_scripts/contract.bash scripts/*.sh .ci/run

clean:
	rm -rf srperf-results build *.egg-info
