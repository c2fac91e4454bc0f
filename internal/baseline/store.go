package baseline

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// File is where the baselines are kept: $XDG_STATE_HOME/whyslow/baselines.json,
// else ~/.local/state/whyslow/baselines.json. Under sudo, the home of the
// user who ran sudo is not used: root's state is root's.
func File() (string, error) {
	dir := os.Getenv("XDG_STATE_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("finding the state directory: %w", err)
		}
		dir = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(dir, "whyslow", "baselines.json"), nil
}

// stored is the file's shape, versioned for the next reader.
type stored struct {
	Version int               `json:"version"`
	Devices map[string]Result `json:"devices"` // by Key
}

// Load reads the kept baselines; a missing file is none.
func Load(path string) (map[string]Result, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]Result{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading baselines: %w", err)
	}
	var s stored
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("reading baselines %s: %w", path, err)
	}
	if s.Devices == nil {
		s.Devices = map[string]Result{}
	}
	return s.Devices, nil
}

// Save keeps r under key, over what was kept for it, except the write
// throughput a measurement without a directory could not take.
func Save(path, key string, r Result) error {
	kept, err := Load(path)
	if err != nil {
		return err
	}
	if old, ok := kept[key]; ok && r.SeqWriteBPS == 0 {
		r.SeqWriteBPS = old.SeqWriteBPS
	}
	kept[key] = r
	b, err := json.MarshalIndent(stored{Version: 1, Devices: kept}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("saving the baseline: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".baselines-*.json")
	if err != nil {
		return fmt.Errorf("saving the baseline: %w", err)
	}
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("saving the baseline: %w", err)
	}
	tmp.Close()
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("saving the baseline: %w", err)
	}
	return nil
}
