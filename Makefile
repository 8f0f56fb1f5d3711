# wpcloud.hosting: build, test and demo entry points.
#
#   make demo     a full site migration against the bundled emulator and a local SSH source host
#   make test     everything CI runs: units, integration, system tests, the test doubles' own tests,
#                 reliability, sanity (ansible-core 2.21 + 2.16), release gates
#
# Both install what they need (`make setup`: apt packages, .venv, .venv-2.16, the collection tree).
# `make help` lists the other targets.

SHELL := /bin/bash
.DEFAULT_GOAL := help
# Setup and make's own chatter go to stderr or nowhere: `make emulator`'s stdout is only its JSON line.
MAKEFLAGS += --no-print-directory

VENV     := .venv
VENV216  := .venv-2.16
BUILD    := .build
TREE     := $(BUILD)/collections/ansible_collections/wpcloud/hosting
ROOT     := $(CURDIR)

# Python version of a venv (X.Y), evaluated when a recipe runs, i.e. after `setup`.
pyver = $(shell test -x $(1)/bin/python && $(1)/bin/python -c 'import sys; print("%d.%d" % sys.version_info[:2])')

# ansible-test runs inside the collection tree, with the venv's bin first on PATH so that
# `python3.X` resolves to the venv interpreter (never a pyenv shim). $(2): another copy of the tree.
ansible_test = cd $(or $(2),$(TREE)) && PATH="$(ROOT)/$(1)/bin:$$PATH" ansible-test
# Each sanity run has a copy of its own, so that it can run beside the ansible-test suites of the other
# copies (ansible-test keeps its work in the tree's tests/output): $(call sanity_tree,2.21)
sanity_tree = $(BUILD)/sanity-$(1)/ansible_collections/wpcloud/hosting

SUITES := units integration system support reliability sanity-2.21 sanity-2.16 gates
# What a suite's target runs first. `make test` runs setup once, then each suite with SETUP= (nothing).
SETUP ?= setup

.PHONY: help setup system-packages get-pip tree test check units integration system support \
        reliability soak sanity sanity-2.21 sanity-2.16 lint gates docs emulator demo webhook-demo clean

help:
	@echo "make demo         full site migration against the emulator and a local SSH source host"
	@echo "make webhook-demo the webhook receiver (ansible-rulebook) and the emulator wired together: one signed event"
	@echo "make test         every suite below but lint, docs and soak, side by side, with a summary; what CI runs"
	@echo "make check        the inner loop for a change (about a minute): units, lint of the changed files, their integration targets"
	@echo "make setup        apt packages, .venv (ansible-core 2.21), .venv-2.16, collection tree (idempotent)"
	@echo "make units        ansible-test units --local"
	@echo "make integration  ansible-test integration --local against a fresh emulator"
	@echo "make system       pytest tests/system: the collection end to end (playbooks, role, runner, webhooks)"
	@echo "make support      pytest tests/support/tests: the test doubles' own tests (emulator, source host, tools)"
	@echo "make reliability  secret-leak scan, hostile inputs, fault injection, webhook attacks and crashes (summary table)"
	@echo "make soak         long experiments out of make test: twenty random SIGKILLs of the webhook rulebook, a burst of 8 killed (10-15 min)"
	@echo "make sanity       ansible-test sanity --venv with ansible-core 2.21 and 2.16"
	@echo "make lint         ansible-lint (production profile)"
	@echo "make gates        release gates: ansible-lint, galaxy-importer, antsibull-docs, docs site, changelog, ansible-builder"
	@echo "make docs         build the HTML docs site into docs/build/html (fails on a warning or a broken link)"
	@echo "make emulator     run the service emulator in the foreground (EMULATOR_ARGS=\"--port 8443 --api-key KEY\")"
	@echo "make clean        remove venvs, the collection tree and test output"

# ---------------------------------------------------------------- setup

setup: system-packages $(VENV)/.installed $(VENV216)/.installed get-pip tree

system-packages:
	@tests/utils/install-system-packages.sh

$(VENV)/.installed: tests/requirements.txt requirements.txt tests/utils/make-venv.sh
	@tests/utils/make-venv.sh $(VENV) tests/requirements.txt

