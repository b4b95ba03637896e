/*
 * Operators (ksnap/operator.h): the process-wide registry of built-in
 * operators and loading operators from shared libraries.
 *
 * Threading: the registry is guarded by one mutex; registered entries are
 * never removed, so a resolved built-in stays valid. dlerror() is
 * thread-local in glibc.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ksnap/operator.h"
#include "operator_registry.h"

#define IDENT_CHARS                                                       \
  "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_"

struct ksnap_operator_handle_s {
  void *dl; /* NULL for a built-in */
  const ksnap_operator_t *ops;
};

typedef struct builtin_s {
  char *name;
  const ksnap_operator_t *ops;
} builtin_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static builtin_t *builtins;
static size_t nbuiltins;

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && !strcmp(s + n - m, suffix);
}

int ksnap__operator_spec_check(const char *spec, char *errstr, size_t size) {
  const char *colon = strchr(spec, ':');

  if (colon) {
    const char *name = colon + 1;
    if (colon > spec && *name && strspn(name, IDENT_CHARS) == strlen(name) &&
        !(*name >= '0' && *name <= '9'))
      return 0;
    snprintf(errstr, size, "invalid operator \"%s\" (expected LIB.so:NAME, "
             "NAME a C identifier, or a built-in name)", spec);
    return -1;
  }
  if (*spec && !strchr(spec, '/') && !ends_with(spec, ".so"))
    return 0;
  snprintf(errstr, size, "invalid operator \"%s\" (a library needs the "
           "operator's name: LIB.so:NAME)", spec);
  return -1;
}

/* The checks shared by registration and loading. */
static ksnap_err_t check_ops(const char *spec, const ksnap_operator_t *ops,
                             ksnap_error_t *error) {
  if (!ops)
    return ksnap_error_set(error, KSNAP_ERR_INVALID_ARG,
                           "%s returned no operator", spec);
  if (ops->abi_version < KSNAP_OPERATOR_ABI_VERSION_MIN ||
      ops->abi_version > KSNAP_OPERATOR_ABI_VERSION)
    return ksnap_error_set(error, KSNAP_ERR_UNSUPPORTED,
                           "%s has operator ABI version %u, this ksnap "
                           "needs %u to %u", spec, (unsigned)ops->abi_version,
                           (unsigned)KSNAP_OPERATOR_ABI_VERSION_MIN,
                           (unsigned)KSNAP_OPERATOR_ABI_VERSION);
  if (!ops->process)
    return ksnap_error_set(error, KSNAP_ERR_INVALID_ARG,
                           "%s has no process callback", spec);
  return KSNAP_ERR_OK;
}

static const ksnap_operator_t *builtin_find(const char *name) {
  for (size_t i = 0; i < nbuiltins; i++)
    if (!strcmp(builtins[i].name, name))
      return builtins[i].ops;
  return NULL;
}

ksnap_err_t ksnap_operator_register(const char *name,
                                    const ksnap_operator_t *ops,
                                    ksnap_error_t *error) {
  char errstr[256];
  builtin_t *v;
  ksnap_err_t err = KSNAP_ERR_OK;

  if (strchr(name, ':') || ksnap__operator_spec_check(name, errstr,
                                                      sizeof(errstr)))
    return ksnap_error_set(error, KSNAP_ERR_INVALID_ARG, "invalid built-in "
                           "operator name \"%s\" (no ':' or '/', not "
                           "ending in .so)", name);
  if ((err = check_ops(name, ops, error)))
    return err;
  pthread_mutex_lock(&lock);
  if (builtin_find(name)) {
    err = ksnap_error_set(error, KSNAP_ERR_EXISTS, "built-in operator "
                          "\"%s\" is already registered", name);
  } else if (!(v = realloc(builtins, (nbuiltins + 1) * sizeof(*v)))) {
    err = ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  } else {
    builtins = v;
    if (!(v[nbuiltins].name = strdup(name)))
      err = ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
    else
      v[nbuiltins++].ops = ops;
  }
  pthread_mutex_unlock(&lock);
  return err;
}

/* Where a bare @p lib was looked for, for "cannot load": " (searched
 * DIR, KSNAP_OPERATOR_PATH=..., then the system's library path)". */
