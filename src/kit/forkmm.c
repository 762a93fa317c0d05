/* forkmm.c — a process that keeps only the shared objects it runs, so its forks copy little (from /proc/self/maps).
 *
 * A held sandbox's init is a copy of the supervisor, so each exec init it forks copied every
 * mapping of every library the supervisor loaded (about a hundred in a dynamically linked one),
 * and tore them down again at its exit, for code neither it, its payload nor init itself ever
 * runs. Unmapped, rather than only left out of forks (MADV_DONTFORK): a fork then still walks and
 * prunes the parent's whole tree of mappings, which costs most of what it saved. */
#include "forkmm.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "util/cleanup.h"

#define FM_MAX_KEPT 8  /* objects kept */
#define FM_MAX_KEEP 16 /* addresses naming them */

struct fm_map {
	uintptr_t start, end;
	unsigned long dev_major, dev_minor, inode;
	bool priv; /* a private mapping ('p'), not a shared one */
};

struct fm_file {
	unsigned long dev_major, dev_minor, inode;
};

/* One line of /proc/self/maps: "start-end perms offset major:minor inode [path]". */
static bool parse_line(const char *s, struct fm_map *m)
{
	char *e;
	m->start = (uintptr_t)strtoull(s, &e, 16);
	if (*e != '-')
		return false;
	m->end = (uintptr_t)strtoull(e + 1, &e, 16);
	if (*e != ' ' || strlen(e) < 6)
		return false;
	m->priv = e[4] == 'p';
	(void)strtoull(e + 6, &e, 16); /* offset */
	m->dev_major = strtoul(e, &e, 16);
	if (*e != ':')
		return false;
	m->dev_minor = strtoul(e + 1, &e, 16);
	m->inode = strtoul(e, &e, 10);
	return *e == ' ' || *e == 0;
}

static bool same_file(const struct fm_map *m, const struct fm_file *f)
{
	return m->inode == f->inode && m->dev_major == f->dev_major && m->dev_minor == f->dev_minor;
}

#define FM_BATCH 128

struct fm_state {
	const uintptr_t *keep;
	size_t nkeep;
	struct fm_file kept[FM_MAX_KEPT];
	int nkept;
	unsigned found; /* bit i: keep[i] lies in a mapping of a file */
	bool shed;	/* the second pass: collect what goes */
	struct {
		uintptr_t start, end;
	} go[FM_BATCH];
	int ngo;
};

static void on_map(struct fm_state *st, const struct fm_map *m)
{
	if (m->inode == 0)
		return; /* anonymous, or the kernel's: always kept */
	if (!st->shed) {
		for (size_t i = 0; i < st->nkeep; i++) {
			if (st->keep[i] < m->start || st->keep[i] >= m->end)
				continue;
			bool known = false;
			for (int k = 0; k < st->nkept && !known; k++)
				known = same_file(m, &st->kept[k]);
			if (!known && st->nkept == FM_MAX_KEPT)
				continue; /* not found: nothing will be unmapped */
			if (!known)
				st->kept[st->nkept++] = (struct fm_file){m->dev_major, m->dev_minor, m->inode};
			st->found |= 1u << i;
		}
		return;
	}
	if (!m->priv || st->ngo == FM_BATCH)
		return;
	for (int i = 0; i < st->nkept; i++)
		if (same_file(m, &st->kept[i]))
			return;
	st->go[st->ngo].start = m->start;
	st->go[st->ngo++].end = m->end;
}

/* Reads /proc/self/maps line by line through a fixed buffer, calling on_map for each. */
static int walk_maps(struct fm_state *st)
{
	cleanup_close int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	char buf[4096];
	size_t have = 0;
	for (;;) {
		ssize_t n = read(fd, buf + have, sizeof(buf) - 1 - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		have += (size_t)n;
		buf[have] = 0;
		char *line = buf, *nl;
		while ((nl = strchr(line, '\n'))) {
			*nl = 0;
			struct fm_map m;
			if (parse_line(line, &m))
				on_map(st, &m);
			line = nl + 1;
		}
		size_t rest = have - (size_t)(line - buf);
		if (n == 0)
			return 0; /* a last line without its newline cannot be (the kernel ends each) */
		if (rest == sizeof(buf) - 1)
			return -EOVERFLOW; /* a line longer than the buffer: a path of 4 KiB */
		memmove(buf, line, rest);
		have = rest;
	}
}

int fm_shed_objects(const uintptr_t *keep, size_t n)
{
	if (n > FM_MAX_KEEP)
		return -EINVAL;
	struct fm_state st = {.keep = keep, .nkeep = n};
	int r = walk_maps(&st);
	if (r < 0)
		return r;
	/* An address to keep that no file mapping holds (misread, or not code of ours): shedding
	 * would take what we run. Nothing is unmapped then. */
	if (st.found != (1u << n) - 1)
		return -ENOENT;
	st.shed = true;
	int total = 0;
	do { /* the listing is read whole before anything of it goes, a batch at a time */
		st.ngo = 0;
		if ((r = walk_maps(&st)) < 0)
			return r;
		for (int i = 0; i < st.ngo; i++) {
			void *at = (void *)st.go[i].start; // NOLINT(performance-no-int-to-ptr): the kernel's listing
			if (munmap(at, st.go[i].end - st.go[i].start) < 0)
				return -errno;
			total++;
		}
	} while (st.ngo == FM_BATCH);
	return total;
}

struct fm_bind {
	uintptr_t addr;
	int found; /* 1: bound at load, 0: lazily, -1: no object holds addr */
};

/* Whether the object's dynamic section asks for every symbol at load (-z now). */
static int object_bound_now(const struct dl_phdr_info *info)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		if (info->dlpi_phdr[i].p_type != PT_DYNAMIC)
			continue;
		uintptr_t at = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
		const ElfW(Dyn) *d = (const ElfW(Dyn) *)at; // NOLINT(performance-no-int-to-ptr): the loader's
		for (; d->d_tag != DT_NULL; d++)
			if ((d->d_tag == DT_FLAGS && (d->d_un.d_val & DF_BIND_NOW)) ||
			    (d->d_tag == DT_FLAGS_1 && (d->d_un.d_val & DF_1_NOW)) || d->d_tag == DT_BIND_NOW)
				return 1;
		return 0;
	}
	return 1; /* no dynamic section (static): nothing is bound later */
}

static int on_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct fm_bind *b = arg;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t start = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && b->addr >= start && b->addr < start + ph->p_memsz) {
			b->found = object_bound_now(info);
			return 1;
		}
	}
	return 0;
}

bool fm_bound_now(uintptr_t addr)
{
	struct fm_bind b = {.addr = addr, .found = -1};
	dl_iterate_phdr(on_object, &b);
	return b.found == 1;
}
