/*
 * The coordinator's dashboard page (dashboard.html in this folder),
 * compiled into the library at build time (plugin/cmake/embed_text.cmake)
 * and served by coord_rest.c at GET / and GET /dashboard.
 */
#ifndef KSNAP_COORD_DASHBOARD_H
#define KSNAP_COORD_DASHBOARD_H

/** The page, NUL-terminated. */
extern const char ksnap__dashboard_html[];

#endif /* KSNAP_COORD_DASHBOARD_H */
