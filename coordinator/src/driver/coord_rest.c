/*
 * The coordinator's HTTP status endpoint over libmicrohttpd (see
 * coord_rest.h). The wrapper module: no other file includes microhttpd.h.
 */
#include "coord_rest.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "coord_dashboard.h"
#include "ksnap/log.h"

/* The page runs only its own inline script and reads only this server:
 * no external resource can load, whatever the statistics contain. */
#define DASHBOARD_CSP                                                       \
  "default-src 'none'; script-src 'unsafe-inline'; style-src "              \
  "'unsafe-inline'; connect-src 'self'; img-src 'self'; base-uri 'none'; " \
  "form-action 'none'; frame-ancestors 'none'"

struct ksnap__rest_s {
  struct MHD_Daemon *daemon;
  pthread_mutex_t lock;
  char *json;
  char *metrics;
};

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned status,
                             const char *type, const char *body) {
  struct MHD_Response *resp = MHD_create_response_from_buffer(
      strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
  enum MHD_Result ret;

  if (!resp)
    return MHD_NO;
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
  MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
  if (!strncmp(type, "text/html", 9))
    MHD_add_response_header(resp, "Content-Security-Policy", DASHBOARD_CSP);
  ret = MHD_queue_response(conn, status, resp);
  MHD_destroy_response(resp);
  return ret;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *conn,
                               const char *url, const char *method,
                               const char *version, const char *upload_data,
                               size_t *upload_data_size, void **con_cls) {
  ksnap__rest_t *rest = cls;
  const char *doc = NULL, *type = NULL;
  char *copy = NULL;
  enum MHD_Result ret;

  (void)version;
  (void)upload_data;
  (void)upload_data_size;
  (void)con_cls;
  if (strcmp(method, "GET") && strcmp(method, "HEAD"))
    return reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain",
                 "method not allowed\n");
  KSNAP_DBG(HTTP, "REST", "GET %s", url);
  if (!strcmp(url, "/") || !strcmp(url, "/dashboard"))
    return reply(conn, MHD_HTTP_OK, "text/html; charset=utf-8",
                 ksnap__dashboard_html);
  pthread_mutex_lock(&rest->lock);
  if (!strcmp(url, "/checkpoints")) {
    doc = rest->json ? rest->json : "{}";
    type = "application/json";
  } else if (!strcmp(url, "/metrics")) {
    doc = rest->metrics ? rest->metrics : "";
    type = "text/plain; version=0.0.4";
  }
  if (doc)
    copy = strdup(doc);
  pthread_mutex_unlock(&rest->lock);
  if (!doc)
    return reply(conn, MHD_HTTP_NOT_FOUND, "text/plain",
                 "not found (try /, /checkpoints or /metrics)\n");
  if (!copy)
    return MHD_NO;
  ret = reply(conn, MHD_HTTP_OK, type, copy);
  free(copy);
  return ret;
}

ksnap__rest_t *ksnap__rest_start(const char *address, int port,
                                 ksnap_error_t *error) {
  ksnap__rest_t *rest = calloc(1, sizeof(*rest));
  struct sockaddr_in sa;

  if (!rest) {
    ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
    return NULL;
  }
  memset(&sa, 0, sizeof(sa));
  sa.sin_family = AF_INET;
  sa.sin_port = htons((uint16_t)port);
  if (inet_pton(AF_INET, address, &sa.sin_addr) != 1) {
    ksnap_error_set(error, KSNAP_ERR_INVALID_ARG,
                    "rest.address \"%s\" is not an IPv4 address", address);
    free(rest);
    return NULL;
  }
  pthread_mutex_init(&rest->lock, NULL);
  rest->daemon = MHD_start_daemon(
      MHD_USE_INTERNAL_POLLING_THREAD, (uint16_t)port, NULL, NULL, handler,
      rest, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
      MHD_OPTION_CONNECTION_TIMEOUT, 10u, MHD_OPTION_END);
  if (!rest->daemon) {
    ksnap_error_set(error, KSNAP_ERR_IO,
                    "cannot listen on %s:%d (rest.address, rest.port)",
                    address, port);
    pthread_mutex_destroy(&rest->lock);
    free(rest);
    return NULL;
  }
  return rest;
}

int ksnap__rest_port(ksnap__rest_t *rest) {
  const union MHD_DaemonInfo *info =
      MHD_get_daemon_info(rest->daemon, MHD_DAEMON_INFO_BIND_PORT);

  return info ? (int)info->port : -1;
}

void ksnap__rest_stop(ksnap__rest_t *rest) {
  if (!rest)
    return;
  MHD_stop_daemon(rest->daemon);
  pthread_mutex_destroy(&rest->lock);
  free(rest->json);
  free(rest->metrics);
  free(rest);
}

void ksnap__rest_publish(ksnap__rest_t *rest, const char *json,
                         const char *metrics) {
  char *j = json ? strdup(json) : NULL, *m = metrics ? strdup(metrics) : NULL;

  pthread_mutex_lock(&rest->lock);
  free(rest->json);
  free(rest->metrics);
  rest->json = j;
  rest->metrics = m;
  pthread_mutex_unlock(&rest->lock);
}
