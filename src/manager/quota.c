/* quota.c — what each principal holds at once, counted by the principal's name (pure: the caller locks). */
#include "manager/quota.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static struct mq_entry *find(const struct mq_table *t, const char *owner)
{
	for (size_t i = 0; i < t->n; i++)
		if (strcmp(t->v[i].owner, owner ? owner : "") == 0)
			return &t->v[i];
	return NULL;
}

int mq_take(struct mq_table *t, const char *owner, unsigned max)
{
	struct mq_entry *e = find(t, owner);
	if (e && max && e->n >= max)
		return -EAGAIN;
	if (e) {
		e->n++;
		return 0;
	}
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 8;
		struct mq_entry *v = realloc(t->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		t->v = v;
		t->cap = cap;
	}
	char *name = strdup(owner ? owner : "");
	if (!name)
		return -ENOMEM;
	t->v[t->n++] = (struct mq_entry){.owner = name, .n = 1};
	return 0;
}

void mq_give(struct mq_table *t, const char *owner)
{
	struct mq_entry *e = find(t, owner);
	if (!e || --e->n > 0)
		return;
	free(e->owner);
	*e = t->v[--t->n]; /* order does not matter */
}

unsigned mq_held(const struct mq_table *t, const char *owner)
{
	const struct mq_entry *e = find(t, owner);
	return e ? e->n : 0;
}

void mq_clear(struct mq_table *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->v[i].owner);
	free(t->v);
	*t = (struct mq_table){0};
}
