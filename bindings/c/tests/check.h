/*
 * What the C tests check with: CHECK counts a failed condition in `failures` and says
 * where; each test exits non-zero when any failed.
 */
#ifndef AGENTWIRE_TESTS_CHECK_H
#define AGENTWIRE_TESTS_CHECK_H

#include <stdio.h>

static int failures;

#define CHECK(cond)                                                                            \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);           \
            failures++;                                                                        \
        }                                                                                      \
    } while (0)

#endif
