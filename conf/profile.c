/* SPDX-License-Identifier: MIT */
/* The device profiles (see profile.h and doc/profiles.md, which give the same sources).
 *
 * Conventions. Vendors give MB/s in decimal megabytes: those figures are written out in
 * bytes (560 MB/s = 560000000). Cloud providers give MiB/s: those are written with the M
 * suffix (128 MiB/s = 128M). A datasheet's QD1 IOPS is the inverse of the mean service
 * time; with a lognormal distribution the mean is the median times exp(sigma^2 / 2), so the
 * medians below are set that much under 1/IOPS (for p99 = 3 x median, sigma = ln 3 / 2.326
 * and the factor is 1.118). Where a datasheet gives no tail, the tail is an assumption and
 * says so. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/keys/key.h"
#include "conf/profile.h"

/* Every profile: a data sheet's rate at queue depth 1 has no host in it, so the host's
 * turnaround between a reply and the next request is absorbed (core/ctrl/ctrl.c). */
static const char *const profile_common[] = {
	"controller.latency_absorb_host=true",
	NULL,
};

/* Seagate Barracuda 7200.14 (ST2000DM001) product manual: 7200 rpm; average read seek
 * 8.5 ms, track-to-track 1.0 ms; sustained transfer 210 MB/s at the outer diameter; NCQ
 * with 32 commands. The full-stroke seek is not given: 15 ms makes the average over random
 * pairs of LBAs (settle + (full - settle) x 8/15) come to 8.5 ms. The inner-zone rate is not
 * given either: half the outer one is typical of 3.5-inch drives (assumed). NCQ reorders
 * the queued commands: SPTF. */
static const char *const hdd_7200[] = {
	"controller.rpm=7200",
	"controller.seek_settle_us=1000",
	"controller.seek_full_us=15000",
	"controller.media_rate_outer=210000000",
	"controller.media_rate_inner=105000000",
	"controller.queue_depth=32",
	"controller.reorder=sptf",
	NULL,
};

/* Samsung 870 EVO 1TB data sheet: sequential read 560 MB/s, write 530 MB/s; random 4 KiB
 * QD32 98K read IOPS, 88K write IOPS; QD1 13K read IOPS, 36K write IOPS (mean 77 us and
 * 28 us, medians 69 us and 25 us). Tails: not in the data sheet, p99 = 3 x median assumed. */
static const char *const sata_ssd[] = {
	"controller.read_bandwidth=560000000",
	"controller.write_bandwidth=530000000",
	"controller.read_iops=98000",
	"controller.write_iops=88000",
	"controller.queue_depth=32",
	"controller.latency_dist=lognormal",
	"controller.latency_tail=p99",
	"controller.latency_us=69",
	"controller.latency_tail_us=207",
	"controller.write_latency_us=25",
	"controller.write_latency_tail_us=75",
	NULL,
};

/* Samsung 980 PRO 1TB data sheet: sequential read 7000 MB/s, write 5000 MB/s; random 4 KiB
 * QD32 x 16 threads 1000K read and write IOPS; QD1 22K read IOPS, 60K write IOPS (mean
 * 45 us and 17 us, medians 40 us and 15 us); Intelligent TurboWrite buffer 114 GB, writes
 * past it 2000 MB/s. Tails and the buffer's drain time are not in the data sheet: p99 =
 * 3 x median and a 60 s drain are assumed. */
static const char *const nvme_gen4[] = {
	"controller.read_bandwidth=7000000000",
	"controller.write_bandwidth=5000000000",
	"controller.read_iops=1000000",
	"controller.write_iops=1000000",
	"controller.queue_depth=128",
	"controller.latency_dist=lognormal",
	"controller.latency_tail=p99",
	"controller.latency_us=40",
	"controller.latency_tail_us=120",
	"controller.write_latency_us=15",
	"controller.write_latency_tail_us=45",
	"controller.write_cliff_bytes=114000000000",
	"controller.write_cliff_window_ms=60000",
	"controller.write_cliff_bandwidth=2000000000",
	NULL,
};