# ansible-core 2.16 supports controller Pythons up to 3.12 only; without a 3.12 on the machine
# (e.g. plain Debian 13) the 2.16 sanity run is skipped and says so.
$(VENV216)/.installed: tests/requirements-2.16.txt tests/utils/make-venv.sh
	@if tests/utils/find-python.sh --exact 3.12 >/dev/null; then \
		tests/utils/make-venv.sh $(VENV216) tests/requirements-2.16.txt --exact 3.12; \
	else \
		mkdir -p $(VENV216); \
		echo "no Python 3.12 on this machine: ansible-core 2.16 needs a 3.10-3.12 controller" > $(VENV216)/.unavailable; \
		echo "setup: WARNING: $$(cat $(VENV216)/.unavailable); sanity-2.16 will be skipped" >&2; \
		touch $@; \
	fi

# ansible-test downloads get-pip.py from a server we cannot reach: seed its cache with a stand-in.
get-pip: $(VENV)/.installed $(VENV216)/.installed
	@$(VENV)/bin/python tests/utils/seed_get_pip.py >&2
	@if [ -x $(VENV216)/bin/python ]; then $(VENV216)/bin/python tests/utils/seed_get_pip.py >&2; fi

# A fresh copy of the collection where ansible-test wants it (.../ansible_collections/wpcloud/hosting).
tree: $(VENV)/.installed
	@$(VENV)/bin/python tests/utils/sync_tree.py $(TREE) >&2

# ---------------------------------------------------------------- test suites

# `make test` runs setup once, then its suites side by side in lanes; the suites of a lane run one after the
# other. The suites are CPU-bound together on 2 cores (about 840 CPU-s in about 445 s), so the lanes are
# balanced by the CPU each suite uses (user+sys of its whole process tree; medians of three fresh-clone runs alone,
# 2026-12-07, docs/contributing.md): system 338 CPU-s (its own three workers); reliability 113 then support 46
# (both mostly waiting: fault windows, rulebook restarts, emulators and source hosts starting); units 43 then
# integration 69 (they share the collection copy's tests/output; integration in a copy of its own from the start
# was slower: 535 s against 499 s); the release gates 63 then sanity-2.21 74; sanity-2.16 75 (each sanity run in
# a copy of its own). Each
# suite's output goes to $(BUILD)/test-logs/<suite>.log, printed whole at the end in the order of SUITES,
# with a line per suite as it ends (its wall time and CPU-s: user+sys of the suite's process tree, from bash's
# `times` in its lane). TEST_LANES=serial: one lane, SUITES in order.
# Each lane runs in a process group of its own (set -m), which Ctrl-C or SIGTERM stops: never `kill 0`,
# which also stopped whatever shared make's process group (a second `make test` started by the same script).
TEST_LANES ?= system,reliability support,units integration,gates sanity-2.21,sanity-2.16
TEST_LOGS  := $(BUILD)/test-logs

test: setup
	@rm -rf $(TEST_LOGS); mkdir -p $(TEST_LOGS); \
	lanes="$(TEST_LANES)"; [ "$$lanes" != serial ] || lanes="$(SUITES)"; \
	listed=" $$(echo "$$lanes" | tr ',' ' ') "; \
	for suite in $(SUITES); do case "$$listed" in *" $$suite "*) ;; *) echo "test: $$suite is in no lane of TEST_LANES" >&2; exit 2;; esac; done; \
	started=$$(date +%s); \
	trap 'trap - INT TERM; echo "test: interrupted: stopping every lane" >&2; for pid in $$lane_pids; do kill -TERM -- -$$pid 2>/dev/null; done; exit 143' INT TERM; \
	echo "test: suites side by side, one lane each: $${lanes//,/ | }"; \
	IFS=, read -ra lane_list <<< "$$lanes"; \
	set -m; lane_pids=""; \
	for lane in "$${lane_list[@]}"; do \
		( cpu_before=0; for suite in $$lane; do \
			start=$$(date +%s); \
			if $(MAKE) --no-print-directory $$suite SETUP= > $(TEST_LOGS)/$$suite.log 2>&1 < /dev/null; then result=passed; else result=FAILED; fi; \
			times > $(TEST_LOGS)/$$suite.times; \
			cpu=$$(awk 'NR == 2 { split($$1, u, /[ms]/); split($$2, s, /[ms]/); printf "%d", u[1] * 60 + u[2] + s[1] * 60 + s[2] }' $(TEST_LOGS)/$$suite.times); \
			echo "$$result $$(( $$(date +%s) - start )) $$(( cpu - cpu_before ))" > $(TEST_LOGS)/$$suite.result; \
			echo "test: $$suite $$result ($$(( $$(date +%s) - start )) s, $$(( cpu - cpu_before )) CPU-s, $$(( $$(date +%s) - started )) s since the start)"; \
			cpu_before=$$cpu; \
		done ) & lane_pids="$$lane_pids $$!"; \
	done; \
	set +m; wait; \
	passed=0; failed=0; skipped=0; failed_names=""; summary=""; \
	for suite in $(SUITES); do \
		echo; echo "=================== $$suite"; cat $(TEST_LOGS)/$$suite.log; \
		read -r result seconds cpu < $(TEST_LOGS)/$$suite.result || { result=FAILED; seconds=?; cpu=?; }; \
		if [ "$$result" != passed ]; then failed=$$((failed + 1)); failed_names="$$failed_names $$suite"; \
		elif [ -f $(BUILD)/skipped/$$suite ]; then skipped=$$((skipped + 1)); \
		else passed=$$((passed + 1)); fi; \
		if [ -f $(BUILD)/skipped/$$suite ]; then result="skipped: $$(cat $(BUILD)/skipped/$$suite)"; \
		elif [ -f $(BUILD)/skipped/$$suite.partial ]; then result="$$result, skipped in part: $$(cat $(BUILD)/skipped/$$suite.partial)"; fi; \
		summary="$$summary  $$suite: $$result ($$seconds s, $$cpu CPU-s)\n"; \
	done; \
	echo; echo "=================== summary"; printf "$$summary"; \
	echo "  wall time: $$(( $$(date +%s) - started )) s"; \
	[ -z "$$failed_names" ] || echo "failed:$$failed_names"; \
	echo "$$passed passed, $$failed failed$$([ $$skipped -eq 0 ] || echo ", $$skipped skipped")"; \
	[ $$failed -eq 0 ]

