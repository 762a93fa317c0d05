/* forkmm.h — what a fork copies of the caller's address space: a process that runs only a few of
 * the shared objects it inherited can drop the others, and its forks copy less. */
#ifndef AL_KIT_FORKMM_H
#define AL_KIT_FORKMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Unmaps every private mapping of a file that holds none of the addresses in keep[0..n): what is
 * left is the kept objects, anonymous memory (heap, stacks), shared mappings and the kernel's
 * ([vdso], [stack]...). Only for a process that from then on runs nothing but the code of the kept
 * objects and reads nothing of the others (any touch of what went faults: SIGSEGV), and whose
 * calls into them were bound at load (fm_bound_now). Allocates nothing. The number of mappings
 * unmapped, or -errno (-ENOENT, unmapping nothing, when an address of keep lies in no mapping of a
 * file; at most 16 addresses naming at most 8 files). */
int fm_shed_objects(const uintptr_t *keep, size_t n);

/* Whether the shared object (or program) holding addr had its symbols bound at load (-z now, or
 * statically linked). Lazily bound, its first call of a function looks the symbol up through
 * every loaded object, some of which fm_shed_objects took: it would fault there. Takes the
 * dynamic loader's lock: call it before the fork, never in a forked child of a threaded process. */
bool fm_bound_now(uintptr_t addr);

#endif
