# SPDX-License-Identifier: MIT
# Crash-consistency harness and soak (included by the top Makefile).
#   make crash CYCLES=N    kill -9 the daemon N times under load, verify after each restart
#   make soak MINUTES=N    verified fio under changing limits; RSS and fds must stay flat
#   make powercut CYCLES=N power cuts of the write cache under the block writer, ext4, SQLite
# More knobs: CRASH_ARGS="SIZE=128M MODES=disk,ext4 SEED=42 ACK=direct", SOAK_ARGS="SIZE=1G HUP_SECS=1",
#   POWERCUT_ARGS="MODES=disk,armed,poweron,ext4,sqlite SEED=42 IGNORE=2"

CRASHTOOL := $(B)/tests/crash/crashtool
CYCLES ?= 50
MINUTES ?= 10

$(CRASHTOOL): tests/crash/crashtool.c
	@mkdir -p $(dir $@)
	$(call quiet,CC,$@)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $<

# make check runs tests/crash/check-crash.sh, which needs the tool.
check: $(CRASHTOOL)

crash: deps all $(CRASHTOOL)
	@PLUGDISK=$(abspath $(B)/plugdisk) CRASHTOOL=$(abspath $(CRASHTOOL)) \
		tests/crash/crash.sh CYCLES=$(CYCLES) $(CRASH_ARGS)

soak: deps all
	@PLUGDISK=$(abspath $(B)/plugdisk) tests/crash/soak.sh MINUTES=$(MINUTES) $(SOAK_ARGS)

powercut: deps all $(CRASHTOOL)
	@PLUGDISK=$(abspath $(B)/plugdisk) CRASHTOOL=$(abspath $(CRASHTOOL)) \
		tests/crash/powercut.sh CYCLES=$(CYCLES) $(POWERCUT_ARGS)

# make explore-demo: plugdisk explore over ext4 and xfs under a file workload (1000 states
# each, fsck-clean), and its rate against a copy and a replay per state
# (tests/crash/explore-demo.sh).
explore-demo: deps all
	@PLUGDISK=$(abspath $(B)/plugdisk) tests/crash/explore-demo.sh
