# SPDX-License-Identifier: MIT
# Benchmarks (included by the top Makefile).
#   make bench            plugdisk against raw tmpfs, a minimal FUSE disk and nbdfuse+nbdkit
#   make bench QUICK=1    the same, one repetition and short runs (under 3 minutes)
#   make bench BENCH_HP=.../passthrough_hp BENCH_HP_LIBDIR=.../lib   adds libfuse's io_uring daemon
# Results go to stdout and $(B)/bench-results.md. Needs root (loop devices, drop_caches).

REF_FUSE := $(B)/tests/bench/ref_fuse
CORE_BENCH := $(B)/tests/bench/core_bench

$(REF_FUSE): tests/bench/ref_fuse.c
	@mkdir -p $(dir $@)
	$(call quiet,CC,$@)$(CC) $(CFLAGS) $(call pc_cflags,fuse3) $(LDFLAGS) -o $@ $< \
		$(call pc_libs,fuse3)

$(CORE_BENCH): $(B)/tests/bench/core_bench.o $(B)/libcore.a
	$(call quiet,LD,$@)$(CC) $(LDFLAGS) -o $@ $^ -lm

bench: deps all $(REF_FUSE) $(CORE_BENCH)
	@PLUGDISK=$(abspath $(B)/plugdisk) REF_FUSE=$(abspath $(REF_FUSE)) \
		CORE_BENCH=$(abspath $(CORE_BENCH)) RESULTS=$(abspath $(B))/bench-results.md \
		tests/bench/bench.sh $(if $(filter 1,$(QUICK)),--quick)
