# SPDX-License-Identifier: MIT
# plugdisk: plain GNU make. Variables: WERROR=1, SANITIZE=1 (ASan+UBSan), TSAN=1, V=1,
# PREFIX, DESTDIR. Objects go to build/ (build-asan/, build-tsan/ for sanitizer builds).
# 'make' builds the daemon and the unit tests; 'make static' runs cppcheck and scan-build;
# 'make fuzz' the libFuzzer targets (tests/fuzz/fuzz.mk).

CC ?= gcc
CFLAGS ?= -O2 -g
PKG_CONFIG ?= pkg-config
PREFIX ?= /usr/local
DESTDIR ?=

VERSION := 0.1.0

override CFLAGS += -std=gnu11 -pthread -I. -D_GNU_SOURCE -DPLUGDISK_VERSION='"$(VERSION)"' \
	-Wall -Wextra -Wshadow -Wvla -Wstrict-prototypes -Wmissing-declarations -Wwrite-strings \
	-MMD -MP
override LDFLAGS += -pthread

B := build
ifeq ($(SANITIZE),1)
B := build-asan
override CFLAGS += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined \
	-DPLUGDISK_CHECKS
override LDFLAGS += -fsanitize=address,undefined
endif
ifeq ($(TSAN),1)
B := build-tsan
override CFLAGS += -fsanitize=thread -fno-omit-frame-pointer -DPLUGDISK_CHECKS
override LDFLAGS += -fsanitize=thread
endif
ifeq ($(WERROR),1)
override CFLAGS += -Werror
endif

ifneq ($(V),1)
Q := @
quiet = @printf '  %-7s %s\n' $(1) $(2);
endif

# pkg-config is only asked in recipes (recursive variables), after 'deps' has installed what it
# reports on: 'make deps' works on a bare machine, and so does a first 'make check'.
pc_cflags = $(shell $(PKG_CONFIG) --cflags $(1) 2>/dev/null)
pc_libs = $(shell $(PKG_CONFIG) --libs $(1) 2>/dev/null)

# core/backend/backend_nbd*.c need libnbd: they are linked into the daemon only, so that libcore.a and
# the unit tests do not depend on it.
NBD_SRC := $(wildcard core/backend/backend_nbd*.c)
CORE_SRC := $(filter-out $(NBD_SRC),$(wildcard core/*.c core/*/*.c))
CONF_SRC := $(wildcard conf/*.c conf/*/*.c)
DAEMON_SRC := $(wildcard daemon/*.c daemon/*/*.c daemon/*/*/*.c)

CORE_OBJ := $(CORE_SRC:%.c=$(B)/%.o)
CONF_OBJ := $(CONF_SRC:%.c=$(B)/%.o)
DAEMON_OBJ := $(DAEMON_SRC:%.c=$(B)/%.o)
NBD_OBJ := $(NBD_SRC:%.c=$(B)/%.o)

DAEMON_LIBS = $(call pc_libs,fuse3 libconfig libsystemd liburing libnbd libmicrohttpd json-c)
CONF_LIBS = $(call pc_libs,libconfig)
CHECK_LIBS = $(call pc_libs,check)

$(B)/daemon/%.o: override CFLAGS += $(call pc_cflags,fuse3 libsystemd liburing libmicrohttpd json-c)
$(B)/conf/%.o: override CFLAGS += $(call pc_cflags,libconfig)
$(NBD_OBJ): override CFLAGS += $(call pc_cflags,libnbd)

