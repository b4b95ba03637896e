/*
 * Reading a sink task's last committed progress record from
 * <job>.ksnap.progress (plugin/PROTOCOL.md section 8.2, step 2; call it only
 * after ksnap_sink_new() fenced every slot id, so no transaction of this
 * task is still open and a zombie's late commit is already visible).
 *
 * How "to the end" is made exact: the high watermark of every partition is
 * read first (read_uncommitted: everything written before the call), then
 * the topic is consumed with isolation.level=read_committed until the
 * consumer's position passes that mark on every partition, i.e. until
 * every transaction that wrote before the call is decided. Another sink's
 * open transaction delays this by at most its transaction timeout; the
 * call is bounded by @p timeout_ms.
 *
 * Threading: any thread; each call owns its clients.
 */
#ifndef KSNAP_PROGRESS_H
#define KSNAP_PROGRESS_H

#include <stddef.h>

#include "ksnap/buf.h"
#include "ksnap/conf.h"
#include "ksnap/error.h"

/**
 * Finds the last committed record with key @p task_id ("stage[task]")
 * and copies its value into @p out (reset first). *@p foundp is 1 if
 * there is one, 0 if this task never committed.
 * @returns KSNAP_ERR_OK; KSNAP_ERR_NOT_FOUND if the progress topic does not
 * exist; KSNAP_ERR_TIMEOUT (retriable) if the end was not reached in time;
 * CONNECT, KAFKA.
 */
ksnap_err_t ksnap_progress_read_last(const ksnap_conf_t *conf,
                                     const char *task_id, int timeout_ms,
                                     ksnap_buf_t *out, int *foundp,
                                     ksnap_error_t *error);

#endif /* KSNAP_PROGRESS_H */
