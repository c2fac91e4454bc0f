# Shared by the scenarios' run.sh: where things are, and waiting for a port.
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
bin=${BIN:-$root/bin}
py=${PYTHON:-$(command -v python3)}
# the real interpreter, not a shim script, so traces show python doing the work
py=$("$py" -c 'import sys; print(sys.executable)')

wait_port() { # port
	i=0
	until "$py" -c "import socket,sys; socket.create_connection(('127.0.0.1', int(sys.argv[1])), 1)" "$1" 2>/dev/null; do
		i=$((i + 1)); [ $i -gt 100 ] && { echo "port $1 never opened" >&2; return 1; }
		sleep 0.1
	done
}
free_port() { "$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# measured CMD...: runs the step a scenario is about, under `whyslow run` when
# WHYSLOW=1 (JSON to $WHYSLOW_JSON, recording to $WHYSLOW_OUT when set), and
# prints "seconds: N" for it on stderr.
measured() {
	t0=$("$py" -c 'import time; print(time.monotonic())')
	if [ "${WHYSLOW:-}" = 1 ]; then
		"$bin/whyslow" run ${WHYSLOW_JSON:+--json "$WHYSLOW_JSON"} ${WHYSLOW_OUT:+-o "$WHYSLOW_OUT"} -- "$@"
	else
		"$@"
	fi
	"$py" -c 'import sys, time; print("seconds: %.3f" % (time.monotonic() - float(sys.argv[1])), file=sys.stderr)' "$t0"
}
