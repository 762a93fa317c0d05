/* language.h — how a language runs code: its file in the workspace, its interpreter or compile
 * step, the host paths and environment it needs; and whether this host has it. */
#ifndef AL_CONFIG_LANGUAGE_H
#define AL_CONFIG_LANGUAGE_H

#include <stdbool.h>
#include <stddef.h>

#include "config/config.h"

/* Puts the code at /workspace/<file> and the language's binds and environment into p, and
 * sets the argv (interpreter + file + args; or a shell that compiles and then runs). root: the
 * tree the job runs on (its image's rootfs, "" for the host's), NULL for p's own. */
int lang_apply(const struct cfg_language *l, const char *root, const char *code, size_t len, char *const *args,
	       size_t nargs, struct al_policy *p, struct al_error *err);

/* The program a language's command starts, as the tree at root ("" or NULL: the host's) has it:
 * bash (the shell language's) falls back to sh where that tree has no bash but an sh (busybox,
 * alpine-like images); anything else is itself. */
const char *lang_program(const struct cfg_language *l, const char *root);

/* Every configured language's configuration beneath /etc into p (pol_add_etc): what any job may
 * run reads at start, so each sandbox shows the union, whatever its command. */
int cfg_apply_etc(const struct cfg *c, struct al_policy *p, struct al_error *err);

/* Is the language runnable under p (on the host, or in p's image or rootfs; p may be NULL)?
 * When not, *why names the missing program (text in buf). */
bool lang_available(const struct cfg_language *l, const struct al_policy *p, char *buf, size_t cap, const char **why);

#endif
