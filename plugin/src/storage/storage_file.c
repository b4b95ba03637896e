/*
 * file:// storage backend: one file per object under a root directory
 * ('/' in keys makes subdirectories). Writes go to a temporary name
 * ".ksnap-tmp.*" in the object's directory, are fsync'ed, renamed over the
 * final name, and the directory is fsync'ed: a crash leaves the old object
 * or the new one, plus at worst a temp file that listing ignores. A
 * writer starts the write-back of every SYNC_CHUNK it wrote without
 * waiting for it (sync_file_range), so that a large object streams to the
 * disk while it is written instead of all at once in the final fsync; a
 * writer's reserved head is a hole until w_head writes it (pwrite).
 * Owner: the thread using the storage.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storage_int.h"
#include "base/util.h"

#define TMP_PREFIX ".ksnap-tmp."
#define SYNC_CHUNK (8u << 20)

typedef struct file_storage_s {
  ksnap_storage_t base;
  char *root; /* no trailing '/' (except "/") */
} file_storage_t;

struct ksnap__bwriter_s {
  file_storage_t *fs;
  int fd;
  char *tmp;
  char *path;
  uint64_t pos, synced; /* written up to pos; write-back started to synced */
};

static ksnap_err_t io_err(ksnap_error_t *e, const char *op, const char *path) {
  return ksnap_error_set(e, errno == ENOENT ? KSNAP_ERR_NOT_FOUND
                                            : KSNAP_ERR_IO,
                         "%s %s: %s", op, path, strerror(errno));
}

static char *join(const char *root, const char *key) {
  size_t n = strlen(root) + strlen(key) + 2;
  char *p = malloc(n);
  if (p)
    snprintf(p, n, "%s%s%s", root, root[strlen(root) - 1] == '/' ? "" : "/",
             key);
  return p;
}

static int fsync_dir(const char *dir) {
  int fd = open(dir, O_RDONLY | O_DIRECTORY);
  int rc;
  if (fd < 0)
    return -1;
  rc = fsync(fd);
  close(fd);
  return rc;
}

/* mkdir -p of the directory part of @p path (which is under root). */
static int make_parents(char *path) {
  for (char *p = path + 1; *p; p++) {
    if (*p != '/')
      continue;
    *p = '\0';
    if (mkdir(path, 0777) == 0) {
      char *slash = strrchr(path, '/');
      if (slash && slash != path) {
        *slash = '\0';
        fsync_dir(path);
        *slash = '/';
      }
    } else if (errno != EEXIST) {
      *p = '/';
      return -1;
    }
    *p = '/';
  }
  return 0;
}

static void dir_of(const char *path, char *dir, size_t size) {
  const char *slash = strrchr(path, '/');
  size_t n = slash ? (size_t)(slash - path) : 0;
  if (n == 0)
    snprintf(dir, size, "%s", slash ? "/" : ".");
  else
    snprintf(dir, size, "%.*s", (int)n, path);
}

static void w_free(ksnap__bwriter_t *w) {
  free(w->tmp);
  free(w->path);
  free(w);
}

static void w_abort(ksnap__bwriter_t *w) {
  if (w->fd >= 0)
    close(w->fd);
  unlink(w->tmp);
  w_free(w);
}

