# SPDX-License-Identifier: MIT
# make install / make uninstall (included by the top Makefile): the binary, the systemd unit,
# the example configuration and units, the man pages, the bash completion and explore's ready
# checkers. Honours PREFIX and DESTDIR.

BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
DOCDIR ?= $(PREFIX)/share/doc/plugdisk
# systemd searches /usr/local/lib/systemd/system and /usr/lib/systemd/system, so the package's
# unit goes under PREFIX and /etc/systemd/system stays the administrator's. With a PREFIX that
# systemd does not search (e.g. /opt/plugdisk), set SYSTEMD_UNITDIR=/etc/systemd/system.
SYSTEMD_UNITDIR ?= $(PREFIX)/lib/systemd/system
# The system unit directories systemd searches (systemd.unit(5)), as a shell case pattern.
SYSTEMD_SEARCHED := /etc/systemd/system|/run/systemd/system|/usr/local/lib/systemd/system|/usr/lib/systemd/system|/lib/systemd/system
# The unit reads SYSCONFDIR/plugdisk/NAME.conf.
SYSCONFDIR ?= /etc
# bash-completion loads completions/NAME on demand from here (PREFIX=/usr: the system's).
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
# explore's ready checkers (checkers/plugdisk-check-*), with the library they source from
# their own directory.
LIBEXECDIR ?= $(PREFIX)/libexec/plugdisk
CHECKERS := $(filter-out %.sh,$(wildcard checkers/plugdisk-check-*))

INSTALL ?= install

# The unit, with the paths of this installation. Made on every install: the paths come from
# the command line (BINDIR, SYSCONFDIR, PREFIX), which the file's date cannot tell.
$(B)/systemd/plugdisk@.service: systemd/plugdisk@.service.in FORCE
	@mkdir -p $(dir $@)
	$(call quiet,GEN,$@)sed -e 's|@BINDIR@|$(BINDIR)|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' $< >$@

units: $(B)/systemd/plugdisk@.service

# The bash completion, its lists (options, keys and their words, profiles, control commands)
# taken from the binary just built, so that they cannot fall behind it.
$(B)/completion/plugdisk: completion/plugdisk.bash.in completion/gen.sh $(B)/plugdisk
	@mkdir -p $(dir $@)
	$(call quiet,GEN,$@)sh completion/gen.sh $(B)/plugdisk $< >$@.tmp && mv $@.tmp $@

completion: $(B)/completion/plugdisk

# `make` builds it, as plugdisk(8) says.
all: $(B)/completion/plugdisk

install: $(B)/plugdisk $(B)/systemd/plugdisk@.service $(B)/completion/plugdisk
	$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(SYSTEMD_UNITDIR) \
		$(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(DOCDIR)/examples \
		$(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(LIBEXECDIR)
	$(INSTALL) -m 0755 $(B)/plugdisk $(DESTDIR)$(BINDIR)/plugdisk
	$(INSTALL) -m 0755 $(CHECKERS) $(DESTDIR)$(LIBEXECDIR)/
	$(INSTALL) -m 0644 checkers/plugdisk-check-lib.sh $(DESTDIR)$(LIBEXECDIR)/
	$(INSTALL) -m 0644 $(B)/systemd/plugdisk@.service $(DESTDIR)$(SYSTEMD_UNITDIR)/plugdisk@.service
	$(INSTALL) -m 0644 man/plugdisk.8 $(DESTDIR)$(MANDIR)/man8/plugdisk.8
	$(INSTALL) -m 0644 man/plugdisk.conf.5 $(DESTDIR)$(MANDIR)/man5/plugdisk.conf.5
	$(INSTALL) -m 0644 $(B)/completion/plugdisk $(DESTDIR)$(BASHCOMPDIR)/plugdisk
	$(INSTALL) -m 0644 systemd/examples/t1.conf systemd/examples/srv-plugdisk-t1.mount \
		$(DESTDIR)$(DOCDIR)/examples/
	@# The documented example next to where instance configs go (root-owned, 0644, as the
	@# root daemon requires); never over an administrator's file of the same name.
	$(INSTALL) -d -m 0755 $(DESTDIR)$(SYSCONFDIR)/plugdisk
	$(INSTALL) -m 0644 conf/plugdisk.conf $(DESTDIR)$(SYSCONFDIR)/plugdisk/plugdisk.conf.example
	@# systemd loads the unit only from the directories it searches
	@if [ -n "$(DESTDIR)" ]; then :; \
	elif case "$(abspath $(SYSTEMD_UNITDIR))" in $(SYSTEMD_SEARCHED)) true ;; *) false ;; esac; then \
		echo "installed; run 'systemctl daemon-reload' to load plugdisk@.service"; \
	else \
		echo "installed; systemd does not search $(SYSTEMD_UNITDIR): to use plugdisk@.service," \
			"install again with SYSTEMD_UNITDIR=/etc/systemd/system (or link the unit there)," \
			"then run 'systemctl daemon-reload'"; \
	fi

# Removes what install put there; instance configs in SYSCONFDIR/plugdisk and images in
# /var/lib/plugdisk are the administrator's data and stay.
uninstall:
	rm -f $(DESTDIR)$(BINDIR)/plugdisk $(DESTDIR)$(SYSTEMD_UNITDIR)/plugdisk@.service \
		$(DESTDIR)$(MANDIR)/man8/plugdisk.8 $(DESTDIR)$(MANDIR)/man5/plugdisk.conf.5 \
		$(DESTDIR)$(DOCDIR)/examples/t1.conf $(DESTDIR)$(DOCDIR)/examples/srv-plugdisk-t1.mount \
		$(DESTDIR)$(SYSCONFDIR)/plugdisk/plugdisk.conf.example \
		$(DESTDIR)$(BASHCOMPDIR)/plugdisk \
		$(CHECKERS:checkers/%=$(DESTDIR)$(LIBEXECDIR)/%) $(DESTDIR)$(LIBEXECDIR)/plugdisk-check-lib.sh
	-rmdir $(DESTDIR)$(DOCDIR)/examples $(DESTDIR)$(LIBEXECDIR) $(DESTDIR)$(DOCDIR) $(DESTDIR)$(SYSCONFDIR)/plugdisk 2>/dev/null

.PHONY: units completion

.PHONY: FORCE
FORCE:
