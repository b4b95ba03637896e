/* Internals of the operator registry (ksnap/operator.h) used by the job
 * graph: the syntax of an operator spec, in one place. */
#ifndef KSNAP_OPERATOR_REGISTRY_H
#define KSNAP_OPERATOR_REGISTRY_H

#include <stddef.h>

/*
 * Checks the syntax of operator spec @p spec: `LIB:NAME` (LIB non-empty,
 * NAME a C identifier) or a built-in name (non-empty, no '/', not ending
 * in ".so"). @returns 0, or -1 with the reason in @p errstr.
 */
int ksnap__operator_spec_check(const char *spec, char *errstr, size_t size);

#endif /* KSNAP_OPERATOR_REGISTRY_H */
