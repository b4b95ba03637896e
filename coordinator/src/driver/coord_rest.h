/*
 * The coordinator's HTTP status endpoint (rest.port, rest.address): the
 * only file that includes microhttpd.h is coord_rest.c.
 *
 *   GET /, /dashboard the dashboard page (coord_dashboard.h): polls
 *                     /checkpoints, draws the history chart and tables
 *   GET /checkpoints  the checkpoint statistics as JSON
 *                     (ksnap_coord_stats_json)
 *   GET /metrics      Prometheus text format 0.0.4
 *                     (ksnap_coord_stats_prometheus)
 * anything else is 404, a method other than GET/HEAD 405.
 *
 * Threading: libmicrohttpd answers on its own thread from the last
 * documents published with ksnap__rest_publish() (copied under a mutex),
 * so the driver loop's statistics are never read concurrently.
 */
#ifndef KSNAP_COORD_REST_H
#define KSNAP_COORD_REST_H

#include <stddef.h>

#include "ksnap/error.h"

typedef struct ksnap__rest_s ksnap__rest_t;

/**
 * Listens on @p address (dotted IPv4, e.g. "127.0.0.1") : @p port (0: a
 * free port, see ksnap__rest_port()).
 * @returns NULL with KSNAP_ERR_INVALID_ARG (bad address) or KSNAP_ERR_IO
 * (the port cannot be bound) in @p error.
 */
ksnap__rest_t *ksnap__rest_start(const char *address, int port,
                                 ksnap_error_t *error);

/** @returns the port listened on (the one chosen when @p port was 0). */
int ksnap__rest_port(ksnap__rest_t *rest);

/** Stops the server and frees. NULL is a no-op. */
void ksnap__rest_stop(ksnap__rest_t *rest);

/** Replaces the served documents (copied). */
void ksnap__rest_publish(ksnap__rest_t *rest, const char *json,
                         const char *metrics);

#endif /* KSNAP_COORD_REST_H */
