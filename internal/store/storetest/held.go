package storetest

import "testing"

// Held is what hold returns (an analysis Source holding a connection of its
// own: source.New(rec).Hold, explain.NewSource(rec).Hold), released when
// the test ends: for tests that call an analysis's steps and read the
// temporary tables they made, which live on that connection alone.
func Held[S any](t testing.TB, hold func() (S, func(), error)) S {
	t.Helper()
	s, release, err := hold()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release)
	return s
}
