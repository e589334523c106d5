# The two commands a new user needs:
#   make demo   set up the virtualenv and run the main job
#   make test   set up, build (or reuse) the control-plane binaries, kubectl and helm, install
#               promtool/prometheus and headless Chromium if missing, run every gate and
#               test, then the Kind tests (builds the offline Kind node image on first use:
#               see docs/kind.md; the cluster is deleted at the end)
# Kind by hand: make image (the project image), make kind-up (cluster + image loaded;
# prints the kubeconfig path), make kind-down.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test lint typecheck imports kind-check pytest kind-test kind-test-incluster kind-test-realkubelet scorecard scorecard-ci scorecard-kind image kind-up kind-down controlplane protos bench clean kubectl helm promtool rules schedulers

$(BIN)/python:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python >= 3.11 is required (set PYTHON=...)")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed-runtime: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[fakenrt]'
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@ $(VENV)/.installed-runtime

# The main job: the bundled scenario (16 GPU nodes, a day of pods, NRT lag) under every
# scheduling strategy; prints the table and writes a self-contained HTML report.
DEMO_REPORT ?= build/demo-report.html

demo: $(VENV)/.installed-runtime
	@mkdir -p $(dir $(DEMO_REPORT))
	$(BIN)/fakenrt simulate --report $(DEMO_REPORT)

controlplane:
	@tests/controlplane/build.sh >/dev/null

# The binaries of every scheduler adapter (schedulers/, docs/schedulers/README.md): KAI,
# scheduler-plugins, the control plane's kube-scheduler. Cached by source under
# ~/.cache/numa-testkit (cold: several minutes each; warm: instant).
schedulers: $(VENV)/.installed-dev
	$(BIN)/python -m schedulers.building

# kubectl at the control plane's pinned version (manifest tests; after controlplane, so
# the Go caches are warm), and promtool + prometheus (Debian's package; apt-get if missing).
kubectl: controlplane
	@tests/controlplane/build-kubectl.sh >/dev/null

# helm at the version pinned in tests/helm/go.mod (the chart tests; after kubectl, so
# the Go caches are warm).
helm: kubectl
	@tests/helm/build.sh >/dev/null

promtool:
	@tests/prometheus/install.sh >/dev/null

# The exporter's alerting rules: valid, and their unit tests pass.
rules: promtool
	promtool check rules manifests/exporter/alerts/numa-exporter.rules.yaml
	promtool test rules tests/prometheus/rules.test.yaml

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(VENV)/.installed-dev
	$(BIN)/mypy

imports: $(VENV)/.installed-dev
	$(BIN)/lint-imports

# The kind/ scripts (shellcheck) and the runc wrapper (go vet, go test).
kind-check:
	kind/shellcheck.sh
	cd kind/runc-wrapper && go vet ./... && go test -count=1 ./...

# The installs users get, for tests/test_install.py and tests/test_docs.py: make demo's
# environment (build/venv-runtime, the fakenrt extra) and pip install numa-testkit's
# (build/venv-base, no extra): tests/setup/venv.sh.
# Every test but the e2e scenarios on the local control plane: make scorecard-ci runs those,
# for every scheduler adapter at once (docs/scorecard.md). On PYTEST_WORKERS pytest-xdist
# workers (the cores, at most 4: each worker starts its own control plane), a test file to
# one worker (--dist loadfile: a module's fixtures are made once, e.g. the hostile inputs'
# outcomes, run together for the whole file). 15.5 min on one 2-core machine, 10.6 on two
# workers: many tests wait on processes, the API server or sockets.
PYTEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 1); echo $$(( n < 4 ? n : 4 )))
pytest: $(VENV)/.installed-dev
	NUMA_TESTKIT_RUNTIME_VENV="$$(PYTHON=$(PYTHON) tests/setup/venv.sh runtime)" \
	NUMA_TESTKIT_BASE_VENV="$$(PYTHON=$(PYTHON) tests/setup/venv.sh base)" \
	NUMA_TESTKIT_CONTROLPLANE_BIN="$$(tests/controlplane/build.sh)" \
	NUMA_TESTKIT_KUBECTL="$$(tests/controlplane/build-kubectl.sh)" \
	NUMA_TESTKIT_HELM="$$(tests/helm/build.sh)" \
	NUMA_TESTKIT_PROMETHEUS_BIN="$$(tests/prometheus/install.sh)" \
	NUMA_TESTKIT_CHROMIUM="$$(tests/setup/chromium.sh)" \
	$(BIN)/pytest -m 'not scenario' -n $(PYTEST_WORKERS) --dist loadfile

# The scorecard (docs/scorecard.md): the e2e scenarios a-k against every scheduler adapter
# (schedulers/), with and without the exporter, at NRT lag 0 and 5 s +- 3 s, on the local
# control plane, several cells at once; writes build/scorecard/scorecard.json and .html and
# fails only when an assertion fails (findings never do). scorecard-ci is its CI part:
# every scheduler's default mode on every scenario in its default variant plus the cells the
# assertions need. CELL=<adapter>/<scenario>/<variant> reruns one cell (into
# build/scorecard/cells/); SCORECARD_ARGS adds options (e.g. --scheduler kai --jobs 2).
SCORECARD = NUMA_TESTKIT_CONTROLPLANE_BIN="$$(tests/controlplane/build.sh)" \
	$(BIN)/python -m tests.scorecard $(if $(CELL),--cell $(CELL)) $(SCORECARD_ARGS)

scorecard: $(VENV)/.installed-dev
	$(SCORECARD) --matrix full

scorecard-ci: $(VENV)/.installed-dev
	$(SCORECARD) --matrix ci

