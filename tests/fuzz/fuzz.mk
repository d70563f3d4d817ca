# SPDX-License-Identifier: MIT
# libFuzzer targets (tests/fuzz/fuzz_*.c), built with clang into build-fuzz/ under ASan and
# UBSan, apart from the gcc builds (SANITIZE=1 and TSAN=1 do not change them).
#   make fuzz FUZZ_SECONDS=N   run each target for N seconds (default 60) from its corpus,
#                              tests/fuzz/corpus/TARGET/, keeping what it finds in
#                              build-fuzz/corpus/TARGET/; a crash stops it, its input saved
#                              in build-fuzz/
#   make fuzz-build            build the targets only (tests/shell/fuzz.sh, in make check,
#                              runs the corpus and a short pass of each)

FUZZ_CC ?= clang
FUZZ_B := build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
FUZZ_CFLAGS := -std=gnu11 -pthread -I. -D_GNU_SOURCE -DPLUGDISK_VERSION='"$(VERSION)"' -g -O1 \
	-Wall -Wextra -Wshadow -Wvla -Wstrict-prototypes -Wmissing-declarations -Wwrite-strings \
	-MMD -MP $(FUZZ_SAN) -fsanitize=fuzzer-no-link $(if $(filter 1,$(WERROR)),-Werror)
FUZZ_TARGETS := $(patsubst tests/fuzz/fuzz_%.c,%,$(filter-out tests/fuzz/fuzz_util.c, \
	$(wildcard tests/fuzz/fuzz_*.c)))
FUZZ_BINS := $(FUZZ_TARGETS:%=$(FUZZ_B)/fuzz_%)
FUZZ_CORE_OBJ := $(CORE_SRC:%.c=$(FUZZ_B)/%.o)
FUZZ_CONF_OBJ := $(CONF_SRC:%.c=$(FUZZ_B)/%.o)
# The control target runs the daemon's command handlers: the daemon's objects but main.
FUZZ_DAEMON_OBJ := $(filter-out $(FUZZ_B)/daemon/main.o,$(DAEMON_SRC:%.c=$(FUZZ_B)/%.o) \
	$(NBD_SRC:%.c=$(FUZZ_B)/%.o))

.PHONY: fuzz fuzz-build
.SECONDARY: $(FUZZ_B)/tests/fuzz/fuzz_util.o $(FUZZ_TARGETS:%=$(FUZZ_B)/tests/fuzz/fuzz_%.o)

$(FUZZ_B)/%.o: %.c
	@mkdir -p $(dir $@)
	$(call quiet,CC,$@)$(FUZZ_CC) $(FUZZ_CFLAGS) -c -o $@ $<

$(FUZZ_B)/daemon/%.o: FUZZ_CFLAGS += $(call pc_cflags,fuse3 libsystemd liburing json-c)
$(FUZZ_B)/core/backend/backend_nbd%.o: FUZZ_CFLAGS += $(call pc_cflags,libnbd)
$(FUZZ_B)/conf/%.o: FUZZ_CFLAGS += $(call pc_cflags,libconfig)
$(FUZZ_B)/tests/fuzz/%.o: FUZZ_CFLAGS += $(call pc_cflags,fuse3 libconfig)

$(FUZZ_B)/libcore.a: $(FUZZ_CORE_OBJ)
	$(call quiet,AR,$@)rm -f $@ && $(AR) rcs $@ $^

FUZZ_LINK = $(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer -pthread -o $@ $^

$(FUZZ_B)/fuzz_wlog $(FUZZ_B)/fuzz_fault_spec $(FUZZ_B)/fuzz_dmlog: $(FUZZ_B)/fuzz_%: $(FUZZ_B)/tests/fuzz/fuzz_%.o \
		$(FUZZ_B)/tests/fuzz/fuzz_util.o $(FUZZ_B)/libcore.a
	$(call quiet,LD,$@)$(FUZZ_LINK) -lm

$(FUZZ_B)/fuzz_config: $(FUZZ_B)/tests/fuzz/fuzz_config.o $(FUZZ_B)/tests/fuzz/fuzz_util.o \
		$(FUZZ_CONF_OBJ) $(FUZZ_B)/libcore.a
	$(call quiet,LD,$@)$(FUZZ_LINK) $(CONF_LIBS) -lm

$(FUZZ_B)/fuzz_control: $(FUZZ_B)/tests/fuzz/fuzz_control.o $(FUZZ_B)/tests/fuzz/fuzz_util.o \
		$(FUZZ_DAEMON_OBJ) $(FUZZ_CONF_OBJ) $(FUZZ_B)/libcore.a
	$(call quiet,LD,$@)$(FUZZ_LINK) $(DAEMON_LIBS) -lm

fuzz-build: deps $(FUZZ_BINS)

fuzz: fuzz-build
	@FUZZ_BUILD=$(abspath $(FUZZ_B)) tests/fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_TARGETS)

ifneq ($(TSAN),1)
check: fuzz-build
endif

-include $(shell find $(FUZZ_B) -name '*.d' 2>/dev/null)
