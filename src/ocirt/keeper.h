/* keeper.h — how a container's process ended, kept past its reap for the verdict (keeper.c). */
#ifndef AL_OCIRT_KEEPER_H
#define AL_OCIRT_KEEPER_H

#include <stdbool.h>
#include <sys/types.h>

#include "airlock/airlock.h"
#include "rtstate.h"

/* The keeper's record in the container's state directory, and its temporary name. */
#define ORT_EXIT_FILE	  "exit.json"
#define ORT_EXIT_FILE_TMP "exit.json.tmp"

/* How long delete waits for a keeper whose container's init is already reaped: its record is a
 * few system calls away, so this is only reached when the machine is starved or the keeper hung. */
#define ORT_KEEPER_WAIT_MS 2000

/* How the container's process ended, in the terms of airlock run's verdict. */
struct ort_end {
	bool known;
	enum al_status status; /* known: exited, signaled, oom (set by the caller, who has the cgroup), killed */
	int exit_code;	       /* exited */
	int signal;	       /* signaled, oom, killed: the signal's number */
	char why[160];	       /* !known: why the exit status is not known */
};

/* The verdict's and the audit record's status word: airlock run's (al_status_name), or
 * "stopped" when how it ended is not known. */
const char *ort_end_status(const struct ort_end *end);
/* A wait status (waitpid's form) as an end: exited with its code, or signaled with its signal. */
void ort_end_from_wait(int wstatus, struct ort_end *end);

/* create: forks the keeper of the container whose init init_pidfd refers to; it records into the
 * state directory dir. The keeper's pid, or -errno with err set. */
pid_t ort_keeper_start(int init_pidfd, const char *dir, struct al_error *err);
/* create's failure path: its own child, the keeper, killed and reaped. */
void ort_keeper_abort(pid_t keeper);

/* delete: how the container ended. killed: delete itself kills it (a created container, --force).
 * Waits at most ORT_KEEPER_WAIT_MS for a keeper about to record; the keeper is gone on return. */
void ort_keeper_collect(const struct ort_loaded *st, bool killed, struct ort_end *end);

#endif
