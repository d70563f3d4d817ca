// SPDX-License-Identifier: MIT
/* crashtool: the writer and the verifier of plugdisk's crash-consistency harness.
 * "write" fills a disk file (or files in a directory) with self-describing sectors and logs what
 * fsync acknowledged; "verify" checks every sector after a crash against that log. */

/*
 * Notes on the design.
 *
 * Sectors.  Every 512-byte sector the writer produces begins with a 32-byte header
 * (struct sector_hdr): magic, CRC32C of the whole sector, run id, file id, the sector's own
 * byte offset and the generation of the write that produced it.  The rest is a pseudo-random
 * payload derived from those fields.  Each write gets a fresh generation from one counter, so a
 * sector read back names exactly one write, and a sector is always all of one generation or
 * fails its checksum.  An all-zero sector is the content of a never-written sector.
 *
 * The side log.  The writer appends fixed 32-byte records (struct log_rec) to a file that lives
 * outside the disk under test:
 *   HDR     run id, generation base, region size, mode;
 *   WRITE   logged before a write is issued: thread, file, generation, offset, length, flags;
 *   DONE    logged after the write returned;
 *   SYNC    logged after fsync/fdatasync returned: every write of that thread to that file with
 *           generation <= G is acknowledged;
 *   CREATE  (directory mode) logged before a file is created;
 *   FDUR    (directory mode) logged after the file and its directory were fsynced.
 * The log is fdatasynced before every data fsync and after every SYNC record, and with
 * --log-sync=every also after every WRITE record (then a machine crash cannot lose an intent
 * whose data reached the disk).  A torn last record is ignored.
 *
 * Ownership.  Thread t writes only its own stripe of the disk (or its own files), so the order
 * of writes to any sector is the order of their generations.
 *
 * The rule the verifier checks, for each sector s of each file:
 *   A(s) = the newest acknowledged generation that covers s (0 if none);
 *   B(s) = the generation found in s by the previous verification (--state), 0 = zeros;
 *   the sector must hold a generation g that was written to s with g >= A(s), or, if A(s) = 0,
 *   its old content B(s).
 * Anything else is a failure, classified as TORN (bad magic or checksum: garbage or a mix of
 * generations inside one sector), MISPLACED (a valid sector of another offset, file or run),
 * LOST (older than its acknowledged generation, or zeros where data was acknowledged) or
 * UNKNOWN (a generation never written to that sector).
 * --ack selects what counts as acknowledged: "fsync" (SYNC records only), "direct" (also every
 * completed O_DIRECT write, plugdisk's promise for a daemon crash), "all" (every completed write,
 * true for a plain file when only the writer process dies).
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define SECTOR		512u
#define SECTOR_MAGIC	0x52434450u	/* "PDCR" */
#define STATE_MAGIC	0x54534450u	/* "PDST" */
#define MAX_LEN		(256u * 1024u)
#define MAX_THREADS	64u
#define MAX_FILES	1024u
#define FILE_FMT	"crash-%04u"

/* Exit statuses, shared by both modes. */
enum {
	EXIT_OK = 0,
	EXIT_MISMATCH = 1,	/* verify found a bad sector */
	EXIT_USAGE = 2,		/* bad option, unreadable log or state */
	EXIT_IO = 3,		/* an I/O call failed (expected for the writer after a crash) */
};

struct sector_hdr {
	uint32_t magic;
	uint32_t crc;		/* CRC32C of the whole sector, computed with this field 0 */
	uint32_t run;
	uint32_t file;
	uint64_t offset;	/* byte offset of this sector in its file */
	uint64_t gen;
};

enum { LOG_HDR = 1, LOG_WRITE, LOG_DONE, LOG_SYNC, LOG_CREATE, LOG_FDUR };
enum { WF_DIRECT = 1 };
enum { MODE_DISK = 0, MODE_DIR = 1 };

struct log_rec {
	uint8_t type;
	uint8_t flags;
	uint16_t thread;
	uint32_t file;		/* HDR: mode */
	uint64_t gen;		/* HDR: generation base */
	uint64_t off;		/* HDR: run id */
	uint64_t len;		/* HDR: region size (disk) or maximum file size (dir) */
};

_Static_assert(sizeof(struct sector_hdr) == 32, "sector header is 32 bytes");
_Static_assert(sizeof(struct log_rec) == 32, "log record is 32 bytes");

/* ---- CRC32C (Castagnoli), slicing by 8 ---- */

static uint32_t crc_tab[8][256];

static void crc32c_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1)));
		crc_tab[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			crc_tab[t][i] = (crc_tab[t - 1][i] >> 8) ^ crc_tab[0][crc_tab[t - 1][i] & 0xff];
}

static uint32_t crc32c(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	crc = ~crc;
	while (len >= 8) {
		uint64_t v;
		memcpy(&v, p, 8);
		v ^= crc;
		crc = crc_tab[7][v & 0xff] ^ crc_tab[6][(v >> 8) & 0xff] ^
		      crc_tab[5][(v >> 16) & 0xff] ^ crc_tab[4][(v >> 24) & 0xff] ^
		      crc_tab[3][(v >> 32) & 0xff] ^ crc_tab[2][(v >> 40) & 0xff] ^
		      crc_tab[1][(v >> 48) & 0xff] ^ crc_tab[0][v >> 56];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = (crc >> 8) ^ crc_tab[0][(crc ^ *p++) & 0xff];
	return ~crc;
}

static uint32_t sector_crc(const uint8_t *sec)
{
	static const uint8_t zero4[4];
	uint32_t c = crc32c(0, sec, 4);
	c = crc32c(c, zero4, 4);
	return crc32c(c, sec + 8, SECTOR - 8);
}

/* ---- small helpers ---- */

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static uint64_t rnd_below(uint64_t *s, uint64_t n)
{
	return n ? splitmix64(s) % n : 0;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sector_fill(uint8_t *sec, uint32_t run, uint32_t file, uint64_t off, uint64_t gen)
{
	struct sector_hdr h = { SECTOR_MAGIC, 0, run, file, off, gen };
	uint64_t s = gen * 0x100000001B3ull ^ off ^ ((uint64_t)file << 48) ^ run;
	memcpy(sec, &h, sizeof(h));
	for (size_t i = sizeof(h); i < SECTOR; i += 8) {
		uint64_t v = splitmix64(&s);
		memcpy(sec + i, &v, 8);
	}
	h.crc = sector_crc(sec);
	memcpy(sec + 4, &h.crc, 4);
}

static bool is_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || end == s)
		return -1;
	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	case 't': case 'T': v <<= 40; end++; break;
	}
	if (*end)
		return -1;
	*out = v;
	return 0;
}

