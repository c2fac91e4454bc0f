package reports

import (
	"database/sql/driver"
	"errors"
	"io"

	"github.com/whyslow/whyslow/internal/analysis/source"
)

// rawRows runs q and calls each with every row's values as the driver gives
// them (uint64, int64, int32, string, nil...), skipping database/sql's
// conversion of each value into a destination: that conversion, by
// reflection, was most of the time of printing a whole recording's log.
// vals is reused between rows.
func rawRows(s *source.Source, q string, args []any, each func(vals []driver.Value) error) error {
	ctx := s.Context()
	return s.Conn().Raw(func(dc any) error {
		qc, ok := dc.(driver.QueryerContext)
		if !ok {
			return errors.New("the database driver cannot query directly")
		}
		named := make([]driver.NamedValue, len(args))
		for i, a := range args {
			named[i] = driver.NamedValue{Ordinal: i + 1, Value: a}
		}
		rows, err := qc.QueryContext(ctx, q, named)
		if err != nil {
			return err
		}
		defer rows.Close()
		vals := make([]driver.Value, len(rows.Columns()))
		for {
			if err := rows.Next(vals); err == io.EOF {
				return nil
			} else if err != nil {
				return err
			}
			if err := each(vals); err != nil {
				return err
			}
		}
	})
}
