/*
 * Plugin data folders: append to files below an open directory fd without ever leaving it.
 *
 * Every path component is opened relative to the one before with O_NOFOLLOW, so a symlink
 * planted anywhere in the path (or swapped in while we walk it) is refused rather than
 * followed; no function here resolves a path string from the root. All functions return
 * 0 or an error code (a positive errno or a negative SF_DF_* code) and never abort.
 */
#include "CShareFlowSupport.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#ifndef NAME_MAX
#define NAME_MAX 255
#endif

/* openat, retried on EINTR (opening a FIFO or a file on a network file system can be
 * interrupted). */
static int open_at(int dirfd, const char *name, int flags, mode_t mode) {
    int fd;
    do fd = openat(dirfd, name, flags, mode); while (fd < 0 && errno == EINTR);
    return fd;
}

/* Why opening `name` failed with `err`: a symlink, the wrong kind of file, or `err` itself.
 * Asked after the fact (lstat-style), so it only refines an error, never grants access. */
static int classify(int dirfd, const char *name, int err, int want_dir) {
    struct stat st;
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return err;
    if (S_ISLNK(st.st_mode)) return SF_DF_SYMLINK;
    if (want_dir && !S_ISDIR(st.st_mode)) return SF_DF_NOT_DIR;
    if (!want_dir && !S_ISREG(st.st_mode)) return SF_DF_NOT_FILE;
    return err;
}

/* Opens (creating it, mode 0700, if missing) the folder `name` below dirfd. */
static int open_folder(int dirfd, const char *name, int *out) {
    const int flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
    int fd = open_at(dirfd, name, flags, 0);
    if (fd < 0 && errno == ENOENT) {
        if (mkdirat(dirfd, name, 0700) != 0 && errno != EEXIST) return errno;
        fd = open_at(dirfd, name, flags, 0);
    }
    if (fd < 0) return classify(dirfd, name, errno, 1);
    *out = fd;
    return 0;
}

/* Writes all of `len` bytes, looping over partial writes and EINTR. */
static int write_all(int fd, const unsigned char *p, size_t len, size_t *written) {
    size_t off = 0;
    int err = 0;
    while (off < len) {
        size_t chunk = len - off;
        if (chunk > (size_t)SSIZE_MAX) chunk = (size_t)SSIZE_MAX;
        ssize_t n = write(fd, p + off, chunk);
        if (n < 0) {
            if (errno == EINTR) continue;
            err = errno;
            break;
        }
        if (n == 0) { err = EIO; break; }
        off += (size_t)n;
    }
    *written = off;
    return err;
}

/* Checks the whole path before touching the disk, so a refused path creates no folder.
 * The worst mistake wins: leaving the folder, then a malformed name, then a long one. */
int sf_datafolder_check_path(const char *path, size_t path_len, size_t *failed_len) {
    size_t ignored;
    if (!failed_len) failed_len = &ignored;
    *failed_len = 0;
    if (path_len == 0) return SF_DF_BAD_NAME;
    if (!path) return EINVAL;
    if (memchr(path, '\0', path_len)) { *failed_len = path_len; return SF_DF_BAD_NAME; }
    if (path[0] == '/') { *failed_len = 1; return SF_DF_OUTSIDE; }
    size_t start = 0, depth = 0, bad_at = 0, long_at = 0;
    while (start <= path_len) {
        const char *slash = memchr(path + start, '/', path_len - start);
        size_t end = slash ? (size_t)(slash - path) : path_len;
        size_t n = end - start;
        if (n == 2 && path[start] == '.' && path[start + 1] == '.') { *failed_len = end; return SF_DF_OUTSIDE; }
        if (!bad_at && (n == 0 || (n == 1 && path[start] == '.'))) bad_at = end + 1;
        if (!long_at && n > NAME_MAX) long_at = end + 1;
        depth++;
        start = end + 1;
    }
    /* bad_at and long_at hold end + 1 so that 0 can mean "none" */
    if (bad_at) { *failed_len = bad_at - 1; return SF_DF_BAD_NAME; }
    if (long_at) { *failed_len = long_at - 1; return ENAMETOOLONG; }
    if (depth > SF_DF_MAX_COMPONENTS) return SF_DF_TOO_DEEP;
    return 0;
}

