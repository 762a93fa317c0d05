/* api.c — what the manager's contract (api.h) defines beyond types: the results. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "manager/api.h"

struct srv_result *srv_result_new(void)
{
	struct srv_result *r = calloc(1, sizeof(struct srv_result));
	if (r)
		r->fd = -1;
	return r;
}

void srv_result_free(struct srv_result *r)
{
	if (!r)
		return;
	al_verdict_free(r->verdict);
	if (r->fd >= 0)
		close(r->fd);
	free(r->sandbox_id);
	free(r->cell_json);
	free(r->process_json);
	free(r->watch_json);
	free(r->sandboxes_json);
	free(r->state_json);
	free(r->snapshot_json);
	free(r->ended);
	free(r->not_kept);
	free(r->data);
	for (size_t i = 0; i < r->n_entries; i++)
		free(r->entries[i].name);
	free(r->entries);
	if (r->stat)
		free(r->stat->link_target);
	free(r->stat);
	free(r);
}

void srv_sandbox_infos_free(struct srv_sandbox_info *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i].metadata_json);
}
