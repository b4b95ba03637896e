/*
 * props: a parser for Java .properties files (java.util.Properties.load()
 * syntax), the text layer under ksnap/conf.h.
 *
 * Syntax accepted:
 *  - lines end with \n, \r or \r\n; a UTF-8 BOM at the start is skipped;
 *  - leading whitespace (space, tab, form feed) is ignored; blank lines and
 *    lines whose first non-blank character is '#' or '!' are skipped;
 *  - a line ending in an odd number of backslashes continues on the next
 *    line, whose leading whitespace is dropped (a comment never continues);
 *  - the key ends at the first unescaped '=', ':' or whitespace; whitespace,
 *    then at most one '=' or ':', then whitespace separate it from the value;
 *    the value's trailing whitespace is kept;
 *  - escapes in keys and values: \t \n \r \f, \uXXXX (UTF-16, surrogate
 *    pairs joined, encoded as UTF-8), and backslash + any other character
 *    stands for that character (\\ \= \: \  \# \!).
 *  - a key given twice is legal; both entries are kept in file order and
 *    ksnap_props_find() returns the later one.
 *
 * Errors (one line each, every one reported, parsing continues with the
 * next line; LINE is the first physical line of the logical line):
 *   "FILE: cannot open: <strerror>"
 *   "FILE:LINE: invalid \u escape"               (fewer than 4 hex digits)
 *   "FILE:LINE: unpaired surrogate in \u escape"
 *   "FILE:LINE: \u0000 is not allowed"
 *   "FILE:LINE: NUL byte is not allowed"
 *   "FILE:LINE: empty key"
 *
 * Threading: none; a ksnap_props_t belongs to its creator.
 */
#ifndef KSNAP_PROPS_H
#define KSNAP_PROPS_H

#include <stddef.h>

#include "ksnap/error.h"

typedef struct ksnap_props_entry_s {
  char *key;        /**< unescaped, NUL-terminated */
  char *value;      /**< unescaped, NUL-terminated, may be empty */
  const char *file; /**< the name given to the parser (owned by props) */
  int line;         /**< 1-based first physical line of the entry */
} ksnap_props_entry_t;

typedef struct ksnap_props_s ksnap_props_t;

/** Receives one complete error line (no trailing newline). */
typedef void(ksnap_props_error_cb_t)(void *opaque, const char *msg);

/**
 * Parses @p len bytes of @p text; @p name is used in entries and errors.
 * Every syntax error is passed to @p error_cb (may be NULL); entries of
 * good lines are kept even when other lines are bad.
 * @returns KSNAP_ERR_OK, KSNAP_ERR_CONF_SYNTAX if any line was bad (and
 * *propsp is still set), or KSNAP_ERR_NOMEM (*propsp NULL).
 * @remark the caller owns *propsp: ksnap_props_destroy() it.
 */
ksnap_err_t ksnap_props_parse_string(const char *name, const char *text,
                                     size_t len, ksnap_props_t **propsp,
                                     ksnap_props_error_cb_t *error_cb,
                                     void *opaque);

/**
 * Reads and parses the file at @p path (named @p path in errors).
 * @returns as ksnap_props_parse_string(), or KSNAP_ERR_IO if the file
 * cannot be read (*propsp NULL, one error line passed to @p error_cb).
 */
ksnap_err_t ksnap_props_parse_file(const char *path, ksnap_props_t **propsp,
                                   ksnap_props_error_cb_t *error_cb,
                                   void *opaque);

void ksnap_props_destroy(ksnap_props_t *props);

/** @returns the number of entries (duplicates included). */
size_t ksnap_props_count(const ksnap_props_t *props);

/** @returns entry @p i in file order (i < count). */
const ksnap_props_entry_t *ksnap_props_get(const ksnap_props_t *props,
                                           size_t i);

/** @returns the value of the LAST entry named @p key, or NULL. */
const char *ksnap_props_find(const ksnap_props_t *props, const char *key);

#endif /* KSNAP_PROPS_H */
