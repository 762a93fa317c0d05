/* audit.h — `airlock audit tail|grep`: reading the server's audit log from the command line. */
#ifndef AL_CLI_AUDIT_H
#define AL_CLI_AUDIT_H

/* argv[0] is "audit". Returns the exit status: 0; 1 when grep matched nothing; 125 on error. */
int cli_audit(int argc, char **argv);

#endif
