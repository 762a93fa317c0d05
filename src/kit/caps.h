/* caps.h — capabilities and other per-process privilege switches of the payload. */
#ifndef AL_KIT_CAPS_H
#define AL_KIT_CAPS_H

/* Empties the bounding and ambient sets (needs CAP_SETPCAP: call before leaving sandbox root). */
int caps_drop_bounding(void);
/* Empties the effective, permitted and inheritable sets. */
int caps_clear(void);
int caps_no_new_privs(void);

#endif
