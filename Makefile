# Two commands matter:  `make suites` (set up + the main job)  and  `make test` (set up + our tests).
# Everything else here is a step they share.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# `hil explore`'s viewer: Model Explorer with Arm's PTE and TOSA adapters, in a venv of its own
# (its adapter wants a flatbuffers that tosa-tools in .venv forbids). About 20 s and 690 MB.
EXPLORER_VENV  := .venv-explorer
EXPLORER_STAMP := $(EXPLORER_VENV)/.hil-viewer.json

# Targets that need no hardware run on any machine once `make suites` has set it up (u55-ref and
# u85-ref: Ethos-U numerics from the TOSA reference model, cycles and memory estimated by Vela;
# tosa-fp-ref: the TOSA floating-point profile in the same reference model; vgf-emu: VGF programs
# on the ML SDK's emulation layer over Mesa's software Vulkan);
# the FVP targets run where an Arm Corstone FVP is installed and skip with the install steps.
SUITE_TARGETS ?= host vboard u55-ref u85-ref tosa-fp-ref vgf-emu cortex-m55-ref fvp-u55 fvp-u85 pi5-emu
SUITE_ARGS    ?=
REPORT_ARGS   ?=
# SIGN_KEY=lab.key (a PEM private key, or a signer URI with REPORT_ARGS="--key PUB"): the report
# is signed (report.intoto.jsonl beside it) and one that is not certifiable fails the job.
# Without it, a report that is only not certifiable (a developer's dirty tree) is printed as
# such and does not fail `make suites` (docs/reports.md, "Exit codes").
SIGN_KEY      ?=
REPORT_GATE    = $(BIN)/hil report --results $(RESULTS_DIR) --out $(REPORT_DIR) \
	$(if $(SIGN_KEY),--sign $(SIGN_KEY)) $(REPORT_ARGS) \
	|| { rc=$$?; if [ -z "$(SIGN_KEY)" ] && [ $$rc -eq 3 ]; then rc=0; fi; \
	     [ $$status -ne 0 ] || status=$$rc; }
RESULTS_DIR   := .hil/results
REPORT_DIR    := .hil/report
ALLURE_DIR    := .hil/allure
TEST_ARGS     ?=

# Debian packages for the emulated targets (QEMU boards, the emulated Pi, the virtual lab, and
# vgf-emu's Vulkan: the loader, Mesa's lavapipe, the validation layer, vulkaninfo for doctor),
# the runner's build (ninja; zlib and OpenSSL give it fast CRC-32 and SHA-256) and the report
# tests (Chromium). A missing command or file below means the packages are installed.
APT_PACKAGES := qemu-system-arm qemu-user qemu-user-static gcc-arm-none-eabi \
	libnewlib-arm-none-eabi libstdc++-arm-none-eabi-newlib g++-aarch64-linux-gnu \
	openssh-server openssh-client socat ser2net chromium ninja-build zlib1g-dev libssl-dev \
	libvulkan1 mesa-vulkan-drivers vulkan-validationlayers vulkan-tools
APT_PROBES   := qemu-system-arm qemu-aarch64 arm-none-eabi-gcc aarch64-linux-gnu-g++ sshd socat \
	ser2net chromium ninja vulkaninfo
APT_HEADERS  := /usr/include/zlib.h /usr/include/openssl/sha.h \
	/usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json

.PHONY: suites suites-m55 test compat setup system-deps lint bench docs clean

# The suites end by writing the certification report (also when a case failed) and print its
# path; the exit status is pytest's when it failed, else the report's (hil.report.gate).
# REPORT_ARGS="--baseline OLD/report.json" adds the changes.
suites: setup
	status=0; $(BIN)/pytest suites $(addprefix --target=,$(SUITE_TARGETS)) \
		--hil-results-dir=$(RESULTS_DIR) --alluredir=$(ALLURE_DIR) --clean-alluredir $(SUITE_ARGS) \
		|| status=$$?; \
	$(REPORT_GATE); \
	exit $$status

