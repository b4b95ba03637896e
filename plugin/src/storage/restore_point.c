/* A restore point's storage URL and _metadata key (restore_point.h). */
#include "restore_point.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* [s, s + n) is "chk-" and digits. */
static int is_chk(const char *s, size_t n) {
  if (n < 5 || strncmp(s, "chk-", 4))
    return 0;
  for (size_t i = 4; i < n; i++)
    if (!isdigit((unsigned char)s[i]))
      return 0;
  return 1;
}

ksnap_err_t ksnap_restore_point_split(const char *url, char **basep,
                                      char **keyp, ksnap_error_t *error) {
  const char *scheme = url ? strstr(url, "://") : NULL;
  size_t n, chk, job;

  *basep = *keyp = NULL;
  if (!scheme || scheme == url)
    return ksnap_error_set(error, KSNAP_ERR_INVALID_ARG,
                           "%s: not a savepoint or checkpoint URL "
                           "(file:///DIR or s3://BUCKET/PREFIX)",
                           url ? url : "(none)");
  n = strlen(url);
  while (n > 0 && url[n - 1] == '/')
    n--;
  if (n >= 10 && !strncmp(url + n - 10, "/_metadata", 10))
    n -= 10;
  while (n > 0 && url[n - 1] == '/')
    n--;
  for (chk = n; chk > 0 && url[chk - 1] != '/'; chk--)
    ;
  for (job = chk ? chk - 1 : 0; job > 0 && url[job - 1] != '/'; job--)
    ;
  if (is_chk(url + chk, n - chk) && job > 0 &&
      url + job > scheme + 3 && chk > job + 1) {
    size_t b = job - 1; /* the '/' before JOB */
    if ((*basep = strndup(url, b)) &&
        (*keyp = malloc(n - job + sizeof("/_metadata")))) {
      memcpy(*keyp, url + job, n - job);
      strcpy(*keyp + (n - job), "/_metadata");
      return KSNAP_ERR_OK;
    }
  } else if ((*basep = strndup(url, n)) && (*keyp = strdup("_metadata"))) {
    return KSNAP_ERR_OK;
  }
  free(*basep);
  free(*keyp);
  *basep = *keyp = NULL;
  return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
}
