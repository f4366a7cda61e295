# The two set-up commands (run as root): `make run` and `make test`.
VENV ?= .venv
EXPERIMENT ?= experiments/quick.yaml

.PHONY: install run test lint clean

install:
	./scripts/install.sh

run: install
	$(VENV)/bin/srperf run $(EXPERIMENT)

test: install
	$(VENV)/bin/python -m pytest -q -p no:cacheprovider tests

lint: install
	shellcheck -x cfg_scripts/*.sh cfg_scripts/contract.bash scripts/*.sh .ci/run

clean:
	rm -rf srperf-results build *.egg-info
