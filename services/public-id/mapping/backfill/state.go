package backfill

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// FileState is a State kept in a file, with what it was a backfill of: a run that goes on
// checks that it copies the same source into the same target.
type FileState struct {
	From  string `json:"from"` // the source, as the caller names it (no password)
	To    string `json:"to"`   // the target, likewise
	State State  `json:"state"`
}

// LoadFile reads a state file; a missing file is ok false.
func LoadFile(path string) (fst FileState, ok bool, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return FileState{}, false, nil
	}
	if err != nil {
		return FileState{}, false, fmt.Errorf("backfill: state file: %w", err)
	}
	if err := json.Unmarshal(b, &fst); err != nil {
		return FileState{}, false, fmt.Errorf("backfill: state file %s: %w", path, err)
	}
	return fst, true, nil
}

// SaveFile writes a state file whole or not at all: a temporary file beside it, synced, then
// renamed over it, and the directory synced, so a run killed at any moment leaves the last
// state or the one before.
func SaveFile(path string, fst FileState) error {
	b, err := json.MarshalIndent(fst, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("backfill: state file: %w", err)
	}
	tmp := f.Name()
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("backfill: state file: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		err = d.Sync()
		d.Close()
		if err != nil {
			return fmt.Errorf("backfill: state file: sync %s: %w", dir, err)
		}
	}
	return nil
}
