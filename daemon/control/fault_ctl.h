/* SPDX-License-Identifier: MIT */
/* The control file's fault commands: fault add/del/clear/list and release. */
#ifndef PLUGDISK_FAULT_CTL_H
#define PLUGDISK_FAULT_CTL_H

#include "daemon/control/control.h"

/* The fault command's usage line, for "help" and for its errors. */
#define FAULT_CTL_USAGE "fault add SPEC | fault del ID | fault clear | fault list"

/* "fault add SPEC...", "fault del ID", "fault clear", "fault list" (a ctl_cmd_fn). */
int fault_ctl_cmd(struct pd *pd, int argc, char **argv, struct ctl_out *out);

/* "release [ID]": complete the requests stalled by fault ID, or by every fault. */
int fault_ctl_release(struct pd *pd, int argc, char **argv, struct ctl_out *out);

/* The active faults, one "fault add SPEC # id=..." line each (a ctl_show_fn). */
void fault_ctl_show(struct pd *pd, struct ctl_out *out);

#endif
