/* SPDX-License-Identifier: MIT */
/* The minimal FUSE file disk that make bench uses as the floor of FUSE overhead: one file,
 * `disk`, whose reads and writes are pread/pwrite on an image. High-level libfuse3 API,
 * default multi-threaded loop. Usage: ref_fuse IMAGE MOUNTPOINT [FUSE options] */
#define FUSE_USE_VERSION 35
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

static int img_fd;
static off_t img_size;

static int ref_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	(void)fi;
	memset(st, 0, sizeof(*st));
	if (strcmp(path, "/") == 0) {
		st->st_mode = S_IFDIR | 0755, st->st_nlink = 2;
	} else if (strcmp(path, "/disk") == 0) {
		st->st_mode = S_IFREG | 0600, st->st_nlink = 1, st->st_size = img_size;
		st->st_blocks = img_size / 512;
	} else {
		return -ENOENT;
	}
	st->st_uid = getuid(), st->st_gid = getgid();
	return 0;
}

static int ref_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
		       struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	(void)off, (void)fi, (void)flags;
	if (strcmp(path, "/") != 0)
		return -ENOENT;
	fill(buf, ".", NULL, 0, 0), fill(buf, "..", NULL, 0, 0), fill(buf, "disk", NULL, 0, 0);
	return 0;
}

static int ref_open(const char *path, struct fuse_file_info *fi)
{
	(void)fi;
	return strcmp(path, "/disk") == 0 ? 0 : -ENOENT;
}

static int ref_read(const char *path, char *buf, size_t n, off_t off, struct fuse_file_info *fi)
{
	(void)path, (void)fi;
	ssize_t r = pread(img_fd, buf, n, off);
	return r < 0 ? -errno : (int)r;
}

static int ref_write(const char *path, const char *buf, size_t n, off_t off,
		     struct fuse_file_info *fi)
{
	(void)path, (void)fi;
	if (off >= img_size)
		return -ENOSPC;
	if ((off_t)n > img_size - off)
		n = img_size - off;
	ssize_t r = pwrite(img_fd, buf, n, off);
	return r < 0 ? -errno : (int)r;
}

static int ref_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
	(void)path, (void)datasync, (void)fi;
	return fdatasync(img_fd) < 0 ? -errno : 0;
}

static int ref_statfs(const char *path, struct statvfs *sv)
{
	(void)path;
	return fstatvfs(img_fd, sv) < 0 ? -errno : 0;
}

static const struct fuse_operations ref_ops = {
	.getattr = ref_getattr,
	.readdir = ref_readdir,
	.open = ref_open,
	.read = ref_read,
	.write = ref_write,
	.fsync = ref_fsync,
	.statfs = ref_statfs,
};

int main(int argc, char *argv[])
{
	struct stat st;

	if (argc < 3) {
		fprintf(stderr, "usage: %s IMAGE MOUNTPOINT [FUSE options]\n", argv[0]);
		return 2;
	}
	img_fd = open(argv[1], O_RDWR);
	if (img_fd < 0 || fstat(img_fd, &st) < 0) {
		perror(argv[1]);
		return 3;
	}
	img_size = st.st_size;
	argv[1] = argv[0]; /* fuse_main sees: prog MOUNTPOINT [options] */
	return fuse_main(argc - 1, argv + 1, &ref_ops, NULL);
}