# The CI part with the components in-cluster on a Kind cluster (one cell at a time).
scorecard-kind: $(VENV)/.installed-dev
	kind/build-node-image.sh >/dev/null
	$(SCORECARD) --matrix ci --kind

# The e2e scenarios a-h on Kind (tests/e2e --kind: the components deployed in-cluster
# from the manifests), then the tests marked `kind` (tests/kind/: the exporter on the Kind
# node's real kubelet), in one session on one cluster (kind-test-incluster). Then, on a
# cluster of real-kubelet workers, the e2e scenarios a-h on real kubelets (--real-kubelet)
# and the real-kubelet oracle, in one session sharing that cluster
# (kind-test-realkubelet). The node image is built first, with its progress lines, so
# that pytest's per-test timeout covers only the cluster (kind/up.sh, which also builds
# and loads the project image) and the tests.
kind-test: $(VENV)/.installed-dev
	$(MAKE) --no-print-directory kind-test-incluster
	$(MAKE) --no-print-directory kind-test-realkubelet

kind-test-incluster: $(VENV)/.installed-dev
	@echo "== kind: Docker engine and offline node image (cached; the first build takes 15-30 min, see docs/kind.md)"
	kind/build-node-image.sh >/dev/null
	@echo "== kind: tests (cluster up with the project image, scenarios a-h in-cluster, the exporter on the real kubelet, cluster deleted)"
	NUMA_TESTKIT_HELM="$$(tests/helm/build.sh)" $(BIN)/pytest --kind -m 'kind or controlplane' tests/e2e tests/kind

kind-test-realkubelet: $(VENV)/.installed-dev
	kind/build-node-image.sh >/dev/null
	@echo "== kind: real kubelets v1.36.3 on fake NUMA topologies (one cluster): the e2e scenarios a-h (docs/e2e.md), then the oracle - 13 fixed + 50 seeded random scenarios (docs/real-kubelet.md), then fakenrt nrt publish on 3 of them (docs/nrt.md)"
	$(BIN)/pytest --kind --real-kubelet -m 'kind or controlplane' tests/e2e tests/realnode tests/nrtpub/test_real_kubelet.py

# The Kind node image and the schedulers' Go builds (cold: the image about 9 minutes, KAI
# 15-25, scheduler-plugins 5) run in the background, niced, beside the gates and the Python
# tests, in the order they are needed; the node image's first steps (Debian, the Docker
# engine) overlap the control plane's build, which it then waits for. Each build script
# holds a lock while it builds, so a step that needs one waits for it. The real-kubelet
# session mostly waits on kubelets, so the scorecard runs beside it, its output in
# build/scorecard-ci.log (shown when both are done): 2.5-3 min less than one after the
# other (the scorecard 355 s instead of 270, the real-kubelet cluster up in 260 s instead
# of 154, every assertion held).
# The schedulers make test runs the scorecard for (docs/scorecard.md): the reference
# scheduler, the stock kube-scheduler, KAI-Scheduler and scheduler-plugins. Volcano and
# Koordinator run in make scorecard-ci and make scorecard: their cold builds (about 16 min
# on 2 cores) would take make test's cold run past its hour.
CI_SCHEDULERS = reference,kube-scheduler,kai,scheduler-plugins

test: $(VENV)/.installed-dev
	@mkdir -p build
	@echo "== the Kind node image, then the schedulers ($(CI_SCHEDULERS)): built in the background (build/kind-build.log, build/schedulers-build.log)"
	(nice -n 10 kind/build-node-image.sh >build/kind-build.log 2>&1; \
	 nice -n 10 $(BIN)/python -m schedulers.building $(CI_SCHEDULERS) >build/schedulers-build.log 2>&1) &
	tests/controlplane/build.sh >/dev/null
	tests/controlplane/build-kubectl.sh >/dev/null
	tests/helm/build.sh >/dev/null
	tests/prometheus/install.sh >/dev/null
	tests/setup/chromium.sh >/dev/null
	$(MAKE) --no-print-directory lint typecheck imports rules kind-check pytest kind-test-incluster
	@echo "== the real-kubelet session, and beside it the scorecard ($(CI_SCHEDULERS)) once the schedulers are built: its output in build/scorecard-ci.log, shown when both are done"
	@( echo "== scorecard: waiting for the schedulers' builds (build/schedulers-build.log)"; \
	   $(BIN)/python -m schedulers.building $(CI_SCHEDULERS) >/dev/null && \
	   $(MAKE) --no-print-directory scorecard-ci SCORECARD_ARGS="--scheduler $(CI_SCHEDULERS)" \
	 ) >build/scorecard-ci.log 2>&1 & scorecard=$$!; \
	 realkubelet=0; $(MAKE) --no-print-directory kind-test-realkubelet || realkubelet=$$?; \
	 pid=$$scorecard; scorecard=0; wait $$pid || scorecard=$$?; \
	 echo "== scorecard (build/scorecard-ci.log, exit $$scorecard):"; cat build/scorecard-ci.log; \
	 test $$realkubelet -eq 0 && test $$scorecard -eq 0

image: $(VENV)/.installed-runtime
	kind/image.sh $(BIN)/python

kind-up: $(VENV)/.installed-runtime
	kind/up.sh

kind-down:
	kind/down.sh

protos: $(VENV)/.installed-dev
	$(BIN)/python -m protos.generate

bench: $(VENV)/.installed-runtime
	for script in benchmarks/bench_*.py; do echo "== $$script"; $(BIN)/python "$$script"; done

clean:
	rm -rf $(VENV) build/venv-runtime build/venv-base .mypy_cache .ruff_cache .pytest_cache
