package store

import (
	"errors"
	"fmt"

	"github.com/duckdb/duckdb-go/v2"
	"github.com/duckdb/duckdb-go/v2/mapping"
)

// loadConn is a connection of DuckDB's C API to the recording the Writer's
// sql.DB has open: the loads' appenders need one, and database/sql hides its
// own. The database is the same instance, found in duckdb-go's instance cache
// (a second instance could not lock the file).
type loadConn struct {
	db   mapping.Database
	conn mapping.Connection
}

func openLoadConn(path string) (*loadConn, error) {
	var cfg mapping.Config
	if mapping.CreateConfig(&cfg) == mapping.StateError {
		return nil, errors.New("connecting for loads: creating a configuration")
	}
	defer mapping.DestroyConfig(&cfg)
	// As duckdb-go's connector opens it: the cache refuses another configuration.
	if mapping.SetConfig(cfg, "duckdb_api", "go") == mapping.StateError {
		return nil, errors.New("connecting for loads: configuring")
	}
	c := &loadConn{}
	var msg string
	if mapping.GetOrCreateFromCache(duckdb.GetInstanceCache(), path, &c.db, cfg, &msg) == mapping.StateError {
		mapping.Close(&c.db)
		return nil, fmt.Errorf("connecting for loads: %s", msg)
	}
	if mapping.Connect(c.db, &c.conn) == mapping.StateError {
		mapping.Close(&c.db)
		return nil, errors.New("connecting for loads")
	}
	return c, nil
}

// exec runs one statement.
func (c *loadConn) exec(q string) error {
	var res mapping.Result
	defer mapping.DestroyResult(&res)
	if mapping.Query(c.conn, q, &res) == mapping.StateError {
		return errors.New(mapping.ResultError(&res))
	}
	return nil
}

// close lets go of the connection and of this handle on the database; the
// Writer's sql.DB keeps it open.
func (c *loadConn) close() {
	mapping.Disconnect(&c.conn)
	mapping.Close(&c.db)
}
