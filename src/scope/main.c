/* main.c — airlock-scope: asks the calling user's systemd manager for a transient scope with Delegate=yes
 * holding its parent (airlock), the way runc's, crun's and podman's systemd cgroup drivers get a
 * cgroup an ordinary user may manage.
 *
 * A separate executable because libsystemd ships no static library while the airlock binary is
 * static for start-up speed (as src/serve/main.c is for libmicrohttpd): the library's
 * host_systemd_scope (src/host/systemd.c) runs it from airlock's own directory, only when airlock
 * runs as an ordinary user in a cgroup it may not manage. It moves nothing but its parent, and
 * only through the manager, which moves only what the user already owns.
 *
 *   airlock-scope start   StartTransientUnit("airlock-<ppid>-<rand>.scope", "fail", PIDs=[ppid],
 *                         Delegate=yes, CollectMode=inactive-or-failed), then waits for the job's
 *                         JobRemoved signal: prints the unit's name and exits 0 once the scope runs.
 *   airlock-scope probe   connects and prints the manager's version (for `airlock check`).
 *
 * Failures print one line naming the step on standard output and exit 1. The bus: the user bus
 * (sd_bus_open_user: $DBUS_SESSION_BUS_ADDRESS or $XDG_RUNTIME_DIR/bus), else the manager's
 * private socket $XDG_RUNTIME_DIR/systemd/private, which every user manager has, with or
 * without a D-Bus daemon. */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-bus.h>

#define SD_DEST	 "org.freedesktop.systemd1"
#define SD_PATH	 "/org/freedesktop/systemd1"
#define SD_IFACE "org.freedesktop.systemd1.Manager"
/* Bounds the whole request: a manager that does not answer must not hold airlock's start. */
#define SCOPE_TIMEOUT_US (10ULL * 1000 * 1000)

struct scope_wait {
	const char *unit;
	char result[32]; /* the job's result once JobRemoved named our unit: "done", "failed", ... */
};

static int scope_fail(const char *step, int r, const sd_bus_error *e)
{
	printf("%s: %s\n", step, e && sd_bus_error_is_set(e) && e->message ? e->message : strerror(-r));
	return 1;
}

/* The user bus where one runs, else the manager's own socket. */
static int scope_connect(sd_bus **out, char *how, size_t size)
{
	int r = sd_bus_open_user(out);
	if (r >= 0) {
		snprintf(how, size, "the user bus");
		return 0;
	}
	const char *rt = getenv("XDG_RUNTIME_DIR");
	if (!rt || rt[0] != '/') {
		snprintf(how, size, "no user bus (%s), no XDG_RUNTIME_DIR", strerror(-r));
		return r;
	}
	sd_bus *bus = NULL;
	char addr[4200];
	snprintf(addr, sizeof(addr), "unix:path=%s/systemd/private", rt);
	if ((r = sd_bus_new(&bus)) < 0 || (r = sd_bus_set_address(bus, addr)) < 0 || (r = sd_bus_start(bus)) < 0) {
		snprintf(how, size, "no user bus, %s/systemd/private: %s", rt, strerror(-r));
		sd_bus_unref(bus);
		return r;
	}
	snprintf(how, size, "%s/systemd/private", rt);
	*out = bus;
	return 0;
}

/* JobRemoved(u id, o job, s unit, s result): matched by unit name, so a signal that arrives
 * before the reply naming the job is not missed. */
static int scope_on_removed(sd_bus_message *m, void *data, sd_bus_error *e)
{
	(void)e;
	struct scope_wait *w = data;
	uint32_t id;
	const char *job, *unit, *result;
	if (sd_bus_message_read(m, "uoss", &id, &job, &unit, &result) >= 0 && strcmp(unit, w->unit) == 0)
		snprintf(w->result, sizeof(w->result), "%s", result);
	return 0;
}

