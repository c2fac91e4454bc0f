#!/bin/sh
# Regenerates docs/lttng-walkthrough.md from a session-stall recording:
#   scripts/walkthrough.sh board.db "[BEGIN,END]" PID LATENCIES RECORDED > docs/lttng-walkthrough.md
# LATENCIES is what run.sh printed (one line), RECORDED the line `whyslow record` printed.
set -eu
W=${WHYSLOW:-bin/whyslow}
rec=$1 range=$2 pid=$3 latencies=$4 recorded=$5
run() { echo '```'; echo "\$ whyslow $*"; "$W" "$@" 2>&1 | sed "s|$rec|board.db|g"; echo '```'; }
cat <<'EOF'
# Replaying the LTTng walkthrough with whyslow

"Finding the Root Cause of a Web Request Latency" (seed 003) records a kernel
trace once, then questions it many ways until a one-off 437 ms stall is
understood: a PHP session `open()` waited behind a `sync` run by someone else.
This page replays that workflow on the session-stall scenario
(`examples/session-stall`), with real output of this version of whyslow.

## 1. Record once

A board app answers a request every 0.5 s; two seconds in, another process
dirties 10 MiB on the same (slow) disk and runs `sync`. We record the whole
system, every I/O syscall (`--full`, as LTTng would), and the first bytes of
each request a server reads (`--requests`, its HTTP request line):

```
$ whyslow record -o board.db --full --requests -d 13s &
whyslow: recording system-wide to board.db for 13s, or until Ctrl-C
$ examples/session-stall/run.sh
EOF
echo "$latencies"
echo "$recorded" | sed "s|$rec|board.db|"
cat <<'EOF'
```

One request took hundreds of milliseconds; the others a few. The article had
to find that request by hand; here it is the first question.

## 2. Which request was slow, and why? (`report requests`)


EOF
run report requests "$rec" --limit 2
cat <<'EOF'


Without being told when, whyslow cut the board's connections into requests,
labelled each by its request line, and explained the slowest by its own
critical path: its thread waited on disk writes of its session file while
someone ran `sync`. The `zoom` line is the range the next steps look at; they
replay the article's own analyses, which reach the same answer step by step.

## 3. Which operations were slow? (`iolatencytop`)


EOF
run report top "$rec" --min 100ms --limit 3
cat <<'EOF'


One of the board's request threads spent hundreds of milliseconds in
`ftruncate` of its session file, and `sync` ran for over a second around it. The pipe reads
at the top are the shell scripts of the scenario waiting for their children.

## 4. Zoom in on the slow request (`iolog` with `--timerange`)


EOF
run report log "$rec" --timerange "$range" --comm python3,sync --min 1ms
cat <<'EOF'


`*` marks an operation that began or ended outside the range: the `sync` began
before the request and covers it.

## 5. Who was doing I/O then? (`iousagetop`)


EOF
run report usage "$rec" --timerange "$range" --limit 3
cat <<'EOF'


The block section shows what LTTng could not ("we don't know which process
started it"): the flusher kworker's writes are charged to `dd`, the process
that dirtied the data `sync` was pushing out.

## 6. Latency statistics and distributions (`iolatencystats`, `iolatencyfreq`)


EOF
run report stats "$rec" --timerange "$range"
cat <<'EOF'


EOF
run report freq "$rec" --file *sess_board --freq-resolution 6
cat <<'EOF'


## 7. The root cause in one command

`explain` gives the same answer directly, for the app's process tree:


EOF
run report explain "$rec" --pid "$pid"
cat <<'EOF'


Everything above is also available as JSON (`--json`, docs/report-json.md) and
as SQL over the recording (`whyslow sql`, docs/trace-format.md).

EOF