# The emulated Cortex-M55 running ExecuTorch built from your checkout: `hil sdk build` (minutes
# the first time; at once while the sources, kernels and tools are unchanged), then the suites
# on qemu-m55. EXECUTORCH: an ExecuTorch checkout with submodules; CMSIS_NN: a CMSIS-NN
# checkout, when it is not where ExecuTorch's examples/arm/setup.sh puts it.
suites-m55: setup
	@[ -n "$(EXECUTORCH)" ] || { echo "usage: make suites-m55 EXECUTORCH=<executorch checkout> [CMSIS_NN=<CMSIS-NN checkout>]"; exit 2; }
	$(BIN)/hil sdk build --executorch $(EXECUTORCH) $(if $(CMSIS_NN),--cmsis-nn $(CMSIS_NN)) --board qemu-m55
	status=0; $(BIN)/pytest suites --target=qemu-m55 --hil-results-dir=$(RESULTS_DIR) $(SUITE_ARGS) \
		|| status=$$?; \
	$(REPORT_GATE); \
	exit $$status

test: setup
	$(BIN)/pytest tests $(TEST_ARGS)

# The older ExecuTorch release hil supports (docs/compatibility.md), beside hil as a user has it:
# a venv of its own with ExecuTorch 1.4.1 and its torch, hil installed next to them without
# replacing either, and the suites on the targets where 1.4 and 1.5 differ. vboard skips there,
# naming the version (1.4.1's wheel has no runtime for a program built outside Python).
COMPAT_VENV    := .venv-compat
COMPAT_TARGETS ?= host u85-ref cortex-m55-ref vboard
compat: setup $(COMPAT_VENV)/.installed
	$(COMPAT_VENV)/bin/pytest suites -q $(addprefix --target=,$(COMPAT_TARGETS)) -rs \
		--hil-results-dir=.hil/results-compat --hil-cache-dir=.hil/cache-compat $(SUITE_ARGS)

$(COMPAT_VENV)/.installed: pyproject.toml constraints-compat.txt
	$(PYTHON) -m venv $(COMPAT_VENV)
	$(COMPAT_VENV)/bin/pip install --quiet --upgrade pip
	$(COMPAT_VENV)/bin/pip install --quiet -c constraints-compat.txt torch 'executorch[ethos-u]'
	$(COMPAT_VENV)/bin/pip install --quiet -c constraints-compat.txt -e '.[lab,suites]'
	touch $@

setup: system-deps $(STAMP) $(EXPLORER_STAMP)
	@$(BIN)/python -m hil.sdk.aarch64 >/dev/null  # the Pi's aarch64 executorch SDK, fetched once

# torch is installed first and pinned: this machine serves torch 2.13.0 (CPU) from local disk,
# and an unpinned resolve may pull a multi-GB CUDA build instead.
$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -c constraints.txt -e '.[dev,lab,suites,vgf,docs]'
	touch $(STAMP)

# Installed by hil's own installer (what `hil explore` runs on first use); redone when the pinned
# versions in hil/explore/viewer.py change.
$(EXPLORER_STAMP): hil/explore/viewer.py $(STAMP)
	$(BIN)/python -m hil.explore install-viewer --venv $(EXPLORER_VENV) >/dev/null
	@touch $(EXPLORER_STAMP)

# Installs the Debian packages when one is missing and we may (root); otherwise says what to do.
system-deps:
	@missing=""; for tool in $(APT_PROBES); do \
		PATH="$$PATH:/usr/sbin" command -v $$tool >/dev/null 2>&1 || missing="$$missing $$tool"; done; \
	for header in $(APT_HEADERS); do [ -f $$header ] || missing="$$missing $$header"; done; \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			echo "installing Debian packages (missing:$$missing)"; \
			apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
				--no-install-recommends $(APT_PACKAGES) >/dev/null; \
		else \
			echo "warning: missing$$missing; run: sudo apt-get install $(APT_PACKAGES)"; \
			echo "         (tests of the emulated targets skip until then)"; \
		fi; \
	fi

# The documentation site (docs/), served at http://127.0.0.1:8000 while you edit it.
docs: setup
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve

lint: setup
	$(BIN)/ruff check hil tests suites bench
	$(BIN)/ruff format --check hil tests suites bench
	$(BIN)/mypy

bench: setup
	$(BIN)/python bench/cold_warm.py
	$(BIN)/python bench/npu_vs_executorch.py
	$(BIN)/python bench/protocol_throughput.py
	$(BIN)/python bench/ssh_deploy.py
	$(BIN)/python bench/lab_speedup.py

clean:
	rm -rf .hil build