# The inner loop for a change, about a minute (tests/utils/check.sh): every unit test, the lint of the changed
# files (ansible-test sanity on them but its import test; ansible-lint on changed playbooks, roles, rulebooks) and
# the integration targets of the changed modules and roles, side by side. "Changed": since the merge base with
# CHECK_BASE (default main), committed or not. Not what CI runs: `make test` before a merge.
CHECK_BASE ?=
check: setup
	@CHECK_BASE="$(CHECK_BASE)" tests/utils/check.sh $(TREE) $(call pyver,$(VENV))

# A suite that has nothing to run yet records why in $(BUILD)/skipped/<suite> and passes; one that ran
# but had to leave a part out (a tool that cannot run on this machine's Python) says so in
# $(BUILD)/skipped/<suite>.partial. Both show in the summary of `make test`.
define skip
mkdir -p $(BUILD)/skipped && echo "$(2)" > $(BUILD)/skipped/$(1) && echo "$(1): SKIPPED: $(2)"
endef

units: $(SETUP)
	@rm -f $(BUILD)/skipped/$@
	@if [ -z "$$(find $(TREE)/tests/unit -name 'test_*.py' 2>/dev/null | head -n1)" ]; then \
		$(call skip,$@,no unit tests under tests/unit yet); \
	else \
		tests/utils/run-units.sh $(TREE) $(call pyver,$(VENV)); \
	fi

# TARGETS="migration_info site_migration" runs only those (default: every target).
TARGETS ?=
integration: $(SETUP)
	@rm -f $(BUILD)/skipped/$@
	@tests/utils/run-integration.sh $(TREE) $(call pyver,$(VENV)) $(TARGETS) || rc=$$?; \
	if [ "$${rc:-0}" -eq 3 ]; then $(call skip,$@,$$(cat $(BUILD)/integration-skip-reason)); exit 0; fi; \
	exit $${rc:-0}

# SYSTEM_JOBS pytest workers (pytest-xdist), a test file each at a time, the longest files first
# (tests/system/conftest.py): every worker has its own emulator and source host (free ports, its own unix
# user and temporary directories). Three on 2 cores: a worker waits about half of its time (emulator jobs,
# polls, rulebooks starting). SYSTEM_JOBS=0: one process.
SYSTEM_JOBS ?= 3
system: $(SETUP)
	@rm -f $(BUILD)/skipped/$@; mkdir -p $(TEST_LOGS); rm -f $(TEST_LOGS)/$@-cpu.tsv
	@PATH="$(ROOT)/$(VENV)/bin:$$PATH" TEST_CPU_LOG=$(ROOT)/$(TEST_LOGS)/$@-cpu.tsv $(VENV)/bin/python -m pytest tests/system -q -p no:cacheprovider --durations=20 \
		$(if $(filter-out 0,$(SYSTEM_JOBS)),-n $(SYSTEM_JOBS) --dist loadfile --no-loadscope-reorder) || rc=$$?; \
	if [ "$${rc:-0}" -eq 5 ] && [ -z "$$(find tests/system -name 'test_*.py' -o -name '*_test.py' 2>/dev/null | head -n1)" ]; then \
		$(call skip,$@,no system tests under tests/system yet); exit 0; \
	fi; \
	exit $${rc:-0}