/* AWS, Amazon EBS User Guide, "General Purpose SSD volumes" and "I/O characteristics":
 * gp2 earns 3 IOPS per GiB, at least 100; bursts to 3000 IOPS from a bucket of 5.4 million
 * I/O credits that a new volume starts full; above 1000 GiB the baseline passes 3000 and
 * bursting no longer matters; 128 MiB/s up to 170 GiB (250 MiB/s from 334 GiB: raise
 * controller.bandwidth for a large volume); an I/O of up to 256 KiB counts as one. Latency:
 * AWS says only "single-digit millisecond"; 500 us is assumed. */
static const char *const ebs_gp2[] = {
	"controller.iops=3000",
	"controller.iops_size=256K",
	"controller.credit_capacity=5400000",
	"controller.credit_baseline_iops=100",
	"controller.credit_iops_per_gib=3",
	"controller.bandwidth=128M",
	"controller.latency_us=500",
	NULL,
};

/* AWS, Amazon EBS User Guide, "General Purpose SSD volumes": gp3 has a flat 3000 IOPS and
 * 125 MiB/s unless more is provisioned (up to 16000 IOPS and 1000 MiB/s: set
 * controller.iops and controller.bandwidth); an I/O of up to 256 KiB counts as one.
 * Latency: "single-digit millisecond"; 500 us is assumed. */
static const char *const ebs_gp3[] = {
	"controller.iops=3000",
	"controller.iops_size=256K",
	"controller.bandwidth=125M",
	"controller.latency_us=500",
	NULL,
};

/* AWS, Amazon EBS User Guide, "Provisioned IOPS SSD volumes": io2 delivers the IOPS
 * provisioned (100 to 64000, at most 500 per GiB; this profile provisions 16000: set
 * controller.iops to yours) and up to 1000 MiB/s; an I/O of up to 256 KiB counts as one.
 * Latency: "sub-millisecond" (io2 Block Express); 250 us is assumed. */
static const char *const ebs_io2[] = {
	"controller.iops=16000",
	"controller.iops_size=256K",
	"controller.bandwidth=1000M",
	"controller.latency_us=250",
	NULL,
};

/* SD Association, Physical Layer Specification, Application Performance Class 1 (A1):
 * at least 1500 random read IOPS and 500 random write IOPS of 4 KiB, and 10 MB/s sustained
 * sequential writes (Class 10 / V10); no command queue (one command at a time). Reads are
 * bounded by the UHS-I SDR104 bus, 104 MB/s. */
static const char *const sd_a1[] = {
	"controller.queue_depth=1",
	"controller.read_latency_us=666",
	"controller.write_latency_us=2000",
	"controller.read_bandwidth=104000000",
	"controller.write_bandwidth=10000000",
	NULL,
};

/* USB 2.0 specification: Hi-Speed signals at 480 Mbit/s, and the bulk-only mass-storage
 * protocol moves about 35 MB/s at most, one command at a time. The rest is typical of USB 2
 * sticks, not from a data sheet (assumed): 10 MB/s writes, 1 ms reads and 3 ms writes. */
static const char *const usb2_stick[] = {
	"controller.queue_depth=1",
	"controller.read_bandwidth=35000000",
	"controller.write_bandwidth=10000000",
	"controller.read_latency_us=1000",
	"controller.write_latency_us=3000",
	NULL,
};

static const struct conf_profile profiles[] = {
	{ "hdd-7200", "7200 rpm 3.5-inch SATA hard disk (seek model, NCQ 32)",
	  "Seagate Barracuda 7200.14 (ST2000DM001) product manual", NULL, hdd_7200 },
	{ "sata-ssd", "SATA SSD (Samsung 870 EVO 1TB class)", "Samsung 870 EVO data sheet",
	  "QD1 latencies of 25-69 us are below a FUSE round trip", sata_ssd },
	{ "nvme-gen4", "PCIe 4.0 NVMe SSD (Samsung 980 PRO 1TB class)", "Samsung 980 PRO data sheet",
	  "7000/5000 MB/s, 1M IOPS and 15-40 us latencies are beyond a FUSE disk", nvme_gen4 },
	{ "ebs-gp2", "Amazon EBS gp2 volume (burst credits, size-dependent baseline)",
	  "Amazon EBS User Guide: General Purpose SSD volumes, I/O characteristics", NULL, ebs_gp2 },
	{ "ebs-gp3", "Amazon EBS gp3 volume (3000 IOPS, 125 MiB/s)",
	  "Amazon EBS User Guide: General Purpose SSD volumes", NULL, ebs_gp3 },
	{ "ebs-io2", "Amazon EBS io2 volume provisioned at 16000 IOPS",
	  "Amazon EBS User Guide: Provisioned IOPS SSD volumes", NULL, ebs_io2 },
	{ "sd-a1", "SD card, Application Performance Class 1",
	  "SD Association Physical Layer Specification (A1, Class 10)", NULL, sd_a1 },
	{ "usb2-stick", "USB 2.0 flash drive",
	  "USB 2.0 specification; typical stick figures (assumed)", NULL, usb2_stick },
};

