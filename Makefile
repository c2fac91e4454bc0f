# whyslow: `make demo` sets up, builds and shows whyslow on the seed cases;
# `make check` runs the fast tier (no root: vet and the unprivileged tests);
# `make test` runs every test (as root: they load BPF and make slow disks).

GO      ?= go
BIN     := bin
# The version, commit and date a binary says (whyslow version): the last
# tag, else 0.0.0-<date>-<commit> (scripts/version.sh); the date is the
# commit's (SOURCE_DATE_EPOCH), so that a commit always builds the same bytes.
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
export SOURCE_DATE_EPOCH
VERSION    := $(shell ./scripts/version.sh)
COMMIT     := $(shell git rev-parse HEAD 2>/dev/null)
BUILD_DATE := $(shell date -u -d @$(SOURCE_DATE_EPOCH) +%Y-%m-%dT%H:%M:%SZ)
CLI        := github.com/whyslow/whyslow/internal/cli
# --exclude-libs: DuckDB's ~60k C++ symbols stay out of the dynamic symbol
# table. Exported, they were 6.7 MB the loader read at every start (all of it
# resident) and relocations it looked up by name.
LDFLAGS := -X $(CLI).Version=$(VERSION) -X $(CLI).Commit=$(COMMIT) -X $(CLI).BuildDate=$(BUILD_DATE) \
	-extldflags=-Wl,--exclude-libs,ALL

.PHONY: all deps jaeger otelcol build dist generate vmlinux check-generated check-mod check-fmt check test demo bench fuzz accuracy clean

all: build

# What a fresh machine lacks: tools the tests and scenarios run (fio,
# mkfs.ext4, losetup, setpriv, python3 with Flask) and the BPF toolchain
# that `make generate` needs. Idempotent: installs only what is missing.
deps:
	@./scripts/deps.sh

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/whyslow ./cmd/whyslow
	$(GO) build -o $(BIN)/slowdisk ./cmd/slowdisk

# The release artefacts, from the commit checked out: dist/whyslow_<version>_amd64.deb
# and dist/whyslow-<version>-linux-amd64.tar.gz (the same tree), with
# dist/SHA256SUMS. The binary is stripped and built with -trimpath; the man
# pages and completions are generated from the commands (packaging/gendocs),
# the licence notices of Go, the Go modules and DuckDB's libraries linked into
# the binary from its build info and the module cache (packaging/notices);
# nfpm packs them (packaging/pack, a module of its own) with the units,
# licence and docs that packaging/nfpm.yaml lists. Every time in them is the
# commit's: two runs give the same bytes. Needs dpkg-shlibdeps (dpkg-dev),
# which names the shared libraries' packages.
DIST_STAGE := dist/.stage
dist:
	@command -v dpkg-shlibdeps >/dev/null || { echo "make dist: dpkg-shlibdeps is needed (apt-get install dpkg-dev)" >&2; exit 1; }
	rm -rf dist
	$(GO) build -trimpath -ldflags "-s -w -buildid= $(LDFLAGS)" -o $(DIST_STAGE)/usr/bin/whyslow ./cmd/whyslow
	$(GO) run -trimpath ./packaging/gendocs -root $(DIST_STAGE) -version $(VERSION)
	$(GO) run -trimpath ./packaging/notices -go $(GO) -bin $(DIST_STAGE)/usr/bin/whyslow -o $(DIST_STAGE)/usr/share/doc/whyslow/THIRD-PARTY-NOTICES
	cd packaging/pack && $(GO) build -trimpath -o $(CURDIR)/$(BIN)/whyslow-pack .
	$(BIN)/whyslow-pack -config packaging/nfpm.yaml -stage $(DIST_STAGE) -version $(VERSION) -out dist
	rm -rf $(DIST_STAGE)
	cd dist && sha256sum whyslow_$(VERSION)_amd64.deb whyslow-$(VERSION)-linux-amd64.tar.gz > SHA256SUMS

# Rebuilds the bpf2go objects from the committed C sources and vmlinux.h
# (clang, llvm, bpftool, libbpf-dev), and records the sources' digest that
# `make test` checks.
generate:
	cd internal/capture && $(GO) generate
	./scripts/bpf-sources.sh > internal/capture/bpf_sources.sha256

# vmlinux.h is one kernel's BTF, refreshed on purpose only: CO-RE makes one
# header serve every kernel, so it is never compared with the running one.
vmlinux:
	bpftool btf dump file /sys/kernel/btf/vmlinux format c > bpf/vmlinux.h

# Fails when the committed objects are not what this machine's clang makes
# from the committed sources. Not part of `make test`: another clang version
# may emit other bytes from the same sources.
check-generated: generate
	@git diff --quiet -- internal/capture || { \
		echo "generated files are stale: run 'make generate' and commit" >&2; \
		git diff --stat -- internal/capture >&2; exit 1; }

