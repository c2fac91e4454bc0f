#!/bin/sh
# Makes docs/img/otlp-jaeger.png, docs/otlp.md's picture of a joined trace in
# Jaeger: the OpenTelemetry SDK application of TestOTLPJoinsAppTrace
# (test/scenarios/testdata/otel_app.py, service `shop`) calls nginx, which
# passes the request to PHP-FPM; its session is written on a slow loop disk
# while another process dirties 16 MiB there and runs sync. whyslow records
# nginx (`record --requests -p`), exports the recording to Jaeger
# (`export otlp`), and headless Chromium screenshots Jaeger UI's view of the
# trace of the slowest of 16 requests: shop's spans, nginx's and the php-fpm8.2
# worker's.
#
# Needs root (BPF, the loop disk), `make build`, `make deps` (nginx, PHP-FPM,
# OpenTelemetry's Python SDK), Jaeger (scripts/jaeger.sh) and Jaeger UI's
# built assets, which `go build` leaves out of Jaeger: JAEGER_UI=DIR, the
# build directory of jaeger-ui at Jaeger's version (docs/otlp.md, "In Jaeger").
# On a shared machine run it under the privileged lock:
#   JAEGER_UI=... flock /tmp/whyslow-privileged.lock scripts/otlp-picture.sh
# REC=FILE keeps the recording, OUT=FILE writes the picture elsewhere,
# SIZE=W,H is the window (1400,640).
# Everything it starts stops when it ends, and its temporary directory goes.
set -eu
repo=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$repo/docs/img/otlp-jaeger.png}
if [ "${1:-}" != inside ]; then
	[ -f "${JAEGER_UI:-}/index.html" ] || { echo "otlp-picture: JAEGER_UI must be Jaeger UI's build directory (its index.html)" >&2; exit 1; }
	# The slow disk stays for the run below, and goes after it.
	exec "$repo/bin/slowdisk" --write-bps 3M --dirty-bytes 4M --dirty-background-bytes 2M -- "$0" inside
fi