#define NPROFILES (sizeof(profiles) / sizeof(profiles[0]))

const struct conf_profile *conf_profile_find(const char *name)
{
	for (size_t i = 0; i < NPROFILES; i++)
		if (!strcmp(profiles[i].name, name))
			return &profiles[i];
	return NULL;
}

void conf_profile_names(char *buf, size_t len)
{
	size_t n = 0;

	if (!len)
		return;
	buf[0] = '\0';
	for (size_t i = 0; i < NPROFILES && n < len; i++) {
		int w = snprintf(buf + n, len - n, "%s%s", i ? ", " : "", profiles[i].name);

		if (w < 0)
			break;
		n += (size_t)w;
	}
}

/* --- the key: profile = "NAME" at the file's top level, or --profile NAME --------------- */

static int profile_preset(struct conf_load *ld, const char *name, const char *const *keys)
{
	for (; *keys; keys++) {
		int ret = conf_preset(ld, "profile", name, *keys);

		if (ret)
			return ret;
	}
	return 0;
}

/* Applied first (CONF_FIRST): the profile's keys go in as presets, which any key the user
 * sets overrides, wherever it stands. */
static int profile_parse(struct conf_load *ld, const struct conf_key *k, const char *text,
			 struct conf_why *why)
{
	char **slot = conf_value(ld, k), *copy;
	const struct conf_profile *p = NULL;
	char known[512];
	int ret;

	if (*text && !(p = conf_profile_find(text))) {
		conf_profile_names(known, sizeof(known));
		return conf_whyf(why, "unknown profile \"%s\" (known: %s)", text, known);
	}
	copy = strdup(p ? p->name : "");
	if (!copy)
		return -ENOMEM;
	free(*slot);
	*slot = copy;
	if (!p)
		return 0;
	ret = profile_preset(ld, p->name, profile_common);
	return ret ? ret : profile_preset(ld, p->name, p->keys);
}

static void profile_print(const struct pd_config *c, const struct conf_key *k, FILE *f)
{
	(void)k;
	fprintf(f, "\"%s\"", c->profile ? c->profile : "");
}

static void profile_release(struct pd_config *c, const struct conf_key *k)
{
	(void)k;
	free(c->profile);
	c->profile = NULL;
}

static const struct conf_custom profile_custom = {
	.parse = profile_parse,
	.print = profile_print,
	.release = profile_release,
	.expected = "a string",
};

static const struct conf_key profile_keys[] = {
	CONF_CUSTOM_KEY("profile", profile, profile_custom, CONF_FIRST,
			"device profile whose keys apply under yours (--list-profiles); \"\" = none"),
};

static void profile_defaults(struct pd_config *c)
{
	c->profile = strdup("");
}

const struct conf_table conf_profile_table = CONF_TABLE(profile_keys, profile_defaults, NULL);

static void print_keys(FILE *f, const char *const *keys)
{
	for (; *keys; keys++)
		fprintf(f, "  %s\n", *keys);
}

void conf_profile_list(void *FILE_stream)
{
	FILE *f = FILE_stream;

	fputs("every profile\n", f);
	print_keys(f, profile_common);
	fputc('\n', f);
	for (size_t i = 0; i < NPROFILES; i++) {
		const struct conf_profile *p = &profiles[i];

		fprintf(f, "%s\n  device: %s\n  source: %s\n", p->name, p->device, p->source);
		if (p->out_of_reach)
			fprintf(f, "  out of reach here: %s\n", p->out_of_reach);
		print_keys(f, p->keys);
		if (i + 1 < NPROFILES)
			fputc('\n', f);
	}
}
