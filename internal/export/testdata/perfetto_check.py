"""Parses a Perfetto trace with Perfetto's own protos (PyPI perfetto) and
prints what it holds as JSON, for perfetto_test.go; checks that slices nest
on every track and that every flow has two ends."""
import json
import sys
from collections import defaultdict

from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

trace = pb.Trace()
with open(sys.argv[1], "rb") as f:
    trace.ParseFromString(f.read())

errors = []
tracks = {}
open_slices = defaultdict(list)
out = {"threads": {}, "processes": {}, "slices": defaultdict(lambda: defaultdict(int)), "instants": defaultdict(list),
       "args": defaultdict(set), "counters": defaultdict(float), "flows": 0, "clock": [], "packets": len(trace.packet)}
flow_ends = defaultdict(lambda: [0, 0])
last_counter = {}
for p in trace.packet:
    if p.trusted_packet_sequence_id != 1:
        errors.append("packet without the sequence id")
    if p.HasField("clock_snapshot"):
        out["clock"] = [[c.clock_id, c.timestamp] for c in p.clock_snapshot.clocks]
    if p.HasField("track_descriptor"):
        d = p.track_descriptor
        tracks[d.uuid] = d
        if d.HasField("thread"):
            out["threads"][d.thread.tid] = {"pid": d.thread.pid, "name": d.thread.thread_name}
        if d.HasField("process"):
            out["processes"][d.process.pid] = {"name": d.process.process_name, "cmdline": list(d.process.cmdline)}
    if p.HasField("track_event"):
        e = p.track_event
        if e.track_uuid not in tracks:
            errors.append("event on an undeclared track %d" % e.track_uuid)
            continue
        d = tracks[e.track_uuid]
        key = str(d.thread.tid) if d.HasField("thread") else ("syscalls:%d" % tracks[d.parent_uuid].thread.tid if d.parent_uuid else d.name)
        if e.type == pb.TrackEvent.TYPE_SLICE_BEGIN:
            open_slices[e.track_uuid].append((p.timestamp, e.name))
            for a in e.debug_annotations:
                out["args"][key + ":" + e.name + ":" + a.name].add(a.string_value if a.HasField("string_value") else a.int_value)
        elif e.type == pb.TrackEvent.TYPE_SLICE_END:
            if not open_slices[e.track_uuid]:
                errors.append("slice end with no begin on track %s" % key)
                continue
            ts, name = open_slices[e.track_uuid].pop()
            if open_slices[e.track_uuid]:
                errors.append("slices overlap on track %s" % key)
            out["slices"][key][name] += p.timestamp - ts
        elif e.type == pb.TrackEvent.TYPE_INSTANT:
            out["instants"][key].append(e.name)
        elif e.type == pb.TrackEvent.TYPE_COUNTER:
            if d.name in last_counter:
                ts, v = last_counter[d.name]
                out["counters"][d.name] += v * (p.timestamp - ts) / 1e9
            last_counter[d.name] = (p.timestamp, e.double_counter_value)
        for f in e.flow_ids:
            flow_ends[f][0] += 1
        for f in e.terminating_flow_ids:
            flow_ends[f][1] += 1
for uuid, stack in open_slices.items():
    if stack:
        errors.append("slice never ended on track %d" % uuid)
for f, (a, b) in flow_ends.items():
    if (a, b) != (1, 1):
        errors.append("flow %d has %d starts and %d ends" % (f, a, b))
out["flows"] = len(flow_ends)
out["errors"] = errors
out["args"] = {k: sorted(v, key=str) for k, v in out["args"].items()}
json.dump(out, sys.stdout)