static ksnap_err_t w_open(ksnap_storage_t *st, const char *key,
                          size_t head_len, ksnap__bwriter_t **out,
                          ksnap_error_t *e) {
  file_storage_t *fs = (file_storage_t *)st;
  ksnap__bwriter_t *w = calloc(1, sizeof(*w));
  char dir[PATH_MAX];
  size_t n;

  if (!w || !(w->path = join(fs->root, key))) {
    free(w);
    return ksnap_error_set(e, KSNAP_ERR_NOMEM, "out of memory");
  }
  w->fs = fs;
  dir_of(w->path, dir, sizeof(dir));
  n = strlen(dir) + sizeof(TMP_PREFIX) + 32;
  w->tmp = malloc(n);
  if (make_parents(w->path) || !w->tmp) {
    ksnap_err_t err = io_err(e, "mkdir", w->path);
    free(w->tmp);
    free(w->path);
    free(w);
    return err == KSNAP_ERR_NOT_FOUND ? KSNAP_ERR_IO : err;
  }
  snprintf(w->tmp, n, "%s/" TMP_PREFIX "%d.%08x", dir, (int)getpid(),
           (unsigned)random());
  w->fd = open(w->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (w->fd < 0) {
    ksnap_err_t err = io_err(e, "create", w->tmp);
    free(w->tmp);
    free(w->path);
    free(w);
    return err;
  }
  w->pos = w->synced = head_len;
  if (head_len && lseek(w->fd, (off_t)head_len, SEEK_SET) < 0) {
    ksnap_err_t err = io_err(e, "seek", w->tmp);
    w_abort(w);
    return err;
  }
  *out = w;
  return KSNAP_ERR_OK;
}

static ksnap_err_t write_at(ksnap__bwriter_t *w, const void *data,
                            size_t len, off_t off, ksnap_error_t *e) {
  const char *p = data;
  while (len) {
    ssize_t r = off < 0 ? write(w->fd, p, len) : pwrite(w->fd, p, len, off);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      return io_err(e, "write", w->tmp);
    p += r;
    len -= (size_t)r;
    if (off >= 0)
      off += r;
  }
  return KSNAP_ERR_OK;
}

static ksnap_err_t w_write(ksnap__bwriter_t *w, const void *data, size_t len,
                           ksnap_error_t *e) {
  ksnap_err_t err = write_at(w, data, len, -1, e);

  w->pos += len;
  if (!err && w->pos - w->synced >= SYNC_CHUNK) {
    /* a hint: fsync at commit is what makes the data durable */
    (void)sync_file_range(w->fd, (off_t)w->synced,
                          (off_t)(w->pos - w->synced),
                          SYNC_FILE_RANGE_WRITE);
    w->synced = w->pos;
  }
  return err;
}

static ksnap_err_t w_head(ksnap__bwriter_t *w, const void *data, size_t len,
                          ksnap_error_t *e) {
  return write_at(w, data, len, 0, e);
}

static ksnap_err_t w_commit(ksnap__bwriter_t *w, ksnap_error_t *e) {
  char dir[PATH_MAX];
  ksnap_err_t err = KSNAP_ERR_OK;

  if (fsync(w->fd))
    err = io_err(e, "fsync", w->tmp);
  if (close(w->fd) && !err)
    err = io_err(e, "close", w->tmp);
  w->fd = -1;
  if (!err && rename(w->tmp, w->path))
    err = io_err(e, "rename", w->path);
  dir_of(w->path, dir, sizeof(dir));
  if (!err && fsync_dir(dir))
    err = io_err(e, "fsync", dir);
  if (err) {
    w_abort(w);
    return err;
  }
  w_free(w);
  return KSNAP_ERR_OK;
}

static ksnap_err_t fput(ksnap_storage_t *st, const char *key,
                        const struct iovec *iov, int iovcnt,
                        ksnap_error_t *e) {
  ksnap__bwriter_t *w;
  ksnap_err_t err = w_open(st, key, 0, &w, e);

  for (int i = 0; !err && i < iovcnt; i++)
    err = w_write(w, iov[i].iov_base, iov[i].iov_len, e);
  if (err) {
    w_abort(w);
    return err;
  }
  return w_commit(w, e);
}

static ksnap_err_t open_obj(file_storage_t *fs, const char *key, int *fdp,
                            uint64_t *sizep, char **pathp, ksnap_error_t *e) {
  struct stat sb;
  char *path = join(fs->root, key);

  if (!path)
    return ksnap_error_set(e, KSNAP_ERR_NOMEM, "out of memory");
  *fdp = open(path, O_RDONLY | O_CLOEXEC);
  if (*fdp < 0 || fstat(*fdp, &sb) || !S_ISREG(sb.st_mode)) {
    ksnap_err_t err;
    if (*fdp >= 0) {
      errno = EISDIR;
      close(*fdp);
    }
    err = io_err(e, "open", path);
    free(path);
    return err;
  }
  *sizep = (uint64_t)sb.st_size;
  *pathp = path;
  return KSNAP_ERR_OK;
}

static ksnap_err_t fget(ksnap_storage_t *st, const char *key,
                        const ksnap__sink_t *sink, ksnap_error_t *e) {
  static const size_t chunk = 1 << 20;
  ksnap_err_t err;
  uint64_t size = 0;
  char *path = NULL, *buf = NULL;
  int fd = -1;

  if ((err = open_obj((file_storage_t *)st, key, &fd, &size, &path, e)))
    return err;
  if (sink->expect)
    sink->expect(sink->opaque, size);
  if (!(buf = malloc(chunk)))
    err = ksnap_error_set(e, KSNAP_ERR_NOMEM, "out of memory");
  while (!err) {
    ssize_t r = read(fd, buf, chunk);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      err = io_err(e, "read", path);
    else if (r == 0)
      break;
    else if (sink->write(sink->opaque, (uint8_t *)buf, (size_t)r))
      err = ksnap_error_set(e, KSNAP_ERR_INTERRUPTED, "%s: read stopped",
                            path);
  }
  free(buf);
  free(path);
  close(fd);
  return err;
}

static ksnap_err_t frange(ksnap_storage_t *st, const char *key,
                          uint64_t off, size_t len, uint8_t *dst,
                          ksnap_error_t *e) {
  ksnap_err_t err;
  uint64_t size = 0;
  char *path = NULL;
  int fd = -1;

  if ((err = open_obj((file_storage_t *)st, key, &fd, &size, &path, e)))
    return err;
  while (!err && len) {
    ssize_t r = pread(fd, dst, len, (off_t)off);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      err = io_err(e, "read", path);
    else if (r == 0)
      err = ksnap_error_set(e, KSNAP_ERR_TRUNCATED,
                            "%s: object truncated (%llu bytes, read at "
                            "%llu)", path, (unsigned long long)size,
                            (unsigned long long)off);
    else {
      dst += r;
      off += (uint64_t)r;
      len -= (size_t)r;
    }
  }
  free(path);
  close(fd);
  return err;
}

static ksnap_err_t ftail(ksnap_storage_t *st, const char *key, uint64_t *size,
                         uint8_t tail[16], ksnap_error_t *e) {
  ksnap_err_t err;
  char *path = NULL;
  size_t n;
  int fd = -1;

  if ((err = open_obj((file_storage_t *)st, key, &fd, size, &path, e)))
    return err;
  n = *size < 16 ? (size_t)*size : 16;
  if (pread(fd, tail, n, (off_t)(*size - n)) != (ssize_t)n)
    err = io_err(e, "read", path);
  free(path);
  close(fd);
  return err;
}

static ksnap_err_t fdel(ksnap_storage_t *st, const char *key,
                        ksnap_error_t *e) {
  char *path = join(((file_storage_t *)st)->root, key);
  char dir[PATH_MAX];
  ksnap_err_t err = KSNAP_ERR_OK;

  if (!path)
    return ksnap_error_set(e, KSNAP_ERR_NOMEM, "out of memory");
  if (unlink(path) && errno != ENOENT && errno != ENOTDIR)
    err = io_err(e, "unlink", path);
  dir_of(path, dir, sizeof(dir));
  fsync_dir(dir);
  free(path);
  return err;
}

/* ---- listing: collect, sort, call back ---- */

typedef struct keyvec_s {
  char **keys;
  uint64_t *sizes;
  size_t n, cap;
} keyvec_t;

static int kv_push(keyvec_t *kv, const char *key, uint64_t size) {
  if (kv->n == kv->cap) {
    size_t cap = kv->cap ? kv->cap * 2 : 64;
    char **k = realloc(kv->keys, cap * sizeof(*k));
    uint64_t *s = k ? realloc(kv->sizes, cap * sizeof(*s)) : NULL;
    if (k)
      kv->keys = k;
    if (!s)
      return -1;
    kv->sizes = s;
    kv->cap = cap;
  }
  if (!(kv->keys[kv->n] = strdup(key)))
    return -1;
  kv->sizes[kv->n++] = size;
  return 0;
}

/* Walks root/rel recursively; rel is "" or ends with '/'. */
static int walk(const char *root, const char *rel, const char *prefix,
                keyvec_t *kv) {
  char dirpath[2 * PATH_MAX + 2], key[PATH_MAX], full[2 * PATH_MAX + 2];
  struct dirent *de;
  DIR *d;
  int rc = 0;

  snprintf(dirpath, sizeof(dirpath), "%s/%s", root, rel);
  if (!(d = opendir(dirpath)))
    return errno == ENOENT || errno == ENOTDIR ? 0 : -1;
  while (rc == 0 && (de = readdir(d))) {
    struct stat sb;
    if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
        !strncmp(de->d_name, TMP_PREFIX, sizeof(TMP_PREFIX) - 1))
      continue;
    snprintf(key, sizeof(key), "%s%s", rel, de->d_name);
    snprintf(full, sizeof(full), "%s/%s", root, key);
    if (stat(full, &sb))
      continue;
    if (S_ISDIR(sb.st_mode)) {
      size_t n = strlen(key), p = strlen(prefix);
      key[n] = '/';
      key[n + 1] = '\0';
      /* descend only where keys can still match the prefix */
      if (!strncmp(key, prefix, KSNAP_MIN(n + 1, p)))
        rc = walk(root, key, prefix, kv);
    } else if (S_ISREG(sb.st_mode) && !strncmp(key, prefix, strlen(prefix))) {
      rc = kv_push(kv, key, (uint64_t)sb.st_size);
    }
  }
  closedir(d);
  return rc;
}

