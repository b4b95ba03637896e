/* Unique names for test resources (topics, transactional.ids, groups,
 * object-key prefixes), so parallel and repeated runs never collide. */
#ifndef KSNAP_TESTNAMES_H
#define KSNAP_TESTNAMES_H

/**
 * @returns a malloc'd name "<prefix>-<pid>-<ms since epoch>-<counter>",
 * unique across processes and runs. The caller frees it.
 */
char *ksnap_test_unique_name(const char *prefix);

#endif /* KSNAP_TESTNAMES_H */