tmp=$(mktemp -d)
groups="" # process groups started, each stopped at the end
stop() {
	for g in $groups; do
		kill -QUIT "-$g" 2>/dev/null || true # nginx's and PHP-FPM's graceful stop
		kill -TERM "-$g" 2>/dev/null || true
	done
	sleep 1
	for g in $groups; do kill -KILL "-$g" 2>/dev/null || true; done
	wait
	rm -rf "$tmp"
}
trap stop EXIT
trap 'exit 1' INT TERM
# started NAME CMD...: CMD in a process group of its own, logged in $tmp.
started() {
	name=$1
	shift
	setsid "$@" >"$tmp/$name.log" 2>&1 </dev/null &
	groups="$groups $!"
}
port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
waitport() {
	i=0
	until python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1)' "$1" 2>/dev/null; do
		i=$((i + 1))
		[ $i -lt 300 ] || { echo "otlp-picture: nothing listens on port $1" >&2; cat "$tmp"/*.log >&2; exit 1; }
		sleep 0.1
	done
}

# Jaeger, with its UI, on a private configuration (as startJaeger's).
otlp=$(port) query=$(port) grpc=$(port) otlpgrpc=$(port)
cat >"$tmp/jaeger.yaml" <<EOF
service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces: {receivers: [otlp], exporters: [jaeger_storage_exporter]}
  telemetry: {metrics: {level: none}, logs: {level: warn}}
extensions:
  jaeger_storage: {backends: {mem: {memory: {max_traces: 1000}}}}
  jaeger_query:
    storage: {traces: mem}
    max_clock_skew_adjust: 0s
    ui: {assets_path: $JAEGER_UI}
    http: {endpoint: 127.0.0.1:$query}
    grpc: {endpoint: 127.0.0.1:$grpc}
receivers:
  otlp:
    protocols:
      http: {endpoint: 127.0.0.1:$otlp}
      grpc: {endpoint: 127.0.0.1:$otlpgrpc}
exporters:
  jaeger_storage_exporter: {trace_storage: mem}
EOF
started jaeger "${JAEGER:-$(go env GOPATH)/bin/jaeger}" --config "$tmp/jaeger.yaml"

# PHP-FPM and nginx (as startNginxFPM's), the sessions on the slow disk.
chmod 755 "$tmp"
mkdir -p "$tmp/www" "$SLOWDISK_DIR/sessions"
chmod 1777 "$SLOWDISK_DIR/sessions"
cat >"$tmp/www/index.php" <<'EOF'
<?php
session_id('picture'); // one session: its file is rewritten while sync writes it back
session_start();
$_SESSION['visits'] = ($_SESSION['visits'] ?? 0) + 1;
$_SESSION['pad'] = str_repeat('x', 2000);
echo "visits: " . $_SESSION['visits'] . "\n";
EOF
cat >"$tmp/php-fpm.conf" <<EOF
[global]
pid = $tmp/fpm.pid
error_log = $tmp/fpm.log
daemonize = no
[www]
user = nobody
group = nogroup
listen = $tmp/fpm.sock
listen.mode = 0666
pm = static
pm.max_children = 2
php_admin_value[session.save_path] = $SLOWDISK_DIR/sessions
EOF
fpm=$(ls /usr/sbin/php-fpm* | head -1)
started fpm "$fpm" -F -y "$tmp/php-fpm.conf"
web=$(port)
cat >"$tmp/nginx.conf" <<EOF
daemon off;
master_process on;
worker_processes 1;
user nobody nogroup;
pid $tmp/nginx.pid;
error_log $tmp/error.log;
events { worker_connections 64; }
http {
  access_log off;
  client_body_temp_path $tmp/tmp-body;
  proxy_temp_path $tmp/tmp-proxy;
  fastcgi_temp_path $tmp/tmp-fastcgi;
  uwsgi_temp_path $tmp/tmp-uwsgi;
  scgi_temp_path $tmp/tmp-scgi;
  server {
    listen 127.0.0.1:$web;
    root $tmp/www;
    location ~ \.php\$ {
      fastcgi_pass unix:$tmp/fpm.sock;
      include /etc/nginx/fastcgi_params;
      fastcgi_param SCRIPT_FILENAME \$document_root\$fastcgi_script_name;
    }
  }
}
EOF
i=0
until [ -S "$tmp/fpm.sock" ]; do
	i=$((i + 1))
	[ $i -lt 100 ] || { echo "otlp-picture: PHP-FPM did not start" >&2; cat "$tmp/fpm.log" >&2; exit 1; }
	sleep 0.1
done
started nginx nginx -c "$tmp/nginx.conf" -p "$tmp"
nginx=$!

# The application, its spans sent to Jaeger as they end.
shop=$(port)
started shop env BACKEND_URL="http://127.0.0.1:$web/index.php" OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$otlp" \
	OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf PYTHONPATH="${OTEL_PYTHON:-$HOME/.cache/whyslow/otel-python}" python3 "$repo/test/scenarios/testdata/otel_app.py" "$shop"
waitport "$web"
waitport "$shop"
waitport "$otlp"
waitport "$query"

# The application's requests, one every 250 ms, while another process
# dirties the disk and syncs: the slowest is the picture's (as
# sessionStall in test/scenarios).
curl -sS --fail -o /dev/null "http://127.0.0.1:$web/index.php" # the session's file, before the recording
started record "$repo/bin/whyslow" record --requests -o "$tmp/rec.db" -p "$nginx"
record=$!
i=0
until grep -q "whyslow: recording " "$tmp/record.log"; do
	i=$((i + 1))
	[ $i -lt 600 ] || { echo "otlp-picture: whyslow is not recording" >&2; cat "$tmp/record.log" >&2; exit 1; }
	sleep 0.1
done
for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16; do
	[ "$i" != 5 ] || { sh "$repo/examples/session-stall/noisy.sh" "$SLOWDISK_DIR" 16 & }
	curl -sS --fail -w ' %{time_total}\n' "http://127.0.0.1:$shop/checkout" >>"$tmp/app.json"
	sleep 0.25
done
wait $! # noisy.sh
kill -INT "$record"
i=0
while kill -0 "$record" 2>/dev/null; do
	i=$((i + 1))
	[ $i -lt 600 ] || { echo "otlp-picture: whyslow did not stop" >&2; exit 1; }
	sleep 0.1
done
"$repo/bin/whyslow" report requests "$tmp/rec.db" >&2
[ -z "${REC:-}" ] || cp "$tmp/rec.db" "$REC" # REC=FILE keeps the recording
"$repo/bin/whyslow" export otlp "$tmp/rec.db" --endpoint "http://127.0.0.1:$otlp"
# The slowest of the application's requests: each line its answer, then curl's time.
trace=$(python3 -c 'import json, sys
took = [line.rsplit(" ", 1) for line in open(sys.argv[1])]
print(json.loads(max(took, key=lambda a: float(a[1]))[0])["trace_id"])' "$tmp/app.json")
sleep 1

# Jaeger UI's view of the application's trace.
mkdir -p "$(dirname "$out")"
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$tmp/profile" \
	--window-size="${SIZE:-1400,640}" --virtual-time-budget=10000 \
	--screenshot="$out" "http://127.0.0.1:$query/trace/$trace" 2>/dev/null
echo "wrote $out: trace $trace" >&2