static int cmp_idx(const void *a, const void *b, void *keys) {
  return strcmp(((char **)keys)[*(const size_t *)a],
                ((char **)keys)[*(const size_t *)b]);
}

static ksnap_err_t flist(ksnap_storage_t *st, const char *prefix,
                         ksnap_storage_list_cb_t *cb, void *opaque,
                         ksnap_error_t *e) {
  file_storage_t *fs = (file_storage_t *)st;
  keyvec_t kv = {0};
  char rel[PATH_MAX];
  const char *slash = strrchr(prefix, '/');
  size_t *idx = NULL;
  ksnap_err_t err = KSNAP_ERR_OK;

  snprintf(rel, sizeof(rel), "%.*s", slash ? (int)(slash - prefix + 1) : 0,
           prefix);
  if (walk(fs->root, rel, prefix, &kv))
    err = io_err(e, "list", fs->root);
  if (!err && kv.n && !(idx = malloc(kv.n * sizeof(*idx))))
    err = ksnap_error_set(e, KSNAP_ERR_NOMEM, "out of memory");
  if (!err) {
    for (size_t i = 0; i < kv.n; i++)
      idx[i] = i;
    if (kv.n)
      qsort_r(idx, kv.n, sizeof(*idx), cmp_idx, kv.keys);
    for (size_t i = 0; i < kv.n; i++)
      if (cb(opaque, kv.keys[idx[i]], kv.sizes[idx[i]]))
        break;
  }
  for (size_t i = 0; i < kv.n; i++)
    free(kv.keys[i]);
  free(kv.keys);
  free(kv.sizes);
  free(idx);
  return err;
}