# Fails when go.mod or go.sum are not what `go mod tidy` makes.
check-mod:
	@$(GO) mod tidy -diff >/dev/null || { \
		echo "go.mod/go.sum are not tidy: run 'go mod tidy' and commit" >&2; exit 1; }
	@cd packaging/pack && $(GO) mod tidy -diff >/dev/null || { \
		echo "packaging/pack/go.mod/go.sum are not tidy: run 'go mod tidy' there and commit" >&2; exit 1; }
	@cd scripts/otelcol && $(GO) mod tidy -diff >/dev/null || { \
		echo "scripts/otelcol/go.mod/go.sum are not tidy: run 'go mod tidy' there and commit" >&2; exit 1; }

# Fails when a Go file is not as gofmt writes it.
check-fmt:
	@files=$$(gofmt -l .); [ -z "$$files" ] || { \
		echo "not gofmt'd (run gofmt -w on them and commit):" >&2; echo "$$files" >&2; exit 1; }

# The fast tier, for any user, root or not, CI or not: vet, formatting, a tidy
# go.mod, and every test that needs neither root nor BPF (decoders, store,
# analyses and the golden stories of internal/cli on recordings built by
# storetest, the HTML report in Chromium). -short makes every privileged test
# skip (harness.RequireRoot): it changes nothing on the machine, so it needs
# no lock and runs packages in parallel. `make test` runs everything.
check: check-fmt check-mod
	$(GO) vet ./...
	$(GO) test -short -count=1 ./...

# The OTLP tests' receivers, built in the background when missing (minutes
# on a new machine); the tests wait for them: Jaeger (scripts/jaeger.sh) and
# the OpenTelemetry Collector (scripts/otelcol.sh, from scripts/otelcol).
jaeger:
	@./scripts/jaeger.sh
	@./scripts/otelcol.sh

otelcol:
	@./scripts/otelcol.sh

# The packages whose tests change machine-wide state (loop devices,
# throttles, dirty limits, cgroups, sysctls) or count CPU and run-queue time
# tightly: `make test` runs them one at a time (-p 1), after the others, so
# that none runs beside another or beside load. In test/scenarios the tests
# that only wait (waitsOnly) run 3 at a time, after its serial ones.
SERIAL_PKGS := internal/capture internal/slowdisk internal/procsample test/accuracy test/live test/record test/scenarios
# Privileged, but changing nothing another test reads and counting no time:
# test/dist builds and installs the package. It runs with the pure packages.
PARALLEL_PRIVILEGED_PKGS := test/dist
MODULE := github.com/whyslow/whyslow

# Every other package 2 at a time (-p 2: they only compute), then the serial
# ones; both run whatever the first gave, and the target fails if either
# did. The digest of the BPF sources is checked by a test (internal/capture),
# with no clang needed.
test: deps jaeger build check-fmt check-mod
	$(GO) vet ./...
	@pure=$$($(GO) list ./... | grep -vxF $(foreach p,$(SERIAL_PKGS),-e $(MODULE)/$(p))); \
	echo "$(GO) test -p 2 -count=1 -timeout 30m <every package but the serial ones>"; \
	$(GO) test -p 2 -count=1 -timeout 30m $$pure; first=$$?; \
	echo "$(GO) test -p 1 -parallel 3 -count=1 -timeout 30m $(addprefix ./,$(SERIAL_PKGS))"; \
	$(GO) test -p 1 -parallel 3 -count=1 -timeout 30m $(addprefix ./,$(SERIAL_PKGS)) || exit 1; exit $$first

# Go's native fuzzing of what reads untrusted bytes, FUZZTIME each (the
# seed corpora also run in `make test`, as ordinary tests). Damaged
# recordings are not fuzzed in-process (DuckDB's crashes on them would end
# the fuzzer): test/record's TestDamagedRecordings makes 260 of them a run.
FUZZTIME ?= 60s
FUZZ_TARGETS := FuzzDecode:./internal/capture FuzzRequestLabel:./internal/analysis/protocol FuzzFramers:./internal/analysis/protocol FuzzSafe:./internal/format \
	FuzzJSONEscapesInvisible:./internal/output FuzzServing:./internal/watch
fuzz:
	@for t in $(FUZZ_TARGETS); do \
		echo "fuzzing $${t%%:*} for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$${t%%:*}$$" -fuzztime $(FUZZTIME) $${t#*:} || exit 1; \
	done

# As root, ~10 minutes: 300 generated programs under whyslow run, ACCURACY.md written from them (test/accuracy).
accuracy:
	$(GO) test -count=1 -timeout 60m ./test/accuracy -run TestAccuracyFull -accuracy.full

demo: deps build
	@./examples/demo.sh

bench: deps build
	@./bench/run.sh

clean:
	rm -rf $(BIN) dist
