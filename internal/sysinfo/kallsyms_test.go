package sysinfo

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseKallsyms(t *testing.T) {
	for _, tc := range []struct {
		name  string
		in    string
		addrs []uint64
		names []string
	}{
		{"text symbols only", "ffffffff81000010 T schedule\nffffffff81000020 t helper\nffffffff81000030 W weak_fn\nffffffff82000000 D init_task\nffffffff82000100 r banner\n",
			[]uint64{0xffffffff81000010, 0xffffffff81000020, 0xffffffff81000030}, []string{"schedule", "helper", "weak_fn"}},
		{"module column dropped", "ffffffffc0001000 t ext4_sync_file\t[ext4]\n",
			[]uint64{0xffffffffc0001000}, []string{"ext4_sync_file"}},
		{"modules out of order are sorted", "ffffffffc0002000 t b\t[m2]\nffffffffc0001000 t a\t[m1]\n",
			[]uint64{0xffffffffc0001000, 0xffffffffc0002000}, []string{"a", "b"}},
		// Without CAP_SYSLOG the kernel shows every address as zero.
		{"unprivileged", "0000000000000000 T schedule\n0000000000000000 t helper\n", []uint64{}, []string{}},
		{"malformed lines skipped", "garbage\nffff T\nzzzz T bad_addr\n\nffffffff81000010 T ok\n",
			[]uint64{0xffffffff81000010}, []string{"ok"}},
		{"empty", "", []uint64{}, []string{}},
	} {
		k, err := parseKallsyms(strings.NewReader(tc.in))
		addrs, names := symbols(k)
		if err != nil || !reflect.DeepEqual(addrs, tc.addrs) || !reflect.DeepEqual(names, tc.names) {
			t.Errorf("%s: parseKallsyms = %x %v, %v; want %x %v", tc.name, addrs, names, err, tc.addrs, tc.names)
		}
	}
}

func TestKallsyms(t *testing.T) {
	k, err := fixture.Kallsyms()
	if err != nil {
		t.Fatal(err)
	}
	if _, names := symbols(k); len(names) != 9 {
		t.Errorf("%d text symbols, want 9: %v", len(names), names)
	}
	for _, tc := range []struct {
		ip   uint64
		want string
	}{
		{0xffffffff81c3a2b0, "schedule"},       // its first byte
		{0xffffffff81c3a2c4, "schedule"},       // inside it
		{0xffffffff81c3a340, "io_schedule"},    // the next one
		{0xffffffff82600010, "arch_cpu_idle"},  // data symbols name nothing
		{0xffffffffc0800004, "nvme_queue_rq"},  // a module listed out of order
		{0xffffffffc0a01210, "ext4_sync_file"}, // the last symbol
		{0x1000, "0x1000"},                     // below every symbol
		{0xffffffff81001008, "xen_hypercall_set_trap_table"},
	} {
		if got := k.Name(tc.ip); got != tc.want {
			t.Errorf("Name(%#x) = %q, want %q", tc.ip, got, tc.want)
		}
	}
	if _, err := (FS{Root: t.TempDir()}).Kallsyms(); err == nil {
		t.Error("no /proc/kallsyms: want an error")
	}
}

// symbols lists a table's addresses and names, in its order.
func symbols(k *Kallsyms) (addrs []uint64, names []string) {
	addrs, names = []uint64{}, []string{}
	for i := range k.Len() {
		a, n := k.Symbol(i)
		addrs, names = append(addrs, a), append(names, n)
	}
	return addrs, names
}

// TestRangeByName: a name's range is the same looked up in the names'
// index (the cached copy's) as found by reading every name, for each
// symbol, a name two symbols share (the lower one's), and a missing one.
func TestRangeByName(t *testing.T) {
	in := "ffffffff81000000 T _stext\nffffffff81000100 T schedule\nffffffff81000200 t dup\n" +
		"ffffffff81000300 T io_schedule\nffffffff81000400 t dup\nffffffff81000500 T zzz_last_but_one\nffffffff81000600 T a_last\n"
	scan, err := parseKallsyms(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	indexed, _ := parseKallsyms(strings.NewReader(in))
	indexed.indexNames()
	for _, name := range []string{"_stext", "schedule", "dup", "io_schedule", "zzz_last_but_one", "a_last", "missing", ""} {
		lo, hi, ok := scan.Range(name)
		ilo, ihi, iok := indexed.Range(name)
		if lo != ilo || hi != ihi || ok != iok {
			t.Errorf("Range(%q): %#x-%#x %v by the index, %#x-%#x %v by reading every name", name, ilo, ihi, iok, lo, hi, ok)
		}
	}
	if lo, hi, ok := indexed.Range("dup"); !ok || lo != 0xffffffff81000200 || hi != 0xffffffff81000300 {
		t.Errorf("Range(dup) = %#x-%#x %v, want the lower one's", lo, hi, ok)
	}
	if _, _, ok := indexed.Range("a_last"); ok {
		t.Error("the last symbol has a range: nothing says where it ends")
	}
}
