#!/usr/bin/env bash
# deps.sh — installs what airlock needs to build, test and benchmark on Debian 12 (idempotent; run as root).
set -euo pipefail

pkgs=(build-essential cmake pkg-config libjansson-dev libseccomp-dev libcmocka-dev libyaml-dev libssl-dev libpcre2-dev libmicrohttpd-dev libsystemd-dev
      libarchive-dev libacl1-dev libzstd-dev liblz4-dev libbz2-dev liblzma-dev zlib1g-dev nettle-dev mmdebstrap busybox-static
      openssl curl chromium python3-yaml containerd runc podman docker.io
      python3 python3-numpy python3-matplotlib python3-pandas perl bash util-linux uidmap iproute2 time procps strace
      bubblewrap runsc crun hyperfine gnuplot-nox man-db ruby php-cli
      systemd # systemd-analyze verify and systemd-socket-activate: tests/integration/install.sh
      cppcheck clang-tidy clang-format clang libclang-rt-14-dev ccache
      # the test VM (scripts/vm/run.sh): qemu, Debian's kernel and its modules, the initramfs's tools
      qemu-system-x86 linux-image-amd64 kmod cpio xz-utils binutils)
command -v node >/dev/null 2>&1 || pkgs+=(nodejs)
command -v npm >/dev/null 2>&1 || pkgs+=(npm)

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  if [ "$(id -u)" != 0 ]; then
    echo "deps.sh: missing packages: ${missing[*]} (run as root to install them)" >&2
    exit 1
  fi
  echo "deps.sh: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The official MCP SDK, the tests' MCP client (tests/mcp/sdk: the versions its lock file names),
# from the npm registry; not when the lock file's tree is already in place.
if ! cmp -s tests/mcp/sdk/package-lock.json tests/mcp/sdk/node_modules/.airlock-lock 2>/dev/null; then
  (cd tests/mcp/sdk && npm ci --no-audit --no-fund --loglevel=error >/dev/null &&
   cp package-lock.json node_modules/.airlock-lock)
fi
# The official E2B SDKs, the clients of the E2B front end's tests (tests/e2b: the versions its
# lock file names), likewise.
if ! cmp -s tests/e2b/package-lock.json tests/e2b/node_modules/.airlock-lock 2>/dev/null; then
  (cd tests/e2b && npm ci --no-audit --no-fund --loglevel=error >/dev/null &&
   cp package-lock.json node_modules/.airlock-lock)
fi
# xterm.js, which the approver's console embeds at build time (src/http/console/npm: the versions
# its lock file names, checked against their integrity hashes by npm ci); the build reads it there.
if ! cmp -s src/http/console/npm/package-lock.json src/http/console/npm/node_modules/.airlock-lock 2>/dev/null; then
  (cd src/http/console/npm && npm ci --no-audit --no-fund --loglevel=error >/dev/null &&
   cp package-lock.json node_modules/.airlock-lock)
fi
