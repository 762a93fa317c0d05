/* writeback.h — a --workdir job's changes (its overlay's upper layer) applied to the host directory. */
#ifndef AL_SUPERVISOR_WRITEBACK_H
#define AL_SUPERVISOR_WRITEBACK_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct wb_stats {
	uint64_t files, dirs, deleted, skipped, bytes;
	char error[256]; /* the first failure, "" if none */
};

/* The upper layer's directory fd, received once from the sandbox's init; -ENOENT if none came. */
int wb_receive_upper(int sock);
/* Applies upper (a directory fd) to workdir, all or nothing against limit (--disk) bytes of
 * data. Call only after the job is gone. 0 or -errno. */
int wb_apply(int upper, const char *workdir, uint64_t limit, struct wb_stats *st);
/* Copies size bytes of in to out, keeping holes as holes. 0 or -errno. */
int wb_copy_data(int in, int out, off_t size);

/* --keep-changes: compares copy (the job's copy of src_dir, a directory fd) with src_dir and
 * writes what was changed or added into dir (created 0700 if missing, empty); deletions are
 * counted; at most limit bytes of data are written. Call only after the job is gone. 0 or -errno (st->error says what failed). */
int wb_export(int copy, const char *src_dir, const char *dir, uint64_t limit, struct wb_stats *st);

#endif
