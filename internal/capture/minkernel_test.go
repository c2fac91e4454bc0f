package capture

import (
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

// The kfuncs that set MinKernel are the ones the sources declare: a new one
// declared (extern ... __ksym) must be weighed against MinKernel, and named
// here with the kernel that brought it.
func TestMinKernelNamesEveryKfunc(t *testing.T) {
	since := map[string][2]int{"bpf_rdonly_cast": {6, 2}, "bpf_task_from_pid": {6, 2}, "bpf_task_release": {6, 2}}
	found := 0
	sources, _ := filepath.Glob("../../bpf/*.bpf.[ch]")
	for _, path := range sources {
		f := filepath.Base(path)
		for _, m := range regexp.MustCompile(`(?m)^extern [^;]*?\b(bpf_\w+)\([^;]*\) __ksym;`).FindAllStringSubmatch(header(t, f), -1) {
			found++
			v, ok := since[m[1]]
			if !ok {
				t.Errorf("%s declares kfunc %s: which kernel brought it? (MinKernel is %s)", f, m[1], MinKernel)
				continue
			}
			if v[0] > MinKernelMajor || v[0] == MinKernelMajor && v[1] > MinKernelMinor {
				t.Errorf("%s needs %d.%d, MinKernel says %s", m[1], v[0], v[1], MinKernel)
			}
		}
	}
	if found < 3 {
		t.Errorf("found %d kfunc declarations", found)
	}
	if MinKernel != strconv.Itoa(MinKernelMajor)+"."+strconv.Itoa(MinKernelMinor) {
		t.Errorf("MinKernel %q, %d.%d", MinKernel, MinKernelMajor, MinKernelMinor)
	}
}
