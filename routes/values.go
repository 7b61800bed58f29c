package routes

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Values in the language: durations as Go writes them (5s, 250ms, 1m30s),
// sizes with an optional unit (512, 16KB, 4KiB, 1MiB; KB is 1000 bytes and
// KiB 1024), integers and on|off switches. Each parser's error says what
// was expected.

// ParseDuration reads a duration such as 5s, 250ms or 1m30s. Negative
// durations are refused.
func ParseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil || strings.HasPrefix(s, "-") {
		return 0, fmt.Errorf("invalid duration %q (expected a number and a unit, e.g. 10s, 250ms, 1m30s)", s)
	}
	return d, nil
}

var sizeUnits = []struct {
	suffix string
	mult   int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1},
}

// ParseSize reads a byte count with an optional unit: B, KB, MB, GB
// (powers of 1000) or KiB, MiB, GiB (powers of 1024), in any letter case.
func ParseSize(s string) (int64, error) {
	num, mult := s, int64(1)
	for _, u := range sizeUnits {
		if len(s) > len(u.suffix) && strings.EqualFold(s[len(s)-len(u.suffix):], u.suffix) {
			num, mult = s[:len(s)-len(u.suffix)], u.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("invalid size %q (expected a byte count such as 512, 16KB, 4KiB or 1MiB)", s)
	}
	return n * mult, nil
}

// ParseInt reads a decimal integer.
func ParseInt(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("invalid number %q (expected a whole number)", s)
	}
	return n, nil
}

// ParseSwitch reads on or off.
func ParseSwitch(s string) (bool, error) {
	switch s {
	case "on":
		return true, nil
	case "off":
		return false, nil
	}
	return false, fmt.Errorf("invalid switch %q (expected on or off)", s)
}