# The test doubles (tests/support: emulator, SSH source host) and the build tools (tests/utils)
# against their own contracts; not tests of the collection (docs/design.md, "Where tests live").
# SUPPORT_JOBS pytest workers, a test file each at a time: the tests mostly wait (emulators and source
# hosts starting and stopping). SUPPORT_JOBS=0: one process.
SUPPORT_JOBS ?= 3
support: $(SETUP)
	@rm -f $(BUILD)/skipped/$@; mkdir -p $(TEST_LOGS); rm -f $(TEST_LOGS)/$@-cpu.tsv
	@PATH="$(ROOT)/$(VENV)/bin:$$PATH" TEST_CPU_LOG=$(ROOT)/$(TEST_LOGS)/$@-cpu.tsv $(VENV)/bin/python -m pytest tests/support/tests -q -p no:cacheprovider \
		$(if $(filter-out 0,$(SUPPORT_JOBS)),-n $(SUPPORT_JOBS) --dist loadfile)

# Secret-leak scan, hostile inputs, faults on a 100-site fleet, the webhook receiver under attack;
# prints the summary table (docs/reliability.md).
# The suite mostly waits (on the emulator's fault windows, uncertain writes' in-flight windows, ansible-rulebook
# restarting): its longest parts run side by side, each in a pytest session of its own with its own final scan
# for the canaries (REL_LAST), the rest in one more; summary_table.py prints one table of them all.
# REL_PARTS: name=tests (a file or a test's node id) ...
REL_LAST  := tests/reliability/test_rel_zz_artifacts.py
REL_PARTS := crash=tests/reliability/test_rel_webhook_crash.py \
             fleet=tests/reliability/test_rel_faults.py::test_fleet_of_100_sites_converges_under_faults \
             secrets=tests/reliability/test_rel_secrets.py