static void fdestroy(ksnap_storage_t *st) {
  file_storage_t *fs = (file_storage_t *)st;
  free(fs->root);
  free(fs);
}

static const ksnap__storage_ops_t file_ops = {
    .scheme = "file",
    .destroy = fdestroy,
    .put = fput,
    .get = fget,
    .get_range = frange,
    .tail = ftail,
    .list = flist,
    .del = fdel,
    .w_open = w_open,
    .w_write = w_write,
    .w_head = w_head,
    .w_commit = w_commit,
    .w_abort = w_abort,
};

ksnap_err_t ksnap__storage_file_open(const char *url, const char *path,
                                     ksnap_storage_t **out, ksnap_error_t *e) {
  file_storage_t *fs = calloc(1, sizeof(*fs));
  size_t n = strlen(path);

  if (!fs)
    return ksnap_error_set(e, KSNAP_ERR_NOMEM, "out of memory");
  fs->base.ops = &file_ops;
  fs->base.url = strdup(url);
  while (n > 1 && path[n - 1] == '/')
    n--;
  fs->root = strndup(path, n);
  if (!fs->base.url || !fs->root || !n) {
    ksnap_storage_destroy(&fs->base);
    return ksnap_error_set(e, n ? KSNAP_ERR_NOMEM : KSNAP_ERR_INVALID_ARG,
                           n ? "out of memory" : "empty storage path");
  }
  /* no I/O here: directories are made by the first write */
  *out = &fs->base;
  return KSNAP_ERR_OK;
}
