# whyslow: `make demo` sets up, builds and shows whyslow on the seed cases;
# `make test` runs every test (as root: they load BPF and make slow disks).

GO      ?= go
BIN     := bin
VERSION := $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/whyslow/whyslow/internal/cli.Version=$(VERSION)

.PHONY: all deps build generate check-generated test demo bench clean

all: build

# What a fresh machine lacks: tools the tests and scenarios run (fio,
# mkfs.ext4, losetup, setpriv, python3 with Flask) and the BPF toolchain
# that `make generate` needs. Idempotent: installs only what is missing.
deps:
	@./scripts/deps.sh

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/whyslow ./cmd/whyslow
	$(GO) build -o $(BIN)/slowdisk ./cmd/slowdisk

# Rebuilds vmlinux.h from this kernel's BTF and the bpf2go objects.
generate:
	bpftool btf dump file /sys/kernel/btf/vmlinux format c > bpf/vmlinux.h
	cd internal/capture && $(GO) generate

# Fails when the committed generated files are not what `make generate` makes.
check-generated: generate
	@git diff --quiet -- bpf internal/capture || { \
		echo "generated files are stale: run 'make generate' and commit" >&2; \
		git diff --stat -- bpf internal/capture >&2; exit 1; }

# -p 1: tests that change machine-wide state (dirty limits, throttles, loop
# devices) must not run at the same time as each other.
test: deps build check-generated
	$(GO) vet ./...
	$(GO) test -p 1 -count=1 -timeout 30m ./...

demo: deps build
	@./examples/demo.sh

bench: deps build
	@./bench/run.sh

clean:
	rm -rf $(BIN)
