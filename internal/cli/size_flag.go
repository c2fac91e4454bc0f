package cli

import "github.com/whyslow/whyslow/internal/format"

// parseSize reads a size flag (--minsize, --maxsize, --ring-size); empty is
// format.NoLimit. A bad value is a usage error.
func parseSize(s string) (int64, error) {
	n, err := format.ParseSizeLimit(s)
	if err != nil {
		return 0, withCode(ExitUsage, err)
	}
	return n, nil
}
