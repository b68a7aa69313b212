/* What of SQLite's process-wide configuration Swift cannot reach itself (sqlite3_config is
 * variadic). */
#pragma once

/* Turns off SQLite's allocation statistics (SQLITE_CONFIG_MEMSTATUS), which take a global mutex
 * on every allocation. Must run before SQLite's first use in the process: returns 1 if the
 * configuration took, 0 if SQLite was already initialized (it keeps counting: slower, never
 * wrong). */
int sf_sqlite_configure(void);
