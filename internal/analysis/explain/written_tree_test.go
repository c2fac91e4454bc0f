package explain

import "testing"

func TestWrittenTree(t *testing.T) {
	f := func(path string, w uint64) FileUse { return FileUse{Path: path, WriteBytes: w} }
	for _, c := range []struct {
		name  string
		files []FileUse
		want  *FileTree
	}{
		{"an archive unpacked", []FileUse{f("/srv/doc/a/x.html", 8), f("/srv/doc/b/y.gz", 4), f("/srv/doc/c", 2), f("/etc/read-only", 0)},
			&FileTree{Dir: "/srv/doc", Files: 3, WriteBytes: 14}},
		{"two files are no tree", []FileUse{f("/srv/a", 1), f("/srv/b", 1)}, nil},
		{"nothing shared but the root", []FileUse{f("/srv/a", 1), f("/var/b", 1), f("/tmp/c", 1)}, nil},
		{"sockets and pipes apart", []FileUse{f("/srv/d/a", 1), f("pipe:[3]", 9), f("/srv/d/b", 1), f("/srv/d/e/f", 1)},
			&FileTree{Dir: "/srv/d", Files: 3, WriteBytes: 3}},
		{"a prefix that is no directory", []FileUse{f("/srv/data1/a", 1), f("/srv/data2/b", 1), f("/srv/c", 1)},
			&FileTree{Dir: "/srv", Files: 3, WriteBytes: 3}},
	} {
		got := writtenTree(c.files)
		if (got == nil) != (c.want == nil) || got != nil && *got != *c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}
