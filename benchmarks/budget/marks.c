/* Callgrind's client requests as plain C functions, for ctypes (benchmarks/budget/marks.py).
 * Outside valgrind each request is a handful of no-op instructions. */
#include <valgrind/callgrind.h>

void budget_start(void) { CALLGRIND_START_INSTRUMENTATION; }

void budget_stop(void) { CALLGRIND_STOP_INSTRUMENTATION; }

void budget_zero(void) { CALLGRIND_ZERO_STATS; }

void budget_dump(const char *label) { CALLGRIND_DUMP_STATS_AT(label); }