static void searched(const char *job_dir, char *buf, size_t size) {
  const char *path = getenv("KSNAP_OPERATOR_PATH");

  if (!path || !*path)
    path = NULL;
  snprintf(buf, size, " (searched %s%sKSNAP_OPERATOR_PATH%s%s, then the "
           "system's library path)", job_dir ? job_dir : "",
           job_dir ? ", " : "", path ? "=" : " (unset)", path ? path : "");
}

/* The file to dlopen() for @p lib, into @p full: LIB with a '/' as
 * written, relative to @p job_dir; else the first of job_dir/LIB and
 * DIR/LIB for each DIR of KSNAP_OPERATOR_PATH that exists; else LIB
 * itself, for the system's loader. @returns 1 in that last case. */
static int lib_path(const char *lib, const char *job_dir, char *full,
                    size_t size) {
  const char *path = getenv("KSNAP_OPERATOR_PATH");

  if (strchr(lib, '/')) {
    snprintf(full, size, "%s%s%s", lib[0] != '/' && job_dir ? job_dir : "",
             lib[0] != '/' && job_dir ? "/" : "", lib);
    return 0;
  }
  if (job_dir && snprintf(full, size, "%s/%s", job_dir, lib) > 0 &&
      access(full, F_OK) == 0)
    return 0;
  for (const char *p = path; p && *p;) {
    size_t n = strcspn(p, ":");
    if (n && snprintf(full, size, "%.*s/%s", (int)n, p, lib) > 0 &&
        access(full, F_OK) == 0)
      return 0;
    p += n + (p[n] == ':');
  }
  snprintf(full, size, "%s", lib);
  return 1;
}

static ksnap_err_t resolve_lib(const char *spec, const char *job_dir,
                               ksnap_operator_handle_t *h,
                               ksnap_error_t *error) {
  const char *colon = strchr(spec, ':'), *name = colon + 1;
  char lib[1024], full[4096], sym[512], where[4096] = "";
  ksnap_operator_fn_t *fn;
  void *addr;

  snprintf(lib, sizeof(lib), "%.*s", (int)(colon - spec), spec);
  if (lib_path(lib, job_dir, full, sizeof(full)))
    searched(job_dir, where, sizeof(where));
  if (!(h->dl = dlopen(full, RTLD_NOW | RTLD_LOCAL)))
    return ksnap_error_set(error, KSNAP_ERR_NOT_FOUND,
                           "cannot load \"%s\": %s%s", full, dlerror(),
                           where);
  snprintf(sym, sizeof(sym), "%s%s", KSNAP_OPERATOR_SYMBOL_PREFIX, name);
  if (!(addr = dlsym(h->dl, sym)) && !(addr = dlsym(h->dl, name)))
    return ksnap_error_set(error, KSNAP_ERR_NOT_FOUND,
                           "%s has no operator \"%s\" (no symbol %s or %s)",
                           lib, name, sym, name);
  memcpy(&fn, &addr, sizeof(fn)); /* object to function pointer (POSIX) */
  h->ops = fn();
  return check_ops(spec, h->ops, error);
}

ksnap_err_t ksnap_operator_resolve(const char *spec, const char *job_dir,
                                   ksnap_operator_handle_t **handlep,
                                   ksnap_error_t *error) {
  ksnap_operator_handle_t *h;
  char errstr[512];
  ksnap_err_t err;

  *handlep = NULL;
  if (ksnap__operator_spec_check(spec, errstr, sizeof(errstr)))
    return ksnap_error_set(error, KSNAP_ERR_INVALID_ARG, "%s", errstr);
  if (!(h = calloc(1, sizeof(*h))))
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  if (strchr(spec, ':')) {
    err = resolve_lib(spec, job_dir, h, error);
  } else {
    pthread_mutex_lock(&lock);
    h->ops = builtin_find(spec);
    pthread_mutex_unlock(&lock);
    err = h->ops ? KSNAP_ERR_OK
                 : ksnap_error_set(error, KSNAP_ERR_NOT_FOUND,
                                   "no built-in operator \"%s\" is "
                                   "registered", spec);
  }
  if (err) {
    ksnap_operator_handle_destroy(h);
    return err;
  }
  *handlep = h;
  return KSNAP_ERR_OK;
}

const ksnap_operator_t *
ksnap_operator_handle_ops(const ksnap_operator_handle_t *handle) {
  return handle->ops;
}

void ksnap_operator_handle_destroy(ksnap_operator_handle_t *handle) {
  if (!handle)
    return;
  if (handle->dl)
    dlclose(handle->dl);
  free(handle);
}
