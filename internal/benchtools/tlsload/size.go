package main

import (
	"fmt"
	"strconv"
	"strings"
)

// sizeUnits maps a suffix to its multiplier; the longest suffix is tried
// first so "KiB" is not read as "B".
var sizeUnits = []struct {
	suffix string
	mult   int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9},
	{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30},
	{"B", 1},
}

// parseSize reads a byte count such as "1GiB", "256KiB", "10MB" or "4096".
// It accepts whole numbers only and rejects zero, negatives and overflow.
func parseSize(s string) (int64, error) {
	num, mult := strings.TrimSpace(s), int64(1)
	for _, u := range sizeUnits {
		if strings.HasSuffix(num, u.suffix) {
			num, mult = strings.TrimSpace(strings.TrimSuffix(num, u.suffix)), u.mult
			break
		}
	}
	v, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("size %q: %w", s, err)
	}
	if v <= 0 {
		return 0, fmt.Errorf("size %q: must be positive", s)
	}
	if v > (1<<62)/mult {
		return 0, fmt.Errorf("size %q: too large", s)
	}
	return v * mult, nil
}
