#!/bin/sh
# Prints the digest of each BPF source the committed objects were built from
# (bpf/*.c and bpf/*.h, vmlinux.h included). internal/capture's tests compare
# it with bpf_sources.sha256, so a source edited without `make generate`
# fails `make test` on any machine, with no clang needed.
set -eu
cd "$(dirname "$0")/.."
for f in $(ls bpf/*.c bpf/*.h | LC_ALL=C sort); do
	printf '%s  %s\n' "$(sha256sum < "$f" | cut -d' ' -f1)" "$f"
done