int sf_datafolder_append(int dirfd, const char *path, size_t path_len,
                         const void *bytes, size_t len,
                         size_t *written, size_t *failed_len) {
    size_t ignored_w, ignored_f;
    if (!written) written = &ignored_w;
    if (!failed_len) failed_len = &ignored_f;
    *written = 0;
    *failed_len = 0;
    if ((!path && path_len > 0) || (!bytes && len > 0)) return EINVAL;
    int err = sf_datafolder_check_path(path, path_len, failed_len);
    if (err) return err;

    char name[NAME_MAX + 1];
    int cur = dirfd;
    size_t start = 0;
    for (;;) {
        const char *slash = memchr(path + start, '/', path_len - start);
        size_t end = slash ? (size_t)(slash - path) : path_len;
        memcpy(name, path + start, end - start);
        name[end - start] = '\0';
        *failed_len = end;
        if (!slash) break;
        int next = -1;
        err = open_folder(cur, name, &next);
        if (cur != dirfd) close(cur);
        if (err) return err;
        cur = next;
        start = end + 1;
    }

    /* The last component. Refuse what is there already and is not a regular file before
     * opening it: opening a FIFO or a device can block or have effects of its own. */
    struct stat st;
    if (fstatat(cur, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        if (S_ISLNK(st.st_mode)) err = SF_DF_SYMLINK;
        else if (!S_ISREG(st.st_mode)) err = SF_DF_NOT_FILE;
    } else if (errno != ENOENT) {
        err = errno;
    }
    int fd = -1;
    if (!err) {
        /* O_NONBLOCK|O_NOCTTY: harmless on a regular file, and a FIFO or terminal swapped
         * in since the check can neither block us nor become our terminal. */
        fd = open_at(cur, name, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC |
                                O_NONBLOCK | O_NOCTTY, 0600);
        if (fd < 0) err = classify(cur, name, errno, 0);
    }
    if (cur != dirfd) close(cur);
    if (err) return err;

    if (fstat(fd, &st) != 0) err = errno;
    else if (!S_ISREG(st.st_mode)) err = SF_DF_NOT_FILE;
    if (!err) {
        int fl = fcntl(fd, F_GETFL);
        if (fl >= 0) (void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
        err = write_all(fd, (const unsigned char *)bytes, len, written);
    }
    /* close can report a failed write-back (NFS, quotas); keep the first error. Not
     * retried on EINTR: the descriptor is released either way. */
    if (close(fd) != 0 && !err && errno != EINTR) err = errno;
    if (!err) *failed_len = 0;
    return err;
}

/* Adds up the regular files below the folder open as fd; takes ownership of fd. */
static int usage_walk(int fd, int depth, uint64_t *total) {
    if (depth > SF_DF_MAX_WALK_DEPTH) { close(fd); return SF_DF_TOO_DEEP; }
    DIR *dir = fdopendir(fd);
    if (!dir) { int e = errno; close(fd); return e; }
    int err = 0;
    for (;;) {
        errno = 0;
        struct dirent *ent = readdir(dir);
        if (!ent) { if (errno) err = errno; break; }
        const char *n = ent->d_name;
        if (n[0] == '.' && (n[1] == '\0' || (n[1] == '.' && n[2] == '\0'))) continue;
        struct stat st;
        if (fstatat(dirfd(dir), n, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            if (errno == ENOENT) continue;  /* removed while we read */
            err = errno;
            break;
        }
        /* Every entry costs a block, as on disk: empty files and folders are not free. */
        *total += SF_DF_ENTRY_COST;
        if (S_ISREG(st.st_mode)) {
            if (st.st_size > 0) *total += (uint64_t)st.st_size;
        } else if (S_ISDIR(st.st_mode)) {
            int child = open_at(dirfd(dir), n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
            if (child < 0) {
                /* gone, or swapped for a symlink or a file since fstatat: not ours to count */
                if (errno == ENOENT || errno == ENOTDIR || errno == ELOOP) continue;
                err = errno;
                break;
            }
            err = usage_walk(child, depth + 1, total);
            if (err) break;
        }
        /* symlinks, FIFOs, sockets, devices: count nothing, follow nothing */
    }
    closedir(dir);
    return err;
}

int sf_datafolder_usage(int dirfd, uint64_t *bytes) {
    if (!bytes) return EINVAL;
    *bytes = 0;
    /* A descriptor of our own: fdopendir takes it over, and readdir must not move the
     * caller's offset. */
    int fd = open_at(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
    if (fd < 0) return errno;
    uint64_t total = 0;
    int err = usage_walk(fd, 0, &total);
    if (!err) *bytes = total;
    return err;
}

static int remove_at(int dirfd, const char *name, int depth);

/* Empties the folder open as fd (taking ownership of fd); the first error wins. */
static int remove_contents(int fd, int depth) {
    if (depth > SF_DF_MAX_WALK_DEPTH) { close(fd); return SF_DF_TOO_DEEP; }
    DIR *dir = fdopendir(fd);
    if (!dir) { int e = errno; close(fd); return e; }
    int err = 0;
    /* Removing entries while reading a directory can make readdir skip others on some
     * file systems (APFS), so read again until a pass removes nothing; a bounded number of
     * times, so a process refilling the folder cannot keep us here (rmdir then fails). */
    for (int removed = 1, pass = 0; removed && pass < 16; pass++) {
        removed = 0;
        rewinddir(dir);
        for (;;) {
            errno = 0;
            struct dirent *ent = readdir(dir);
            if (!ent) { if (errno && !err) err = errno; break; }
            const char *n = ent->d_name;
            if (n[0] == '.' && (n[1] == '\0' || (n[1] == '.' && n[2] == '\0'))) continue;
            int e = remove_at(dirfd(dir), n, depth);
            if (e == 0) removed = 1;
            else if (!err) err = e;
        }
        if (err) break;
    }
    closedir(dir);
    return err;
}

static int remove_at(int dirfd, const char *name, int depth) {
    struct stat st;
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return errno == ENOENT ? 0 : errno;
    if (S_ISDIR(st.st_mode)) {
        int fd = open_at(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
        if (fd >= 0) {
            int err = remove_contents(fd, depth + 1);
            if (err) return err;
            if (unlinkat(dirfd, name, AT_REMOVEDIR) == 0 || errno == ENOENT) return 0;
            return errno;
        }
        if (errno == ENOENT) return 0;
        /* swapped for a symlink or a file since fstatat: unlink that instead, below */
        if (errno != ELOOP && errno != ENOTDIR) return errno;
    }
    /* A file or a symlink: unlinkat removes the link itself, never its target. */
    if (unlinkat(dirfd, name, 0) == 0 || errno == ENOENT) return 0;
    return errno;
}

int sf_datafolder_remove(int dirfd, const char *name) {
    if (!name || !name[0] || strchr(name, '/') || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return SF_DF_BAD_NAME;
    return remove_at(dirfd, name, 0);
}
