/* oomadj.h — a process's standing with the OOM killer (/proc/PID/oom_score_adj), read and written from outside. */
#ifndef AL_KIT_OOMADJ_H
#define AL_KIT_OOMADJ_H

#include <sys/types.h>

#define OOM_ADJ_MIN (-1000) /* never the OOM killer's choice (OOM_SCORE_ADJ_MIN) */
#define OOM_ADJ_MAX 1000    /* chosen before every process of a lower value (OOM_SCORE_ADJ_MAX) */

/* pid's oom_score_adj into *adj (pid 0: ours): 0 or -errno. */
int oom_adj_read(pid_t pid, int *adj);
/* Sets pid's oom_score_adj: 0 or -errno (-EACCES below its floor without CAP_SYS_RESOURCE).
 * Written with CAP_SYS_RESOURCE, the value is also the process's new floor (oom_score_adj_min),
 * which its forks inherit: a process may lower its own value down to its floor, never below. */
int oom_adj_write(pid_t pid, int adj);

#endif
