package procsample

import "testing"

func TestParseStat(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want taskStat
		ok   bool
	}{
		{"4242 (python3) S 1 4242 4242 0 -1 4194560 1203", taskStat{"python3", 'S', 1}, true},
		{"77 (a) b (c)) D 12 77 77 0", taskStat{"a) b (c)", 'D', 12}, true},
		{"9 (x\ny) R 3 9", taskStat{"x\ny", 'R', 3}, true},
		{"9 (trunc", taskStat{}, false},
		{"", taskStat{}, false},
	} {
		got, ok := parseStat([]byte(tc.in), "python3")
		if ok != tc.ok || got != tc.want {
			t.Errorf("parseStat(%q) = %+v %v, want %+v %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestParseSchedstat(t *testing.T) {
	got, ok := parseSchedstat([]byte("530417058 448657 18\n"))
	if !ok || got != (schedstat{530417058, 448657, 18}) {
		t.Errorf("got %+v %v", got, ok)
	}
	if _, ok := parseSchedstat([]byte("1 2")); ok {
		t.Error("a short line parsed")
	}
	if parseWchan([]byte("0")) != "" || parseWchan([]byte("do_nanosleep")) != "do_nanosleep" {
		t.Error("wchan")
	}
}
