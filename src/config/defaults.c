/* defaults.c — the embedded configuration: airlock runs with no file at all, and every file is merged over this. */
#include "config.h"

/*
 * Parsed by the same code as any file, so it is validated the same way (a unit test loads it)
 * and `airlock config dump` round-trips. The limits equal the policy's built-in defaults
 * (policy.c) except cpus, which the policy leaves unlimited; like those defaults they are
 * enforced where the host can, and reported where it cannot.
 */
const char cfg_default_yaml[] =
	"# airlock's embedded configuration. A file (--config FILE, /etc/airlock/config.yaml or\n"
	"# ~/.config/airlock/config.yaml) is merged over it and overrides only the keys it sets.\n"
	"version: 1\n"
	"limits:\n"
	"  time: 30s\n"
	"  memory: 512M\n"
	"  cpus: 0.5\n"
	"  disk: 1G\n"
	"  output-limit: 1M\n"
	"network:\n"
	"  registries:\n"
	"    pypi: [pypi.org, files.pythonhosted.org]\n"
	"    npm: [registry.npmjs.org]\n"
	"  allow-private: []\n"
	"profiles:\n"
	"  # Explicit opt-out for local development: no namespaces, the host's filesystem and network.\n"
	"  none:\n"
	"    namespaces: false\n"
	"    network: host\n"
	"    filesystem: host\n"
	"    seccomp: off\n"
	"  untrusted-code-read:\n"
	"    filesystem: checkout-ro\n"
	"    network: none\n"
	"    seccomp: default\n"
	"    require: [userns, pidns, mntns, netns, seccomp]\n"
	"  untrusted-code-write:\n"
	"    filesystem: checkout-copy\n"
	"    network: [pypi, npm]\n"
	"    seccomp: default\n"
	"    require: [userns, pidns, mntns, netns, seccomp]\n"
	"languages:\n"
	"  python: {command: [python3], file: main.py, paths: [], env: {PYTHONDONTWRITEBYTECODE: \"1\"}}\n"
	"  javascript: {command: [node], file: main.js}\n"
	"  shell: {command: [bash], file: main.sh}\n"
	"  ruby: {command: [ruby], file: main.rb}\n"
	"  php: {command: [php], file: main.php}\n"
	"  perl: {command: [perl], file: main.pl}\n"
	"  c: {compile: [gcc, -O2, -o, main, main.c], command: [./main], file: main.c}\n";