static int write_full(int fd, const void *buf, size_t len, off_t off)
{
	const uint8_t *p = buf;
	while (len) {
		ssize_t n = pwrite(fd, p, len, off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -ENOSPC;
		p += n;
		len -= n;
		off += n;
	}
	return 0;
}

/* Read up to @len bytes; returns bytes read (short only at end of file) or -errno. */
static ssize_t read_full(int fd, void *buf, size_t len, off_t off)
{
	uint8_t *p = buf;
	size_t done = 0;
	while (done < len) {
		ssize_t n = pread(fd, p + done, len - done, off + done);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		done += n;
	}
	return done;
}

/* ---- options ---- */

struct opts {
	const char *target;	/* disk mode: the file */
	const char *dir;	/* directory mode */
	const char *log;
	const char *state_in;
	const char *state_out;
	uint32_t run;
	uint64_t gen_base;
	uint64_t seed;
	uint64_t size;		/* disk: region size; dir: maximum file size */
	unsigned threads;
	unsigned files;		/* dir: maximum number of files */
	double seconds;		/* 0 = until an error */
	uint64_t ops;		/* per thread, 0 = unlimited */
	unsigned direct_pct;
	unsigned sync_pct;
	unsigned create_pct;
	unsigned seq_pct;
	bool log_sync_every;
	int ack;		/* 0 fsync, 1 direct, 2 all */
	unsigned max_report;
	bool quiet;
	uint64_t atomic;	/* verify: O_DIRECT writes are all-or-nothing in units of this */
};

static struct opts o = {
	.threads = 1, .files = 16, .direct_pct = 50, .sync_pct = 4, .create_pct = 3,
	.seq_pct = 30, .max_report = 20,
};

/* ---- writer ---- */

static int log_fd = -1;
static atomic_uint_fast64_t next_gen;
static atomic_bool stop_all;
static atomic_uint_fast64_t tot_writes, tot_bytes, tot_syncs, tot_acked_bytes;
static int dir_fd = -1;

static void log_append(const struct log_rec *r)
{
	/* O_APPEND makes each 32-byte record one atomic append, whatever the thread. */
	if (write(log_fd, r, sizeof(*r)) != (ssize_t)sizeof(*r)) {
		fprintf(stderr, "crashtool: writing the log: %s\n", strerror(errno));
		exit(EXIT_USAGE);
	}
}

static void log_sync(void)
{
	if (fdatasync(log_fd) < 0) {
		fprintf(stderr, "crashtool: fdatasync of the log: %s\n", strerror(errno));
		exit(EXIT_USAGE);
	}
}

struct wfile {
	int fd_buf;
	int fd_direct;		/* -1 when O_DIRECT is refused by the filesystem */
	uint64_t last_gen;	/* newest generation written by the owner thread */
	uint64_t acked_bytes;	/* bytes written since the last sync */
	uint64_t next_off;	/* for sequential runs */
	bool durable;
	bool exists;
};

struct wthread {
	pthread_t tid;
	unsigned idx;
	uint64_t rng;
	uint64_t lo, hi;	/* disk mode: the stripe */
	struct wfile *f;	/* disk: this thread's entry; dir: all files, only owned ones used */
	uint8_t *buf;
	int rc;
};

static void io_fail(struct wthread *t, const char *what, int err)
{
	if (!atomic_exchange(&stop_all, true) || !o.quiet)
		fprintf(stderr, "crashtool: thread %u: %s: %s\n", t->idx, what, strerror(err));
	t->rc = EXIT_IO;
}

static int open_pair(struct wfile *f, const char *path, int extra)
{
	f->fd_buf = open(path, O_RDWR | extra, 0644);
	if (f->fd_buf < 0)
		return -errno;
	f->fd_direct = open(path, O_RDWR | O_DIRECT);
	if (f->fd_direct < 0 && errno != EINVAL)
		return -errno;
	return 0;
}

static uint64_t pick_len(struct wthread *t)
{
	uint64_t r = rnd_below(&t->rng, 100), sectors;
	if (r < 50)
		sectors = 1 + rnd_below(&t->rng, 16);
	else if (r < 80)
		sectors = 1 + rnd_below(&t->rng, 128);
	else
		sectors = 1 + rnd_below(&t->rng, MAX_LEN / SECTOR);
	return sectors * SECTOR;
}

static int do_create(struct wthread *t, unsigned file)
{
	char name[32];
	struct log_rec r = { .type = LOG_CREATE, .thread = t->idx, .file = file };
	snprintf(name, sizeof(name), FILE_FMT, file);
	log_append(&r);
	if (o.log_sync_every)
		log_sync();
	int fd = openat(dir_fd, name, O_RDWR | O_CREAT | O_EXCL, 0644);
	if (fd < 0) {
		io_fail(t, "create", errno);
		return -1;
	}
	t->f[file].fd_buf = fd;
	t->f[file].fd_direct = openat(dir_fd, name, O_RDWR | O_DIRECT);
	if (t->f[file].fd_direct < 0 && errno != EINVAL) {
		io_fail(t, "open O_DIRECT", errno);
		return -1;
	}
	t->f[file].exists = true;
	return 0;
}

static int do_write(struct wthread *t, unsigned file)
{
	struct wfile *f = &t->f[file];
	uint64_t lo = o.dir ? 0 : t->lo, hi = o.dir ? o.size : t->hi;
	uint64_t len = pick_len(t), off;

	if (f->next_off >= lo && f->next_off < hi && rnd_below(&t->rng, 100) < o.seq_pct)
		off = f->next_off;
	else
		off = lo + rnd_below(&t->rng, (hi - lo) / SECTOR) * SECTOR;
	if (off + len > hi)
		len = hi - off;

	bool direct = f->fd_direct >= 0 && rnd_below(&t->rng, 100) < o.direct_pct;
	uint64_t gen = atomic_fetch_add(&next_gen, 1);
	for (uint64_t i = 0; i < len; i += SECTOR)
		sector_fill(t->buf + i, o.run, file, off + i, gen);

	struct log_rec r = { LOG_WRITE, direct ? WF_DIRECT : 0, t->idx, file, gen, off, len };
	log_append(&r);
	if (o.log_sync_every)
		log_sync();
	int err = write_full(direct ? f->fd_direct : f->fd_buf, t->buf, len, off);
	if (err) {
		io_fail(t, direct ? "O_DIRECT write" : "write", -err);
		return -1;
	}
	r.type = LOG_DONE;
	log_append(&r);
	f->last_gen = gen;
	f->acked_bytes += len;
	f->next_off = off + len;
	atomic_fetch_add(&tot_writes, 1);
	atomic_fetch_add(&tot_bytes, len);
	return 0;
}

static int do_sync(struct wthread *t, unsigned file)
{
	struct wfile *f = &t->f[file];
	bool datasync = rnd_below(&t->rng, 2);
	uint64_t g = f->last_gen;

	log_sync();	/* every intent before the data sync is durable first */
	if ((datasync ? fdatasync(f->fd_buf) : fsync(f->fd_buf)) < 0) {
		io_fail(t, datasync ? "fdatasync" : "fsync", errno);
		return -1;
	}
	if (o.dir && !f->durable) {
		if (fsync(dir_fd) < 0) {
			io_fail(t, "fsync of the directory", errno);
			return -1;
		}
		struct log_rec d = { .type = LOG_FDUR, .thread = t->idx, .file = file };
		log_append(&d);
		f->durable = true;
	}
	if (g) {
		struct log_rec r = { .type = LOG_SYNC, .thread = t->idx, .file = file, .gen = g };
		log_append(&r);
	}
	log_sync();
	atomic_fetch_add(&tot_syncs, 1);
	atomic_fetch_add(&tot_acked_bytes, f->acked_bytes);
	f->acked_bytes = 0;
	return 0;
}

static void *writer_thread(void *arg)
{
	struct wthread *t = arg;
	double end = o.seconds > 0 ? now_s() + o.seconds : 0;
	unsigned nown = 0, owned[MAX_FILES];

	if (o.dir) {
		for (unsigned i = t->idx; i < o.files; i += o.threads)
			owned[nown++] = i;
		if (nown == 0 || do_create(t, owned[0]) < 0)
			return NULL;
	}
	for (uint64_t n = 0; !o.ops || n < o.ops; n++) {
		if (atomic_load(&stop_all) || (end && now_s() >= end))
			break;
		unsigned file = 0;
		if (o.dir) {
			unsigned nexist = 0;
			while (nexist < nown && t->f[owned[nexist]].exists)
				nexist++;
			if (nexist < nown && rnd_below(&t->rng, 100) < o.create_pct) {
				if (do_create(t, owned[nexist]) < 0)
					break;
				continue;
			}
			file = owned[rnd_below(&t->rng, nexist)];
		}
		int rc = rnd_below(&t->rng, 100) < o.sync_pct ? do_sync(t, file)
							       : do_write(t, file);
		if (rc < 0)
			break;
	}
	return NULL;
}

/* Everything the writer allocates, released by free_all() so that sanitizer builds stay quiet. */
static struct wfile *files;
static unsigned nfiles;
static struct wthread *th;

static int cmd_write(void)
{
	int rc = EXIT_OK;

	if (!o.log || (!o.target == !o.dir)) {
		fprintf(stderr, "crashtool write: need --log and one of --target or --dir\n");
		return EXIT_USAGE;
	}
	if (o.threads < 1 || o.threads > MAX_THREADS || o.files < 1 || o.files > MAX_FILES) {
		fprintf(stderr, "crashtool write: --threads 1..%u, --files 1..%u\n", MAX_THREADS,
			MAX_FILES);
		return EXIT_USAGE;
	}
	log_fd = open(o.log, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
	if (log_fd < 0) {
		fprintf(stderr, "crashtool: %s: %s\n", o.log, strerror(errno));
		return EXIT_USAGE;
	}
	if (!o.seed)
		o.seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	if (!o.run)
		o.run = (uint32_t)(o.seed ^ (o.seed >> 32)) | 1;

	/* Disk mode: one entry per thread (own descriptors, own sequential cursor), all file 0. */
	nfiles = o.dir ? o.files : o.threads;
	files = calloc(nfiles, sizeof(*files));
	th = calloc(o.threads, sizeof(*th));
	if (!files || !th)
		return EXIT_USAGE;
	for (unsigned i = 0; i < nfiles; i++)
		files[i].fd_buf = files[i].fd_direct = -1;

	if (o.dir) {
		if (!o.size)
			o.size = 4u << 20;
		dir_fd = open(o.dir, O_RDONLY | O_DIRECTORY);
		if (dir_fd < 0) {
			fprintf(stderr, "crashtool: %s: %s\n", o.dir, strerror(errno));
			return EXIT_USAGE;
		}
	} else {
		for (unsigned i = 0; i < nfiles; i++) {
			int err = open_pair(&files[i], o.target, 0);
			struct stat st;
			if (err || fstat(files[i].fd_buf, &st) < 0) {
				fprintf(stderr, "crashtool: %s: %s\n", o.target,
					strerror(err ? -err : errno));
				return EXIT_IO;
			}
			if (!o.size)
				o.size = st.st_size;
			files[i].exists = true;
		}
	}
	o.size -= o.size % SECTOR;
	if (o.size < (uint64_t)SECTOR * o.threads) {
		fprintf(stderr, "crashtool write: region too small\n");
		return EXIT_USAGE;
	}

	struct log_rec h = { .type = LOG_HDR, .file = o.dir ? MODE_DIR : MODE_DISK,
			     .gen = o.gen_base, .off = o.run, .len = o.size };
	log_append(&h);
	log_sync();
	atomic_store(&next_gen, o.gen_base + 1);

	uint64_t stripe = o.size / o.threads / SECTOR * SECTOR;
	double t0 = now_s();
	for (unsigned i = 0; i < o.threads; i++) {
		struct wthread *t = &th[i];
		t->idx = i;
		t->rng = o.seed + 0x1234567ull * (i + 1);
		t->lo = i * stripe;
		t->hi = i + 1 == o.threads ? o.size : (i + 1) * stripe;
		t->f = o.dir ? files : &files[i];
		if (posix_memalign((void **)&t->buf, 4096, MAX_LEN))
			return EXIT_USAGE;
		if (pthread_create(&t->tid, NULL, writer_thread, t)) {
			fprintf(stderr, "crashtool: pthread_create failed\n");
			return EXIT_USAGE;
		}
	}
	for (unsigned i = 0; i < o.threads; i++) {
		pthread_join(th[i].tid, NULL);
		if (th[i].rc)
			rc = th[i].rc;
	}
	fprintf(stderr,
		"crashtool write: %s after %.1f s: writes=%" PRIuFAST64 " bytes=%" PRIuFAST64
		" syncs=%" PRIuFAST64 " synced_bytes=%" PRIuFAST64 " gens=%" PRIu64 "..%" PRIuFAST64
		"\n", rc ? "stopped by an I/O error" : "done", now_s() - t0,
		atomic_load(&tot_writes), atomic_load(&tot_bytes), atomic_load(&tot_syncs),
		atomic_load(&tot_acked_bytes), o.gen_base + 1, atomic_load(&next_gen) - 1);
	return rc;
}

/* ---- verifier ---- */

struct wrec {
	uint64_t off, len;
	uint32_t file;
	uint16_t thread;
	uint8_t flags;
	bool present, done, acked;
};

struct vfile {
	bool created, durable;
	uint64_t max_end;	/* end of the furthest write intent */
	uint64_t acked_end;	/* end of the furthest acknowledged write */
	uint64_t *ack;		/* per sector: newest acknowledged generation, 0 = none */
};

static struct {
	uint32_t run;
	int mode;
	uint64_t gen_base, size, max_gen;
	struct wrec *w;		/* indexed by gen - gen_base - 1 */
	uint64_t nw;
	struct vfile *f;
	uint64_t *base;		/* disk mode: generation found last time, per sector */
	uint64_t nbase;
	/* results */
	uint64_t sectors, bytes, at_ack, newer, old, zero, unacked_new, bad, files_seen;
	uint64_t nbad[6];
} v;

enum { BAD_TORN, BAD_MISPLACED, BAD_LOST, BAD_UNKNOWN, BAD_FILE, BAD_UNIT };
static const char *const bad_name[] = { "TORN", "MISPLACED", "LOST", "UNKNOWN", "FILE",
					"TORN_UNIT" };

static struct wrec *wrec_get(uint64_t gen)
{
	if (gen <= v.gen_base || gen - v.gen_base > v.nw)
		return NULL;
	struct wrec *w = &v.w[gen - v.gen_base - 1];
	return w->present ? w : NULL;
}

/* per (thread, file): the newest SYNC generation; freed by free_all() */
static uint64_t *sync_gen;

static int load_log(const char *path)
{
	FILE *fp = fopen(path, "rb");
	struct log_rec r;

	if (!fp) {
		fprintf(stderr, "crashtool: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (fread(&r, sizeof(r), 1, fp) != 1 || r.type != LOG_HDR) {
		fprintf(stderr, "crashtool: %s: no header record\n", path);
		fclose(fp);
		return -1;
	}
	v.mode = r.file;
	v.gen_base = r.gen;
	v.run = (uint32_t)r.off;
	v.size = r.len;
	unsigned nf = v.mode == MODE_DIR ? MAX_FILES : 1;
	v.f = calloc(nf, sizeof(*v.f));
	/* per (thread, file): newest SYNC generation */
	sync_gen = calloc((size_t)MAX_THREADS * nf, sizeof(uint64_t));
	uint64_t cap = 1024;
	v.w = calloc(cap, sizeof(*v.w));
	if (!v.f || !sync_gen || !v.w) {
		fclose(fp);
		return -1;
	}

	while (fread(&r, sizeof(r), 1, fp) == 1) {
		if (r.file >= nf || r.thread >= MAX_THREADS) {
			fprintf(stderr, "crashtool: %s: corrupt record\n", path);
			fclose(fp);
			return -1;
		}
		struct vfile *f = &v.f[r.file];
		switch (r.type) {
		case LOG_WRITE: {
			if (r.gen <= v.gen_base || r.len == 0 || r.off % SECTOR || r.len % SECTOR) {
				fprintf(stderr, "crashtool: %s: corrupt write record\n", path);
				fclose(fp);
				return -1;
			}
			uint64_t i = r.gen - v.gen_base - 1;
			while (i >= cap) {
				v.w = realloc(v.w, 2 * cap * sizeof(*v.w));
				memset(v.w + cap, 0, cap * sizeof(*v.w));
				cap *= 2;
			}
			v.w[i] = (struct wrec){ r.off, r.len, r.file, r.thread, r.flags, true, false,
						false };
			if (i + 1 > v.nw)
				v.nw = i + 1;
			if (r.gen > v.max_gen)
				v.max_gen = r.gen;
			if (r.off + r.len > f->max_end)
				f->max_end = r.off + r.len;
			if (v.mode == MODE_DISK)
				f->created = true;
			break;
		}
		case LOG_DONE: {
			struct wrec *w = wrec_get(r.gen);
			if (w)
				w->done = true;
			break;
		}
		case LOG_SYNC: {
			uint64_t *s = &sync_gen[(size_t)r.thread * nf + r.file];
			if (r.gen > *s)
				*s = r.gen;
			break;
		}
		case LOG_CREATE:
			f->created = true;
			break;
		case LOG_FDUR:
			f->durable = true;
			break;
		default:
			break;
		}
	}
	fclose(fp);
	if (v.mode == MODE_DISK)
		v.f[0].durable = true;

	/* Acknowledged writes, then per sector the newest acknowledged generation. */
	for (uint64_t i = 0; i < v.nw; i++) {
		struct wrec *w = &v.w[i];
		if (!w->present)
			continue;
		uint64_t gen = v.gen_base + 1 + i;
		w->acked = gen <= sync_gen[(size_t)w->thread * nf + w->file] ||
			   (w->done && o.ack == 2) ||
			   (w->done && o.ack == 1 && (w->flags & WF_DIRECT));
		if (!w->acked)
			continue;
		struct vfile *f = &v.f[w->file];
		uint64_t need = (v.mode == MODE_DISK ? v.size : f->max_end) / SECTOR;
		if (!f->ack && !(f->ack = calloc(need ? need : 1, sizeof(uint64_t))))
			return -1;
		for (uint64_t s = w->off / SECTOR; s < (w->off + w->len) / SECTOR && s < need; s++)
			if (gen > f->ack[s])
				f->ack[s] = gen;
		if (w->off + w->len > f->acked_end)
			f->acked_end = w->off + w->len;
	}
	return 0;
}

static int load_state(const char *path)
{
	FILE *fp = fopen(path, "rb");
	uint32_t hdr[2];
	uint64_t n;
	if (!fp) {
		if (errno == ENOENT)
			return 0;	/* first cycle: every sector starts as zeros */
		fprintf(stderr, "crashtool: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (fread(hdr, sizeof(hdr), 1, fp) != 1 || fread(&n, sizeof(n), 1, fp) != 1 ||
	    hdr[0] != STATE_MAGIC || hdr[1] != v.run || n != v.size / SECTOR) {
		fprintf(stderr, "crashtool: %s: not a state file of run %u, %" PRIu64 " sectors\n",
			path, v.run, v.size / SECTOR);
		fclose(fp);
		return -1;
	}
	v.base = malloc(n * sizeof(uint64_t));
	if (!v.base || fread(v.base, sizeof(uint64_t), n, fp) != n) {
		fprintf(stderr, "crashtool: %s: short state file\n", path);
		fclose(fp);
		return -1;
	}
	v.nbase = n;
	fclose(fp);
	return 0;
}

static int save_state(const char *path, const uint64_t *found, uint64_t n)
{
	char tmp[4096];
	uint32_t hdr[2] = { STATE_MAGIC, v.run };
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	FILE *fp = fopen(tmp, "wb");
	if (!fp || fwrite(hdr, sizeof(hdr), 1, fp) != 1 || fwrite(&n, sizeof(n), 1, fp) != 1 ||
	    fwrite(found, sizeof(uint64_t), n, fp) != n || fflush(fp) || fsync(fileno(fp)) ||
	    fclose(fp) || rename(tmp, path)) {
		fprintf(stderr, "crashtool: writing %s: %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

static void describe_gen(const char *what, uint64_t gen)
{
	struct wrec *w = wrec_get(gen);
	if (!gen)
		fprintf(stderr, "      %s: none\n", what);
	else if (!w)
		fprintf(stderr, "      %s: gen %" PRIu64 " (from an earlier cycle)\n", what, gen);
	else
		fprintf(stderr,
			"      %s: gen %" PRIu64 " = write [%" PRIu64 ", +%" PRIu64 ") file %u thread %u"
			" %s%s%s\n", what, gen, w->off, w->len, w->file, w->thread,
			w->flags & WF_DIRECT ? "O_DIRECT" : "buffered",
			w->done ? ", completed" : ", not completed", w->acked ? ", acknowledged" : "");
}

static void report_bad(int kind, unsigned file, uint64_t off, const uint8_t *sec, uint64_t found,
		       uint64_t acked, uint64_t base, const char *why)
{
	v.bad++;
	v.nbad[kind]++;
	if (v.bad > o.max_report)
		return;
	fprintf(stderr, "BAD %s: file %u sector at byte %" PRIu64 ": %s\n", bad_name[kind], file,
		off, why);
	if (sec) {
		const struct sector_hdr *h = (const void *)sec;
		fprintf(stderr,
			"      header: magic %08x crc %08x (computed %08x) run %u file %u offset %" PRIu64
			" gen %" PRIu64 "\n", h->magic, h->crc, sector_crc(sec), h->run, h->file,
			h->offset, h->gen);
	}
	if (found)
		describe_gen("found", found);
	describe_gen("acknowledged", acked);
	if (v.mode == MODE_DISK)
		describe_gen("old content", base);
}

/* Check one sector; returns the generation it holds (0 = zeros, UINT64_MAX = bad). */
static uint64_t check_sector(unsigned file, uint64_t off, const uint8_t *sec, bool present)
{
	struct vfile *f = &v.f[file];
	uint64_t s = off / SECTOR;
	uint64_t acked = f->ack && s < (v.mode == MODE_DISK ? v.size : f->max_end) / SECTOR
				 ? f->ack[s] : 0;
	uint64_t base = v.base && s < v.nbase ? v.base[s] : 0;
	const struct sector_hdr *h = (const void *)sec;
	char why[160];

	v.sectors++;
	if (!present || is_zero(sec, SECTOR)) {
		if (acked) {
			report_bad(BAD_LOST, file, off, NULL, 0, acked, base,
				   present ? "zeros where data was acknowledged"
					   : "beyond end of file, data was acknowledged");
			return UINT64_MAX;
		}
		if (base) {
			report_bad(BAD_LOST, file, off, NULL, 0, acked, base,
				   "zeros where the old content was data");
			return UINT64_MAX;
		}
		v.zero++;
		return 0;
	}
	if (h->magic != SECTOR_MAGIC || h->crc != sector_crc(sec)) {
		report_bad(BAD_TORN, file, off, sec, 0, acked, base,
			   h->magic != SECTOR_MAGIC ? "bad magic" : "checksum mismatch");
		return UINT64_MAX;
	}
	if (h->run != v.run || h->file != file || h->offset != off) {
		snprintf(why, sizeof(why),
			 "valid sector of run %u file %u offset %" PRIu64 " (expected run %u)", h->run,
			 h->file, h->offset, v.run);
		report_bad(BAD_MISPLACED, file, off, sec, h->gen, acked, base, why);
		return UINT64_MAX;
	}
	uint64_t g = h->gen;
	if (!acked && g == base) {
		v.old++;
		return g;
	}
	if (acked && g == base) {
		report_bad(BAD_LOST, file, off, sec, g, acked, base,
			   "the old content where data was acknowledged");
		return UINT64_MAX;
	}
	struct wrec *w = wrec_get(g);
	if (!w || w->file != file || off < w->off || off >= w->off + w->len) {
		report_bad(BAD_UNKNOWN, file, off, sec, g, acked, base,
			   "generation never written to this sector");
		return UINT64_MAX;
	}
	if (g < acked) {
		report_bad(BAD_LOST, file, off, sec, g, acked, base,
			   "older than the acknowledged generation");
		return UINT64_MAX;
	}
	if (g == acked)
		v.at_ack++;
	else if (acked)
		v.newer++;
	else
		v.unacked_new++;
	return g;
}

static uint8_t *vbuf;	/* verify_fd()'s read buffer */
static uint64_t *found;	/* disk mode: generation found per sector */

static int verify_fd(int fd, unsigned file, uint64_t len, uint64_t *found_out)
{
	uint8_t *buf;
	const size_t chunk = 1u << 20;
	if (!vbuf && posix_memalign((void **)&vbuf, 4096, chunk))
		return -ENOMEM;
	buf = vbuf;
	for (uint64_t off = 0; off < len; off += chunk) {
		size_t want = len - off < chunk ? len - off : chunk;
		ssize_t n = read_full(fd, buf, want, off);
		if (n < 0)
			return (int)n;
		for (size_t i = 0; i < want; i += SECTOR) {
			uint64_t g = check_sector(file, off + i, buf + i, i < (size_t)n);
			if (found_out)
				found_out[(off + i) / SECTOR] = g;
		}
		v.bytes += n;
	}
	return 0;
}

/* --atomic N (disk mode): a device that writes N-byte units all or nothing leaves no
 * O_DIRECT write (one request to the device) half present inside a unit. For each sector that
 * holds generation g of such a write, every other sector of g's range in the same aligned unit
 * must hold g or a later generation (a later write of the same thread over it). */
static void check_units(void)
{
	uint64_t per = o.atomic / SECTOR, nsec = v.size / SECTOR;

	for (uint64_t s = 0; s < nsec; s++) {
		uint64_t g = found[s], lo, hi;
		struct wrec *w;

		if (!g || g == UINT64_MAX || !(w = wrec_get(g)) || !(w->flags & WF_DIRECT))
			continue;
		lo = s / per * per;
		hi = lo + per;
		if (lo < w->off / SECTOR)
			lo = w->off / SECTOR;
		if (hi > (w->off + w->len) / SECTOR)
			hi = (w->off + w->len) / SECTOR;
		for (uint64_t t = lo; t < hi; t++) {
			char why[160];

			if (found[t] == UINT64_MAX || found[t] >= g)
				continue;
			snprintf(why, sizeof(why),
				 "holds generation %" PRIu64 " while sector %" PRIu64
				 " of the same %" PRIu64 "-byte unit holds the newer %" PRIu64,
				 found[t], s * SECTOR, o.atomic, g);
			report_bad(BAD_UNIT, 0, t * SECTOR, NULL, found[t], 0, 0, why);
			found[t] = UINT64_MAX; /* report each sector once */
		}
	}
}

static int cmd_verify(void)
{
	if (!o.log || (!o.target == !o.dir)) {
		fprintf(stderr, "crashtool verify: need --log and one of --target or --dir\n");
		return EXIT_USAGE;
	}
	if (load_log(o.log) < 0)
		return EXIT_USAGE;
	if ((v.mode == MODE_DIR) != !!o.dir) {
		fprintf(stderr, "crashtool verify: the log was written in %s mode\n",
			v.mode == MODE_DIR ? "--dir" : "--target");
		return EXIT_USAGE;
	}
	if (v.mode == MODE_DISK) {
		if (o.state_in && load_state(o.state_in) < 0)
			return EXIT_USAGE;
		int fd = open(o.target, O_RDONLY);
		if (fd < 0) {
			fprintf(stderr, "crashtool: %s: %s\n", o.target, strerror(errno));
			return EXIT_IO;
		}
		found = calloc(v.size / SECTOR, sizeof(uint64_t));
		int err = found ? verify_fd(fd, 0, v.size, found) : -ENOMEM;
		close(fd);
		if (err) {
			fprintf(stderr, "crashtool: reading %s: %s\n", o.target, strerror(-err));
			return EXIT_IO;
		}
		if (o.atomic)
			check_units();
	} else {
		int dfd = open(o.dir, O_RDONLY | O_DIRECTORY);
		DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
		struct dirent *de;
		bool seen[MAX_FILES] = { false };
		if (!d) {
			fprintf(stderr, "crashtool: %s: %s\n", o.dir, strerror(errno));
			return EXIT_IO;
		}
		while ((de = readdir(d))) {
			unsigned id;
			char tail;
			if (sscanf(de->d_name, "crash-%u%c", &id, &tail) != 1)
				continue;
			if (id >= MAX_FILES || !v.f[id].created) {
				report_bad(BAD_FILE, id, 0, NULL, 0, 0, 0, "file never created");
				continue;
			}
			seen[id] = true;
		}
		for (unsigned id = 0; id < MAX_FILES; id++) {
			struct vfile *f = &v.f[id];
			char name[32];
			struct stat st;
			if (!f->created)
				continue;
			if (!seen[id]) {
				if (f->durable)
					report_bad(BAD_FILE, id, 0, NULL, 0, 0, 0,
						   "file acknowledged by fsync is missing");
				continue;
			}
			snprintf(name, sizeof(name), FILE_FMT, id);
			int fd = openat(dfd, name, O_RDONLY);
			if (fd < 0 || fstat(fd, &st) < 0) {
				fprintf(stderr, "crashtool: %s: %s\n", name, strerror(errno));
				return EXIT_IO;
			}
			v.files_seen++;
			if ((uint64_t)st.st_size > f->max_end) {
				char why[96];
				snprintf(why, sizeof(why), "size %jd beyond every write (%" PRIu64 ")",
					 (intmax_t)st.st_size, f->max_end);
				report_bad(BAD_FILE, id, 0, NULL, 0, 0, 0, why);
			}
			uint64_t len = (uint64_t)st.st_size > f->acked_end ? (uint64_t)st.st_size
									     : f->acked_end;
			len = (len + SECTOR - 1) / SECTOR * SECTOR;
			int err = verify_fd(fd, id, len, NULL);
			close(fd);
			if (err) {
				fprintf(stderr, "crashtool: reading %s: %s\n", name, strerror(-err));
				return EXIT_IO;
			}
		}
		closedir(d);
	}

	uint64_t acked_writes = 0, nwrites = 0;
	for (uint64_t i = 0; i < v.nw; i++)
		if (v.w[i].present) {
			nwrites++;
			acked_writes += v.w[i].acked;
		}
	printf("crashtool verify: %s bytes=%" PRIu64 " sectors=%" PRIu64 " writes=%" PRIu64
	       " acked_writes=%" PRIu64 " at_ack=%" PRIu64 " newer_than_ack=%" PRIu64
	       " unacked_new=%" PRIu64 " old=%" PRIu64 " zero=%" PRIu64 " files=%" PRIu64
	       " bad=%" PRIu64 " (torn=%" PRIu64 " misplaced=%" PRIu64 " lost=%" PRIu64
	       " unknown=%" PRIu64 " file=%" PRIu64 " torn_unit=%" PRIu64 ")\n",
	       v.bad ? "FAILED" : "OK", v.bytes, v.sectors, nwrites, acked_writes, v.at_ack,
	       v.newer, v.unacked_new, v.old, v.zero, v.files_seen, v.bad, v.nbad[BAD_TORN],
	       v.nbad[BAD_MISPLACED], v.nbad[BAD_LOST], v.nbad[BAD_UNKNOWN], v.nbad[BAD_FILE],
	       v.nbad[BAD_UNIT]);
	if (v.bad)
		return EXIT_MISMATCH;
	if (found && o.state_out && save_state(o.state_out, found, v.size / SECTOR) < 0)
		return EXIT_USAGE;
	return EXIT_OK;
}

/* "acked": print the acknowledged writes of a log, one "file offset length gen" per line. */
static int cmd_acked(void)
{
	if (!o.log || load_log(o.log) < 0)
		return EXIT_USAGE;
	for (uint64_t i = 0; i < v.nw; i++)
		if (v.w[i].present && v.w[i].acked)
			printf("%u %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", v.w[i].file, v.w[i].off,
			       v.w[i].len, v.gen_base + 1 + i);
	return EXIT_OK;
}

static void free_all(void)
{
	for (unsigned i = 0; files && i < nfiles; i++) {
		if (files[i].fd_buf >= 0)
			close(files[i].fd_buf);
		if (files[i].fd_direct >= 0)
			close(files[i].fd_direct);
	}
	for (unsigned i = 0; th && i < o.threads; i++)
		free(th[i].buf);
	free(files);
	free(th);
	if (log_fd >= 0)
		close(log_fd);
	if (dir_fd >= 0)
		close(dir_fd);
	for (unsigned i = 0; v.f && i < (v.mode == MODE_DIR ? MAX_FILES : 1); i++)
		free(v.f[i].ack);
	free(v.f);
	free(v.w);
	free(v.base);
	free(vbuf);
	free(found);
	free(sync_gen);
}

static void usage(FILE *fp)
{
	fprintf(fp,
		"usage: crashtool write  (--target FILE | --dir DIR) --log LOG [options]\n"
		"       crashtool verify (--target FILE | --dir DIR) --log LOG [--state IN]\n"
		"                        [--state-out OUT] [--ack fsync|direct|all]\n"
		"       crashtool acked --log LOG [--ack ...]\n"
		"write options:\n"
		"  --size N         region (disk) or maximum file size (dir; default 4M)\n"
		"  --threads N      writer threads, each with its own stripe or files (1)\n"
		"  --files N        directory mode: files in all (16)\n"
		"  --seconds S      stop after S seconds (default: run until an I/O error)\n"
		"  --ops N          stop after N operations per thread\n"
		"  --direct-pct P   percentage of writes through O_DIRECT (50)\n"
		"  --sync-pct P     percentage of operations that are fsync/fdatasync (4)\n"
		"  --seq-pct P      percentage of writes continuing the previous one (30)\n"
		"  --create-pct P   directory mode: percentage of operations creating a file (3)\n"
		"  --gen-base N     generations start at N+1 (0); must grow from cycle to cycle\n"
		"  --run ID         run id stored in every sector (random)\n"
		"  --seed N         random seed\n"
		"  --log-sync=every fdatasync the log after every record, not only around fsync\n"
		"verify options:\n"
		"  --state IN       what the previous verification found (absent file = zeros)\n"
		"  --state-out OUT  write what this verification found\n"
		"  --ack MODE       fsync (default), direct (also completed O_DIRECT writes), all\n"
		"  --max-report N   print at most N bad sectors (20)\n"
		"  --atomic N       disk mode: an O_DIRECT write is all or nothing inside each\n"
		"                   N-byte aligned unit (a power-cut disk's atomic write unit)\n"
		"exit: 0 ok, 1 verification failed, 2 usage or bad log, 3 I/O error\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "target", required_argument, 0, 't' }, { "dir", required_argument, 0, 'd' },
		{ "log", required_argument, 0, 'l' }, { "state", required_argument, 0, 'S' },
		{ "state-out", required_argument, 0, 'O' }, { "run", required_argument, 0, 'r' },
		{ "gen-base", required_argument, 0, 'g' }, { "seed", required_argument, 0, 'x' },
		{ "size", required_argument, 0, 's' }, { "threads", required_argument, 0, 'j' },
		{ "files", required_argument, 0, 'F' }, { "seconds", required_argument, 0, 'T' },
		{ "ops", required_argument, 0, 'n' }, { "direct-pct", required_argument, 0, 'D' },
		{ "sync-pct", required_argument, 0, 'Y' }, { "create-pct", required_argument, 0, 'C' },
		{ "seq-pct", required_argument, 0, 'Q' }, { "log-sync", required_argument, 0, 'L' },
		{ "ack", required_argument, 0, 'a' }, { "max-report", required_argument, 0, 'm' },
		{ "quiet", no_argument, 0, 'q' }, { "atomic", required_argument, 0, 'A' }, { "help", no_argument, 0, 'h' }, { 0, 0, 0, 0 },
	};
	int c;

	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? EXIT_USAGE : EXIT_OK;
	}
	const char *cmd = argv[1];
	optind = 2;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 't': o.target = optarg; break;
		case 'd': o.dir = optarg; break;
		case 'l': o.log = optarg; break;
		case 'S': o.state_in = optarg; break;
		case 'O': o.state_out = optarg; break;
		case 'r': o.run = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'g': o.gen_base = strtoull(optarg, NULL, 0); break;
		case 'x': o.seed = strtoull(optarg, NULL, 0); break;
		case 's':
			if (parse_size(optarg, &o.size) < 0) {
				fprintf(stderr, "crashtool: bad size '%s'\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'j': o.threads = atoi(optarg); break;
		case 'F': o.files = atoi(optarg); break;
		case 'T': o.seconds = atof(optarg); break;
		case 'n': o.ops = strtoull(optarg, NULL, 0); break;
		case 'D': o.direct_pct = atoi(optarg); break;
		case 'Y': o.sync_pct = atoi(optarg); break;
		case 'C': o.create_pct = atoi(optarg); break;
		case 'Q': o.seq_pct = atoi(optarg); break;
		case 'L': o.log_sync_every = !strcmp(optarg, "every"); break;
		case 'a':
			if (!strcmp(optarg, "fsync"))
				o.ack = 0;
			else if (!strcmp(optarg, "direct"))
				o.ack = 1;
			else if (!strcmp(optarg, "all"))
				o.ack = 2;
			else {
				fprintf(stderr, "crashtool: --ack fsync|direct|all\n");
				return EXIT_USAGE;
			}
			break;
		case 'm': o.max_report = atoi(optarg); break;
		case 'q': o.quiet = true; break;
		case 'A':
			if (parse_size(optarg, &o.atomic) < 0 || o.atomic < SECTOR ||
			    o.atomic % SECTOR) {
				fprintf(stderr, "crashtool: bad --atomic '%s'\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'h': usage(stdout); return EXIT_OK;
		default: usage(stderr); return EXIT_USAGE;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	crc32c_init();
	signal(SIGPIPE, SIG_IGN);
	int rc = -1;
	if (!strcmp(cmd, "write"))
		rc = cmd_write();
	else if (!strcmp(cmd, "verify"))
		rc = cmd_verify();
	else if (!strcmp(cmd, "acked"))
		rc = cmd_acked();
	if (rc >= 0) {
		free_all();
		return rc;
	}
	fprintf(stderr, "crashtool: unknown command '%s'\n", cmd);
	usage(stderr);
	return EXIT_USAGE;
}
