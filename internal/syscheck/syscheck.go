// Package syscheck compares the kernel and process limits that decide how
// many connections a machine can hold, and how fast it accepts them, with
// what a given number of connections needs (the rules are in rules.go, the
// reasons in docs/tuning.md). It only reads /proc/sys and
// RLIMIT_NOFILE and prints the command that would change a setting; the
// tradeoff is that the needs are rules of thumb from that material, not
// measurements of this machine.
package syscheck

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
)

// Status is the verdict on one setting.
type Status int

// The verdicts.
const (
	// OK: the setting meets what the connections need.
	OK Status = iota
	// Low: the setting caps connections, or their accept rate, below what
	// was asked for; check-system exits 1.
	Low
	// Info: advice the setting does not follow, or a value that could not
	// be compared (a module not loaded, an unreadable file). It never
	// fails the check.
	Info
)

func (s Status) String() string {
	switch s {
	case OK:
		return "ok"
	case Low:
		return "LOW"
	default:
		return "info"
	}
}

// Result is one row of the report.
type Result struct {
	Setting string // "fs.nr_open", "ulimit -n", "listener web backlog"
	Current string // the value read, or why there is none ("not loaded")
	Needed  string // what the connections need, e.g. ">= 21024"
	Status  Status
	Fix     string // the command that sets the needed value; "" when none is due
}

// Listener is what the check needs to know of a configured listener.
type Listener struct {
	Name      string
	Backlog   int // 0: the system default, which Go takes from net.core.somaxconn
	ReusePort bool
	// UDPRecvBuffer and UDPSendBuffer are the UDP socket buffers an
	// HTTP/3 listener asks for (0: it serves no HTTP/3): the rmem_max and
	// wmem_max needs, the sizes the listener warns about at start when
	// the kernel caps them.
	UDPRecvBuffer, UDPSendBuffer int
}

// Params says what to check for.
type Params struct {
	// Connections is the number of concurrent client connections the
	// machine should hold; each is assumed to have one upstream connection
	// beside it. Values below 1 are treated as 1.
	Connections int
	// Listeners adds a backlog and a reuseport row per listener, and
	// raises the somaxconn need to the largest backlog. Nil adds none.
	Listeners []Listener
}

// System is where the values come from.
type System struct {
	// Sys is the /proc/sys tree: a sysctl key a.b.c is the file a/b/c.
	Sys fs.FS
	// NoFile returns RLIMIT_NOFILE. Nil reports the fd limit as unreadable.
	NoFile func() (soft, hard uint64, err error)
	// PageSize is the unit of net.ipv4.tcp_mem. Zero means 4096.
	PageSize int
}

// Local reads this machine: /proc/sys, this process's RLIMIT_NOFILE and
// the kernel's page size.
func Local() System {
	return System{Sys: os.DirFS("/proc/sys"), NoFile: rlimitNoFile, PageSize: os.Getpagesize()}
}

// Check reads every setting and returns one row per setting, in the order
// of the rule table, then one pair of rows per listener.
func Check(sys System, p Params) []Result {
	e := newEnv(sys, p)
	out := []Result{checkNoFile(sys.NoFile, e)}
	for _, r := range rules {
		out = append(out, r.check(sys.Sys, e))
	}
	somaxconn, err := readValues(sys.Sys, "net.core.somaxconn")
	for _, l := range p.Listeners {
		out = append(out, checkBacklog(l, somaxconn, err), checkReusePort(l))
	}
	return out
}

// Count returns how many rows have status s.
func Count(results []Result, s Status) int {
	n := 0
	for _, r := range results {
		if r.Status == s {
			n++
		}
	}
	return n
}

// readValues reads a sysctl as the whitespace-separated unsigned numbers
// it holds.
func readValues(fsys fs.FS, key string) ([]uint64, error) {
	b, err := fs.ReadFile(fsys, strings.ReplaceAll(key, ".", "/"))
	if err != nil {
		return nil, err
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		return nil, errors.New("empty")
	}
	vals := make([]uint64, len(fields))
	for i, f := range fields {
		if vals[i], err = strconv.ParseUint(f, 10, 64); err != nil {
			return nil, fmt.Errorf("not a number: %q", f)
		}
	}
	return vals, nil
}

// unreadable describes a read error for the Current column.
func unreadable(err error, missing string) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return missing
	case errors.Is(err, fs.ErrPermission):
		return "unreadable: permission denied"
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return "unreadable: " + err.Error()
}