static int scope_request(sd_bus *bus, const char *unit, pid_t pid, sd_bus_error *e, sd_bus_message **reply)
{
	sd_bus_message *m = NULL;
	char desc[96];
	snprintf(desc, sizeof(desc), "airlock supervisor %d (delegated cgroup for its sandboxes)", (int)pid);
	int r = sd_bus_message_new_method_call(bus, &m, SD_DEST, SD_PATH, SD_IFACE, "StartTransientUnit");
	if (r >= 0)
		r = sd_bus_message_append(m, "ss", unit, "fail");
	if (r >= 0)
		r = sd_bus_message_open_container(m, 'a', "(sv)");
	if (r >= 0)
		r = sd_bus_message_append(m, "(sv)(sv)(sv)(sv)(sv)(sv)(sv)", "Description", "s", desc, "PIDs", "au", 1,
					  (uint32_t)pid, "Delegate", "b", 1, "CollectMode", "s", "inactive-or-failed",
					  "MemoryAccounting", "b", 1, "TasksAccounting", "b", 1, "CPUAccounting", "b",
					  1);
	if (r >= 0)
		r = sd_bus_message_close_container(m);
	if (r >= 0)
		r = sd_bus_message_append(m, "a(sa(sv))", 0);
	if (r >= 0)
		r = sd_bus_call(bus, m, SCOPE_TIMEOUT_US, e, reply);
	sd_bus_message_unref(m);
	return r;
}

static uint64_t scope_now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static int scope_start(sd_bus *bus)
{
	pid_t pid = getppid();
	uint32_t rnd = 0;
	if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd))
		rnd = (uint32_t)time(NULL);
	char unit[64];
	snprintf(unit, sizeof(unit), "airlock-%d-%08" PRIx32 ".scope", (int)pid, rnd);
	struct scope_wait w = {.unit = unit};
	sd_bus_slot *slot = NULL;
	sd_bus_error e = SD_BUS_ERROR_NULL;
	sd_bus_message *reply = NULL;
	/* No sender in the match: on the private socket the manager's messages carry none. */
	int r = sd_bus_match_signal(bus, &slot, NULL, SD_PATH, SD_IFACE, "JobRemoved", scope_on_removed, &w);
	if (r < 0)
		return scope_fail("subscribing to JobRemoved", r, NULL);
	if ((r = scope_request(bus, unit, pid, &e, &reply)) < 0) {
		int rc = scope_fail("StartTransientUnit", r, &e);
		sd_bus_error_free(&e);
		return rc;
	}
	sd_bus_message_unref(reply);
	uint64_t end = scope_now_us() + SCOPE_TIMEOUT_US;
	while (!w.result[0]) {
		uint64_t now = scope_now_us();
		if (now >= end)
			return scope_fail("waiting for the scope's start job", -ETIMEDOUT, NULL);
		if ((r = sd_bus_process(bus, NULL)) < 0)
			return scope_fail("waiting for the scope's start job", r, NULL);
		if (r == 0 && (r = sd_bus_wait(bus, end - now)) < 0 && r != -EINTR)
			return scope_fail("waiting for the scope's start job", r, NULL);
	}
	sd_bus_slot_unref(slot);
	if (strcmp(w.result, "done") != 0) {
		/* "failed" is most often the manager unable to move us: it may move only processes
		 * whose cgroup lies within the user's own subtree. */
		printf("%s did not start ('%s': is airlock's cgroup outside the manager's subtree?)\n", unit, w.result);
		return 1;
	}
	printf("%s\n", unit);
	return 0;
}

static int scope_probe(sd_bus *bus, const char *how)
{
	sd_bus_error e = SD_BUS_ERROR_NULL;
	char *version = NULL;
	int r = sd_bus_get_property_string(bus, SD_DEST, SD_PATH, SD_IFACE, "Version", &e, &version);
	if (r < 0) {
		int rc = scope_fail("reading the manager's Version", r, &e);
		sd_bus_error_free(&e);
		return rc;
	}
	printf("systemd %s, through %s\n", version, how);
	free(version);
	return 0;
}

int main(int argc, char **argv)
{
	bool start = argc == 2 && strcmp(argv[1], "start") == 0;
	if (!start && !(argc == 2 && strcmp(argv[1], "probe") == 0)) {
		fprintf(stderr, "usage: airlock-scope start|probe (run by airlock, see docs/limits.md)\n");
		return 2;
	}
	/* A manager of root's is not an ordinary user's: as root airlock never asks, and neither
	 * does this program. */
	if (geteuid() == 0) {
		printf("not for root: root's cgroups are the host's to delegate\n");
		return 1;
	}
	sd_bus *bus = NULL;
	char how[4400];
	int r = scope_connect(&bus, how, sizeof(how));
	if (r < 0) {
		printf("no manager: %s\n", how);
		return 1;
	}
	int rc = start ? scope_start(bus) : scope_probe(bus, how);
	if (rc != 0)
		fflush(stdout);
	sd_bus_flush_close_unref(bus);
	return rc;
}
