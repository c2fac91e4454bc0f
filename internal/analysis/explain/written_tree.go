package explain

import "strings"

// FileTree is the files the target wrote under one directory: where the
// bytes went when no one file took most of them (tar unpacking an archive,
// a build writing its objects, an installer).
type FileTree struct {
	Dir        string `json:"dir"` // the deepest directory holding them all
	Files      int    `json:"files"`
	WriteBytes uint64 `json:"write_bytes"`
}

// writtenTree is the directory under which the files written were, nil
// when they were fewer than three or had nothing in common but the root.
func writtenTree(files []FileUse) *FileTree {
	t := &FileTree{}
	var common []string
	for _, f := range files {
		if f.WriteBytes == 0 || !strings.HasPrefix(f.Path, "/") {
			continue
		}
		dir := strings.Split(f.Path, "/")
		dir = dir[1 : len(dir)-1] // without the root's "" and the file's name
		if t.Files == 0 {
			common = dir
		}
		n := 0
		for n < len(common) && n < len(dir) && common[n] == dir[n] {
			n++
		}
		common = common[:n]
		t.Files++
		t.WriteBytes += f.WriteBytes
	}
	if t.Files < 3 || len(common) == 0 {
		return nil
	}
	t.Dir = "/" + strings.Join(common, "/")
	return t
}
