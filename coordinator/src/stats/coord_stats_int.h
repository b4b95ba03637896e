/* The statistics' private struct, shared by coord_stats.c (bookkeeping)
 * and coord_stats_render.c (renderers). */
#ifndef KSNAP_COORD_STATS_INT_H
#define KSNAP_COORD_STATS_INT_H

#include "coord_stats.h"

struct ksnap_coord_stats_s {
  size_t history;           /**< completed/failed entries kept */
  ksnap_ckpt_stats_t *ents; /**< oldest first */
  size_t cnt, cap;
  ksnap_stats_summary_t sum;
};

#endif /* KSNAP_COORD_STATS_INT_H */
