#!/bin/sh
# Installs what whyslow's tests, demo and benchmarks need and this machine lacks.
set -eu
need_apt=""
have() { command -v "$1" >/dev/null 2>&1; }
have fio        || need_apt="$need_apt fio"
have curl       || need_apt="$need_apt curl"
# a client waiting on a slow resolver over UDP (issue 49)
have dig        || need_apt="$need_apt bind9-dnsutils"
# a real database for the tests of waits across processes (a row lock, a commit's fsync)
ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 || need_apt="$need_apt postgresql"
# the database and cache servers whose protocols requests are framed by
have mariadbd   || [ -x /usr/sbin/mariadbd ] || need_apt="$need_apt mariadb-server"
have redis-server || need_apt="$need_apt redis-server"
have mkfs.ext4  || need_apt="$need_apt e2fsprogs"
have losetup    || need_apt="$need_apt util-linux"
have setpriv    || need_apt="$need_apt util-linux"
have clang      || need_apt="$need_apt clang llvm"
have bpftool    || need_apt="$need_apt bpftool"
[ -e /usr/include/bpf/bpf_helpers.h ] || need_apt="$need_apt libbpf-dev"
have python3    || need_apt="$need_apt python3 python3-pip"
# the seed's own web stack, for the request tests (Apache prefork + mod_php)
have apache2    || [ -x /usr/sbin/apache2 ] || need_apt="$need_apt apache2"
ls /usr/lib/apache2/modules/libphp*.so >/dev/null 2>&1 || need_apt="$need_apt libapache2-mod-php"
# requests as deployed: nginx in front of PHP-FPM, and a Node.js event loop
have nginx      || [ -x /usr/sbin/nginx ] || need_apt="$need_apt nginx"
ls /usr/sbin/php-fpm* >/dev/null 2>&1 || need_apt="$need_apt php-fpm"
have node       || have nodejs || need_apt="$need_apt nodejs"
# the live view's test drives it in tmux; the exporter's is scraped by a real Prometheus
have tmux       || need_apt="$need_apt tmux"
have prometheus || need_apt="$need_apt prometheus"
have promtool   || need_apt="$need_apt prometheus"
# headless Chromium renders the HTML report in its test
have chromium   || need_apt="$need_apt chromium"
# make dist and its test: dpkg-shlibdeps names the package's dependencies;
# the installed package's man pages, units and completions are checked
have dpkg-shlibdeps  || need_apt="$need_apt dpkg-dev"
have man             || need_apt="$need_apt man-db"
have systemd-analyze || need_apt="$need_apt systemd"
[ -e /usr/share/bash-completion/bash_completion ] || need_apt="$need_apt bash-completion"
if [ -n "$need_apt" ]; then
	echo "installing:$need_apt" >&2
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $need_apt >/dev/null
fi
if ! python3 -c 'import flask' 2>/dev/null; then
	echo "installing: flask (PyPI)" >&2
	python3 -m pip install -q flask 2>/dev/null ||
		python3 -m pip install -q --break-system-packages flask 2>/dev/null ||
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-flask >/dev/null; }
fi
# Perfetto's own protos, to check the traces whyslow exports (no trace
# processor binary: the package downloads that at run time, the tests do not)
if ! python3 -c 'from perfetto.protos.perfetto.trace import perfetto_trace_pb2' 2>/dev/null; then
	echo "installing: perfetto (PyPI)" >&2
	python3 -m pip install -q perfetto 2>/dev/null ||
		python3 -m pip install -q --break-system-packages perfetto
fi
# OpenTelemetry's Python SDK, for the application whose trace whyslow's spans
# join (test/scenarios, TestOTLPJoinsAppTrace): pinned, in a directory of its
# own (the test puts it on PYTHONPATH), off the interpreter's packages
otel_py="${XDG_CACHE_HOME:-$HOME/.cache}/whyslow/otel-python"
otel_spec="opentelemetry-sdk==1.45.2 opentelemetry-exporter-otlp-proto-http==1.45.2"
if [ "$(cat "$otel_py/.spec" 2>/dev/null)" != "$otel_spec" ]; then
	echo "installing: $otel_spec (PyPI, into $otel_py)" >&2
	rm -rf "$otel_py"
	python3 -m pip install -q --disable-pip-version-check --target "$otel_py" $otel_spec
	echo "$otel_spec" > "$otel_py/.spec"
fi
have go || { echo "deps: the Go toolchain is needed (go 1.26)" >&2; exit 1; }
