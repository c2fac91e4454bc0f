#!/bin/sh
# Jaeger all-in-one (v2), the OTLP endpoint the export otlp tests read traces
# back from (`make test` only; `make demo` has no use for it): a Go program at
# a pinned version, built in its own module (its replace directives refuse
# `go install`) beside go's tools, never a tool dependency of whyslow's module,
# whose dependencies it would pin.
#
# Building it takes minutes of two CPUs on a new machine, about as long as
# the tests before the OTLP ones: it builds in the background, at the lowest
# priority, holding $jaeger.lock; the tests wait on that lock for it
# (test/scenarios, startJaeger). With WAIT=1 this script waits too.
set -eu
version=v1.76.0
bin="$(go env GOPATH)/bin"
jaeger="$bin/jaeger"
if "$jaeger" version 2>/dev/null | grep -q "\"gitVersion\":\"$version\""; then
	exit 0
fi
mkdir -p "$bin"
if ! flock -n "$jaeger.lock" true; then
	echo "jaeger: a build is under way ($jaeger.log)" >&2
else
	echo "installing: jaeger $version (go build, in the background: $jaeger.log)" >&2
	src="$(GOFLAGS= go mod download -json "github.com/jaegertracing/jaeger@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
	[ -n "$src" ] || { echo "jaeger: could not download github.com/jaegertracing/jaeger@$version" >&2; exit 1; }
	nohup flock "$jaeger.lock" sh -c 'cd "$1" && GOFLAGS=-mod=mod nice -n 19 go build -o "$2.tmp" \
		-ldflags "-X github.com/jaegertracing/jaeger/internal/version.latestVersion=$3" ./cmd/jaeger && mv "$2.tmp" "$2"' \
		sh "$src" "$jaeger" "$version" >"$jaeger.log" 2>&1 </dev/null &
	sleep 1 # the build holds the lock before anyone waits on it
fi
if [ "${WAIT:-}" = 1 ]; then
	flock "$jaeger.lock" true
	"$jaeger" version >/dev/null 2>&1 || { echo "jaeger: the build failed: $jaeger.log" >&2; exit 1; }
fi
