/*
 * The version of libcurl that the S3 backend runs with, for `ksnap
 * version`, without including curl.h (only files of plugin/src/storage do).
 */
#ifndef KSNAP_STORAGE_VERSION_H
#define KSNAP_STORAGE_VERSION_H

/** @returns libcurl's version string ("7.88.1"); static. Thread-safe. */
const char *ksnap__storage_curl_version(void);

#endif /* KSNAP_STORAGE_VERSION_H */
