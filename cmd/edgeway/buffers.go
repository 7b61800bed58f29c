package main

import (
	"fmt"
	"os"

	"github.com/edgeway/edgeway/conf"
)

// makeBufferDir creates the buffers block's dir when it is missing (a
// WritableDir, which preflight checks can be made), before a configuration
// that names it is applied: request bodies spill there.
func makeBufferDir(cfg *conf.Config) error {
	if cfg.Buffers.Dir == "" {
		return nil
	}
	if err := os.MkdirAll(cfg.Buffers.Dir, 0o700); err != nil {
		return fmt.Errorf("buffers dir: %w", err)
	}
	return nil
}
