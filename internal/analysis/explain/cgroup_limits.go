package explain

import (
	"database/sql"
	"errors"
	"fmt"

	"github.com/whyslow/whyslow/internal/event"
)

// CPUQuota is the cgroup CPU quota that held a verdict's thread off the CPU
// (reason cpu-quota): which cgroup, how much CPU it may use, and what the
// kernel counted of its throttling during the capture (cpu.stat at the end
// less at the first throttled wait).
type CPUQuota struct {
	Cgroup  string `json:"cgroup"`
	Version string `json:"version"`
	// CPUs is QuotaUS/PeriodUS: 0.2 for `docker run --cpus 0.2`.
	CPUs     float64 `json:"cpus"`
	QuotaUS  int64   `json:"quota_us"`
	PeriodUS int64   `json:"period_us"`
	// Periods the cgroup had runnable tasks in; ThrottledPeriods of them
	// it ran out of quota; ThrottledS its tasks were held off in all, summed
	// over CPUs (up to the window times the CPUs it ran on). All 0 when the
	// cgroup was gone by the end of the capture.
	Periods          uint64  `json:"periods"`
	ThrottledPeriods uint64  `json:"throttled_periods"`
	ThrottledS       float64 `json:"throttled_s"`
}

// cpuQuota reads the quota of the cgroup that throttled the target's
// process pid (nil when none was read: a recording before version 5, or a
// cgroup gone before it could be).
func (x *Explanation) cpuQuota(s *Source, pid uint32) (*CPUQuota, error) {
	if x.Time.OffCPUS[string(event.ReasonCPUQuota)] == 0 {
		return nil, nil
	}
	var q CPUQuota
	var throttledNS uint64
	err := s.QueryRow(sqlOf("cpu_quota"), sql.Named("pid", pid)).Scan(&q.Cgroup, &q.Version, &q.QuotaUS, &q.PeriodUS,
		&q.Periods, &q.ThrottledPeriods, &throttledNS)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the CPU quota: %w", err)
	}
	q.Cgroup = event.DecodeText(q.Cgroup)
	q.ThrottledS = float64(throttledNS) / 1e9
	if q.QuotaUS > 0 && q.PeriodUS > 0 {
		q.CPUs = float64(q.QuotaUS) / float64(q.PeriodUS)
	}
	return &q, nil
}

// MemoryLimit is the memory cgroup limit under which a disk-read verdict's
// reads were re-reads: file pages the cgroup had cached, evicted by its own
// reclaim at its limit, and read from storage again.
type MemoryLimit struct {
	Cgroup  string `json:"cgroup"`
	Version string `json:"version"`
	// LimitBytes: the hard limit (0: none); HighBytes: v2's memory.high (0: none).
	LimitBytes uint64 `json:"limit_bytes,omitempty"`
	HighBytes  uint64 `json:"high_bytes,omitempty"`
	// RereadBytes: file bytes refaulted in the cgroup during the capture
	// (memory.stat workingset_refault_file), the whole cgroup's.
	RereadBytes uint64 `json:"reread_bytes"`
}

// memoryLimit reads the limited memory cgroup of the target's process pid
// and its re-reads, when the target waited for disk reads and the cgroup
// re-read anything (nil otherwise).
func (x *Explanation) memoryLimit(s *Source, pid uint32) (*MemoryLimit, error) {
	if x.Time.OffCPUS[string(event.ReasonDiskRead)] == 0 && x.Time.OffCPUS[string(event.ReasonMemory)] == 0 {
		return nil, nil
	}
	var m MemoryLimit
	err := s.QueryRow(sqlOf("memory_limit"), sql.Named("pid", pid)).Scan(&m.Cgroup, &m.Version, &m.LimitBytes, &m.HighBytes, &m.RereadBytes)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the memory limit: %w", err)
	}
	m.Cgroup = event.DecodeText(m.Cgroup)
	return &m, nil
}

// threadsCgroups gives each thread its process's cgroup.
func threadsCgroups(s *Source, byTID map[uint32]*ThreadTime) error {
	existing := "SELECT NULL::UINTEGER, NULL::UBIGINT, NULL::VARCHAR WHERE false"
	if s.HasRows("existing") {
		existing = "SELECT pid, ts, cgroup FROM existing WHERE is_target(pid) AND cgroup <> ''"
	}
	rows, err := s.Query(sqlWhere("process_cgroups", existing))
	if err != nil {
		return fmt.Errorf("reading the processes' cgroups: %w", err)
	}
	defer rows.Close()
	byPID := map[uint32]string{}
	for rows.Next() {
		var pid uint32
		var cg string
		if err := rows.Scan(&pid, &cg); err != nil {
			return err
		}
		byPID[pid] = event.DecodeText(cg)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for _, t := range byTID {
		if cg, ok := byPID[t.PID]; ok {
			t.Cgroup, t.CgroupName = cg, event.CgroupName(cg)
		}
	}
	return nil
}

// IOLimit is the I/O limit of the target's own cgroup on a device it used
// (v1 blkio.throttle.*, v2 io.max), named in a storage verdict: the
// cgroup, not the disk, may be what held it.
type IOLimit struct {
	Cgroup  string `json:"cgroup"`
	Version string `json:"version"`
	Device  string `json:"device"`
	// 0: no limit of that kind.
	ReadBPS   uint64 `json:"read_bps,omitempty"`
	WriteBPS  uint64 `json:"write_bps,omitempty"`
	ReadIOPS  uint64 `json:"read_iops,omitempty"`
	WriteIOPS uint64 `json:"write_iops,omitempty"`
}

// ioLimit reads the I/O limit of the target's own cgroup, when the target
// waited on storage and its cgroup has one (nil otherwise).
func (x *Explanation) ioLimit(s *Source, pid uint32) (*IOLimit, error) {
	var storage float64
	for _, r := range []event.Reason{event.ReasonDiskRead, event.ReasonDiskWrite, event.ReasonSync, event.ReasonDirtyThrottle} {
		storage += x.Time.OffCPUS[string(r)]
	}
	if storage == 0 {
		return nil, nil
	}
	var l IOLimit
	err := s.QueryRow(sqlOf("io_limit"), sql.Named("pid", pid)).Scan(&l.Cgroup, &l.Version, &l.Device, &l.ReadBPS, &l.WriteBPS, &l.ReadIOPS, &l.WriteIOPS)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the I/O limit: %w", err)
	}
	l.Cgroup = event.DecodeText(l.Cgroup)
	return &l, nil
}