# Unit tests: one Check suite per module, tests/unit/test_*.c, linked with core (and conf).
# The reference model is a program of several files, tests/unit/model/*.c: test_model.
UNIT_SRC := $(wildcard tests/unit/test_*.c)
MODEL_SRC := $(wildcard tests/unit/model/*.c)
UNIT_BINS := $(UNIT_SRC:%.c=$(B)/%) $(B)/tests/unit/test_model

.PHONY: all deps deps-run print-deps run check unit mount clean install uninstall bench crash soak \
	powercut format static model oracle explore-demo

all: $(B)/plugdisk $(UNIT_BINS)

$(B)/%.o: %.c
	@mkdir -p $(dir $@)
	$(call quiet,CC,$@)$(CC) $(CFLAGS) -c -o $@ $<

$(B)/libcore.a: $(CORE_OBJ)
	$(call quiet,AR,$@)rm -f $@ && $(AR) rcs $@ $^

$(B)/plugdisk: $(DAEMON_OBJ) $(NBD_OBJ) $(CONF_OBJ) $(B)/libcore.a
	$(call quiet,LD,$@)$(CC) $(LDFLAGS) -o $@ $^ $(DAEMON_LIBS) -lm

# Debian packages the build, the tests and the benchmarks need.
DEB_PACKAGES := build-essential pkg-config libfuse3-dev fuse3 libconfig-dev check strace xfsprogs btrfs-progs \
	libsystemd-dev liburing-dev libnbd-dev systemd util-linux e2fsprogs fio nbdkit libnbd-bin qemu-utils \
	procps psmisc kmod iproute2 coreutils groff-base man-db jq cppcheck clang-tools sqlite3 \
	python3-prometheus-client graphviz prometheus curl clang libclang-rt-14-dev git btrfs-progs

# What building and running the daemon needs ('make run'). 'deps' installs it too, with
# DEB_PACKAGES: always a superset.
DEB_RUN_PACKAGES := build-essential pkg-config libfuse3-dev fuse3 libconfig-dev libsystemd-dev \
	liburing-dev libnbd-dev libmicrohttpd-dev libjson-c-dev

# $(call deb_install,PACKAGES): apt-get install those of PACKAGES that are missing.
deb_install = @missing=""; for p in $(1); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

deps-run:
	$(call deb_install,$(DEB_RUN_PACKAGES))

deps:
	$(call deb_install,$(sort $(DEB_RUN_PACKAGES) $(DEB_PACKAGES)))

# The packages 'deps' installs, one per line (tests/shell/deps-installed.sh checks them
# against the tests).
print-deps:
	@printf '%s\n' $(sort $(DEB_RUN_PACKAGES) $(DEB_PACKAGES))

MNT ?= mnt
run: deps-run $(B)/plugdisk
	@mkdir -p $(MNT)
	$(B)/plugdisk -f $(RUN_ARGS) $(MNT)

clean:
	rm -rf build build-asan build-tsan build-scan build-fuzz

# cppcheck and scan-build; fails on findings not listed with a reason in tests/static/.
static: deps
	@tests/static/check.sh

format:
	clang-format -i core/*/*.[ch] daemon/*.[ch] daemon/*/*.[ch] conf/*.[ch] conf/*/*.[ch] tests/unit/*.c tests/unit/model/*.[ch] tests/bench/*.c tests/crash/*.c

# The unit objects are intermediate files of a pattern chain: keep them, so that a second
# build relinks nothing and recompiles only what changed.
.SECONDARY: $(UNIT_SRC:%.c=$(B)/%.o) $(MODEL_SRC:%.c=$(B)/%.o)
$(B)/tests/unit/%.o: override CFLAGS += $(call pc_cflags,check) -UNDEBUG
$(B)/tests/unit/test_%: $(B)/tests/unit/test_%.o $(CONF_OBJ) $(B)/libcore.a
	$(call quiet,LD,$@)$(CC) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(CONF_LIBS) -lm
$(B)/tests/unit/test_model: $(MODEL_SRC:%.c=$(B)/%.o) $(CONF_OBJ) $(B)/libcore.a
	$(call quiet,LD,$@)$(CC) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(CONF_LIBS) -lm

# Mount tests: small scripts, one behaviour each, sharing tests/lib.sh.
MOUNT_TESTS := $(sort $(wildcard tests/mount/*.sh tests/shell/*.sh tests/systemd/test-*.sh \
	tests/crash/check-*.sh tests/stress/*.sh))
# TESTS=... runs a subset, e.g. make check TESTS="tests/mount/dd.sh"
ifeq ($(TSAN),1)
# ThreadSanitizer: the unit suites, one mount test that drives every thread of the daemon, the
# io_uring transport test, and the NBD backend's verified fio, which drives its connection
# threads and their deferred commands (each mount test runs on both transports).
TESTS ?= $(UNIT_BINS) tests/mount/fio-verify-file.sh tests/mount/io-uring.sh \
	tests/mount/nbd-fio-verify.sh
else
TESTS ?= $(UNIT_BINS) $(MOUNT_TESTS)
endif

unit: $(UNIT_BINS)
	@PLUGDISK=$(abspath $(B)/plugdisk) LOGDIR=$(B)/test-logs tests/run-tests.sh $(UNIT_BINS)

check: deps all $(UNIT_BINS) $(CHECK_EXTRA)
	@PLUGDISK=$(abspath $(B)/plugdisk) BUILD=$(abspath $(B)) LOGDIR=$(B)/test-logs \
		tests/run-tests.sh $(TESTS)

# The reference model of the stages below the controller (tests/unit/model/), run long:
# make model SEQUENCES=N [JOBS=J] [SEED=S] [CHECKS=all|d1,d2,d5,d6,d7,fx]
# [STAGES_ORDER='faults, cache'] (stages.order; default "cache, faults"). J processes share the
# N sequences; the first divergence of each is shrunk and printed with the command that
# replays it.
SEQUENCES ?= 10000
JOBS ?= 1
model: $(B)/tests/unit/test_model
	tests/unit/model-run.sh $(B)/tests/unit/test_model $(SEQUENCES) $(JOBS) '$(SEED)' '$(CHECKS)' \
		'$(STAGES_ORDER)'

# The oracle of plugdisk explore (tests/unit/test_oracle.c), run long: make oracle N=cuts
# [SEED=S]: N live cuts of seeded workloads through the write cache, each image and its marks
# looked for among the log's crash states. make check runs 400.
N ?= 10000
oracle: $(B)/tests/unit/test_oracle
	$(B)/tests/unit/test_oracle --cuts $(N) $(if $(SEED),--seed $(SEED))

# The key reference of plugdisk.conf(5), from the key table (tests/shell/doc-keys.sh checks
# that the committed page holds what the binary prints), doc/stats.md's tables from the stats
# name table (tests/shell/stats-doc.sh checks the same), and the request-path picture, from
# its graphviz source (tests/shell/request-path.sh checks the committed SVG).
.PHONY: doc
doc: $(B)/plugdisk doc/request-path.svg
	man/gen-keys.sh $(B)/plugdisk man/plugdisk.conf.5 >$(B)/plugdisk.conf.5.new
	cat $(B)/plugdisk.conf.5.new >man/plugdisk.conf.5
	doc/gen-stats.sh $(B)/plugdisk doc/stats.md >$(B)/stats.md.new
	cat $(B)/stats.md.new >doc/stats.md

doc/request-path.svg: doc/request-path.dot
	dot -Tsvg $< >$@.new && mv $@.new $@

-include tests/bench/bench.mk
-include tests/crash/crash.mk
-include tests/fuzz/fuzz.mk
-include systemd/install.mk

-include $(shell find $(B) -name '*.d' 2>/dev/null)
