package syscheck

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// Print writes results as an aligned table (setting, current, needed,
// status, fix) followed by a summary line.
func Print(w io.Writer, results []Result, p Params) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SETTING\tCURRENT\tNEEDED\tSTATUS\tFIX")
	for _, r := range results {
		fix := r.Fix
		if fix == "" {
			fix = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Setting, r.Current, r.Needed, r.Status, fix)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, Summary(results, p))
	return err
}

// Summary is the line under the table.
func Summary(results []Result, p Params) string {
	low := Count(results, Low)
	s := fmt.Sprintf("%d connections: %d LOW, %d ok, %d info", max(p.Connections, 1), low, Count(results, OK), Count(results, Info))
	if low > 0 {
		s += "; run the LOW fixes as root (persist sysctls in /etc/sysctl.d/, the fd limit in limits.conf or the unit's LimitNOFILE=)"
	}
	return s
}