reliability: $(SETUP)
	@rm -f $(BUILD)/skipped/$@; mkdir -p $(BUILD)/reliability; rm -f $(BUILD)/reliability/*
	@run() { PATH="$(ROOT)/$(VENV)/bin:$$PATH" RELIABILITY_SUMMARY_JSON=$(BUILD)/reliability/$$1.json \
		TEST_CPU_LOG=$(ROOT)/$(BUILD)/reliability/$$1-cpu.tsv \
		$(VENV)/bin/python -m pytest -q -rx -p no:cacheprovider "$${@:2}" > $(BUILD)/reliability/$$1.log 2>&1; }; \
	names=""; pids=""; rest=""; \
	for part in $(REL_PARTS); do \
		tests=$${part#*=}; run $${part%%=*} $$tests $(REL_LAST) & names="$$names $${part%%=*}"; pids="$$pids $$!"; \
		case $$tests in *::*) rest="$$rest --deselect $$tests";; *) rest="$$rest --ignore $$tests";; esac; \
	done; \
	run rest tests/reliability $$rest & names="$$names rest"; pids="$$pids $$!"; \
	rc=0; for pid in $$pids; do wait $$pid || rc=1; done; \
	for part in $$names; do echo "----- reliability, part $$part"; cat $(BUILD)/reliability/$$part.log; done; \
	jsons=""; for part in $$names; do [ ! -f $(BUILD)/reliability/$$part.json ] || jsons="$$jsons $(BUILD)/reliability/$$part.json"; done; \
	[ -z "$$jsons" ] || $(VENV)/bin/python tests/reliability/summary_table.py $$jsons; \
	exit $$rc

# Long experiments out of make test, whose contract deterministic tests of make test pin at each point
# (docs/reliability.md, "make soak"): the twenty random SIGKILLs of the webhook crash experiment and the burst
# of 8 killed in its first playbook, with the final scan for the canaries and the summary table. Output in
# $(BUILD)/soak/ (the figures: soak.json). Its
# work directories stay in pytest's temporary directory: they hold links to this checkout, which a copy of
# the checkout (ansible-rulebook copies a playbook's directory) would follow round and round.
SOAK_TESTS := tests/reliability/test_rel_webhook_crash_soak.py
soak: setup
	@mkdir -p $(BUILD)/soak; rm -f $(BUILD)/soak/*
	@PATH="$(ROOT)/$(VENV)/bin:$$PATH" RELIABILITY_SUMMARY_JSON=$(BUILD)/soak/soak.json \
		$(VENV)/bin/python -m pytest -q -rx -p no:cacheprovider --soak $(SOAK_TESTS) $(REL_LAST) 2>&1 \
		| tee $(BUILD)/soak/soak.log; exit $${PIPESTATUS[0]}

sanity: sanity-2.21 sanity-2.16

sanity-2.21: $(SETUP)
	@rm -f $(BUILD)/skipped/$@
	@$(VENV)/bin/python tests/utils/sync_tree.py $(call sanity_tree,2.21) >&2
	$(call ansible_test,$(VENV),$(call sanity_tree,2.21)) sanity --venv --python $(call pyver,$(VENV))

sanity-2.16: $(SETUP)
	@rm -f $(BUILD)/skipped/$@
	@if [ -f $(VENV216)/.unavailable ]; then \
		$(call skip,$@,$$(cat $(VENV216)/.unavailable)); \
	else \
		$(VENV)/bin/python tests/utils/sync_tree.py $(call sanity_tree,2.16) >&2 && \
		echo "$(call ansible_test,$(VENV216),$(call sanity_tree,2.16)) sanity --venv --python $(call pyver,$(VENV216))" && \
		$(call ansible_test,$(VENV216),$(call sanity_tree,2.16)) sanity --venv --python $(call pyver,$(VENV216)); \
	fi

lint: setup
	PATH="$(ROOT)/$(VENV)/bin:$$PATH" ansible-lint

# Release gates: ansible-lint (production), galaxy-importer on the built tarball (no WARNING/ERROR),
# antsibull-docs lint, the docs site (make docs), antsibull-changelog lint, ansible-builder introspect/create. Own venv
# (.venv-release) on the machine's Python; a gate whose tool cannot run on it is skipped, with the reason.
gates: $(SETUP)
	@rm -f $(BUILD)/skipped/$@ $(BUILD)/skipped/$@.partial
	@tests/utils/gates.sh --skipped-file $(BUILD)/skipped/$@.partial

# The HTML docs site (antsibull-docs + Sphinx) in docs/build/html: no Sphinx warning, no broken local link
# or anchor, a page for every part of the collection (the gate `site` runs the same build).
docs: setup
	@tests/utils/build-docs.sh

# ---------------------------------------------------------------- emulator and demo

# The emulator in the foreground until Ctrl-C: stdout is one JSON line (url, api_key, ca_path, client),
# the log goes to stderr. EMULATOR_ARGS go to server.py, e.g. EMULATOR_ARGS="--port 8443 --api-key KEY"
# (docs/getting-started.md; `python tests/support/emulator/server.py --help` lists them all).
EMULATOR_ARGS ?=
emulator: setup
	@PATH="$(ROOT)/$(VENV)/bin:$$PATH" exec $(VENV)/bin/python tests/support/emulator/server.py $(EMULATOR_ARGS)

# The main job: a full site migration (three sites, three kinds of SSH authentication) against the
# emulator and a real SSH source host on this machine, run twice (the second run is a refresh).
# The source host creates a unix user, so a user who is not root runs the demo through sudo, with
# root's sbin directories on PATH (useradd, sshd) and no bytecode written (no root-owned files here).
demo: setup
	@if [ "$$(id -u)" -eq 0 ]; then \
		PATH="$(ROOT)/$(VENV)/bin:$$PATH" tests/demo/run_demo.sh; \
	elif command -v sudo >/dev/null 2>&1; then \
		echo "demo: the SSH source host needs root: running the demo with sudo" >&2; \
		sudo env PATH="$(ROOT)/$(VENV)/bin:/usr/local/sbin:/usr/sbin:/sbin:$$PATH" PYTHONDONTWRITEBYTECODE=1 \
			tests/demo/run_demo.sh; \
	else \
		echo "demo: needs root or sudo (the SSH source host creates a unix user)" >&2; exit 1; \
	fi

# The local webhook quick start (docs/webhooks.md): a CA and a certificate, the emulator, the client's
# webhook_url and key, ansible-rulebook with the sample rulebook, one signed event delivered,
# processed and acknowledged, then everything stopped. Needs a JDK 17 (java) on PATH.
webhook-demo: setup tree
	@PATH="$(ROOT)/$(VENV)/bin:$$PATH" tests/demo/webhook_demo.sh

# ---------------------------------------------------------------- clean

clean:
	rm -rf $(VENV) $(VENV216) .venv-release $(BUILD) tests/output dist .pytest_cache .ansible \
		tests/integration/inventory tests/integration/integration_config.yml
	find . -path ./.git -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +
