/* quota.h — what each principal holds at once, counted by the principal's name (pure: the caller locks). */
#ifndef AL_MANAGER_QUOTA_H
#define AL_MANAGER_QUOTA_H

#include <stddef.h>

/* One counter per principal that holds anything; a principal at zero takes no memory. */
struct mq_entry {
	char *owner;
	unsigned n;
};

struct mq_table {
	struct mq_entry *v;
	size_t n, cap;
};

/* Counts one more for owner unless it already holds max: 0, -EAGAIN (at its quota), -ENOMEM. */
int mq_take(struct mq_table *t, const char *owner, unsigned max);
/* Gives one back (a no-op for an owner holding nothing). */
void mq_give(struct mq_table *t, const char *owner);
unsigned mq_held(const struct mq_table *t, const char *owner);
void mq_clear(struct mq_table *t);

#endif
