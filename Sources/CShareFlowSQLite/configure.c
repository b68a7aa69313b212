#include "CShareFlowSQLite.h"

#include <sqlite3.h>

int sf_sqlite_configure(void) {
    /* SQLite counts every allocation it makes (SQLITE_DEFAULT_MEMSTATUS), under a process-wide
     * mutex: 22 of a one-record read's allocations, 44 of its 49 pthread lock/unlock pairs by
     * callgrind (issue 48). Nothing here reads those counts (no sqlite3_memory_used, no soft heap
     * limit, which needs them). Connections need no change: GRDB opens each without a mutex of
     * its own (SQLITE_OPEN_NOMUTEX), its queue being the only thread that uses it. */
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0) == SQLITE_OK;
}
