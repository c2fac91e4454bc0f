package main

import (
	"os"
	"os/exec"
	"path/filepath"
)

// goBuild is the parallel build the benchmarks run: `go build -a -p 2` of a
// net/http hello program written into dir, with its build cache in dir/cache
// (emptyCache empties it: every run compiles the standard library again).
// Thousands of short processes and threads handing work to each other: the
// shape of most builds.
func goBuild(dir string) (argv, env []string) {
	hello := filepath.Join(dir, "hello.go")
	os.WriteFile(hello, []byte("package main\n\nimport (\"fmt\"; \"net/http\")\n\nfunc main() { fmt.Println(http.StatusOK) }\n"), 0o644)
	goBin, _ := exec.LookPath("go")
	return []string{goBin, "build", "-a", "-p", "2", "-o", os.DevNull, hello}, []string{"GOCACHE=" + filepath.Join(dir, "cache")}
}

func emptyCache(dir string) { os.RemoveAll(filepath.Join(dir, "cache")) }
