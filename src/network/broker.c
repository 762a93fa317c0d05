/* broker.c — placeholder until the credential broker lands (see broker.h). */
#include "network/broker.h"

#include <errno.h>
#include <stdlib.h>

#include "util/error.h"

struct al_broker_list {
	size_t n;
};

int al_broker_list_new(struct al_broker_list **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

void al_broker_list_free(struct al_broker_list *bl)
{
	free(bl);
}

int al_broker_list_add(struct al_broker_list *bl, const char *spec, struct al_error *err)
{
	(void)bl;
	(void)spec;
	return al_err(err, ENOTSUP, "--broker: not built yet");
}

size_t al_broker_count(const struct al_broker_list *bl)
{
	return bl ? bl->n : 0;
}

const char *al_broker_name(const struct al_broker_list *bl, size_t i)
{
	(void)bl;
	(void)i;
	return NULL;
}

void broker_serve(const struct al_broker_list *bl, int client_fd, const struct pr_request *req, const char *rest,
		  size_t nrest, int idle_timeout_ms, struct px_record *rec)
{
	(void)bl;
	(void)req;
	(void)rest;
	(void)nrest;
	(void)idle_timeout_ms;
	rec->kind = PXK_BROKER;
	rec->decision = PXD_ERROR;
	rec->reason = "no broker";
	rec->status = 404;
	px_reply(client_fd, 404, "no such broker", 1000);
}
