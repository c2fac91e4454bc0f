package export

import (
	"math"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
)

// Field numbers of Perfetto's trace protos (protos/perfetto/trace/...),
// checked against Perfetto's own generated protos by the tests
// (perfetto_test.go parses the output with the PyPI perfetto package).
const (
	tracePacket = 1

	packetClockSnapshot   = 6
	packetTimestamp       = 8
	packetSequenceID      = 10
	packetTrackEvent      = 11
	packetSequenceFlags   = 13
	packetTimestampClock  = 58
	packetTrackDescriptor = 60

	clockSnapshotClocks       = 1
	clockSnapshotPrimaryClock = 2
	clockID                   = 1
	clockTimestamp            = 2

	trackUUID       = 1
	trackName       = 2
	trackProcess    = 3
	trackThread     = 4
	trackParentUUID = 5
	trackCounter    = 8

	processPID     = 1
	processCmdline = 2
	processName    = 6

	threadPID  = 1
	threadTID  = 2
	threadName = 5

	counterUnit     = 3
	counterUnitName = 6

	eventDebugAnnotations   = 4
	eventType               = 9
	eventTrackUUID          = 11
	eventCategories         = 22
	eventName               = 23
	eventDoubleCounterValue = 44
	eventFlowIDs            = 47
	eventTerminatingFlowIDs = 48

	annotationUintValue   = 3
	annotationIntValue    = 4
	annotationStringValue = 6
	annotationName        = 10
)

// Enum values.
const (
	typeSliceBegin = 1
	typeSliceEnd   = 2
	typeInstant    = 3
	typeCounter    = 4

	clockRealtime  = 1
	clockMonotonic = 3

	seqIncrementalStateCleared = 1

	unitSizeBytes = 3
	unitCount     = 2
)

// msg builds one protobuf message; nested messages are built into their own
// msg and appended with bytes.
type msg []byte

func (m msg) varint(f protowire.Number, v uint64) msg {
	m = protowire.AppendTag(m, f, protowire.VarintType)
	return protowire.AppendVarint(m, v)
}

func (m msg) int(f protowire.Number, v int64) msg { return m.varint(f, uint64(v)) }

func (m msg) str(f protowire.Number, s string) msg {
	m = protowire.AppendTag(m, f, protowire.BytesType)
	return protowire.AppendString(m, strings.ToValidUTF8(s, "\uFFFD"))
}

func (m msg) bytes(f protowire.Number, b []byte) msg {
	m = protowire.AppendTag(m, f, protowire.BytesType)
	return protowire.AppendBytes(m, b)
}

func (m msg) double(f protowire.Number, v float64) msg {
	m = protowire.AppendTag(m, f, protowire.Fixed64Type)
	return protowire.AppendFixed64(m, math.Float64bits(v))
}

func (m msg) fixed64(f protowire.Number, v uint64) msg {
	m = protowire.AppendTag(m, f, protowire.Fixed64Type)
	return protowire.AppendFixed64(m, v)
}
