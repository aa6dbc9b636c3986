package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockDir serialises up and down on one cluster directory (two terminals, or a
// test harness and a person): each takes an exclusive flock on DIR/.lock for its
// whole run. The returned function releases it.
func lockDir(dir string) (func(), error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	return func() { _ = f.Close() }, nil
}
