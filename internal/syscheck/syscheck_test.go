package syscheck_test

import (
	"errors"
	"io/fs"
	"maps"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/edgeway/edgeway/internal/syscheck"
)

// goodTree is a /proc/sys that meets every rule, hard and advice, for up
// to 100,000 connections.
var goodTree = map[string]string{
	"fs.nr_open":                     "1048576",
	"fs.file-max":                    "9223372036854775807",
	"net.core.somaxconn":             "65535",
	"net.ipv4.tcp_max_syn_backlog":   "65535",
	"net.ipv4.tcp_mem":               "1000000 2000000 4000000",
	"net.netfilter.nf_conntrack_max": "2000000",
	"net.ipv4.ip_local_port_range":   "1024\t65535",
	"net.ipv4.tcp_tw_reuse":          "1",
	"net.ipv4.tcp_timestamps":        "1",
	"net.ipv4.tcp_fin_timeout":       "30",
	"net.ipv4.tcp_max_tw_buckets":    "262144",
	"net.core.netdev_max_backlog":    "16384",
	"net.core.rmem_max":              "212992",
	"net.core.wmem_max":              "212992",
	"net.ipv4.tcp_fastopen":          "3",
	"vm.swappiness":                  "10",
}

// tree builds a fake /proc/sys from goodTree with changes; an empty value
// removes the file.
func tree(changes map[string]string) fstest.MapFS {
	m := maps.Clone(goodTree)
	maps.Copy(m, changes)
	fsys := fstest.MapFS{}
	for k, v := range m {
		if v != "" {
			fsys[strings.ReplaceAll(k, ".", "/")] = &fstest.MapFile{Data: []byte(v + "\n")}
		}
	}
	return fsys
}

func hardLimit(n uint64) func() (uint64, uint64, error) {
	return func() (uint64, uint64, error) { return 1024, n, nil }
}

// deniedFS answers every read of name with a permission error, as
// /proc/sys does for a few keys to an unprivileged user.
type deniedFS struct {
	fs.FS
	name string
}

func (d deniedFS) Open(name string) (fs.File, error) {
	if name == d.name {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrPermission}
	}
	return d.FS.Open(name)
}

// row is what a test expects of one row; empty fields are not checked.
type row struct {
	status                     syscheck.Status
	current, needed, fixSubstr string
}

func TestSyscheckRules(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc      string
		conns     int
		listeners []syscheck.Listener
		fsys      fs.FS
		noFile    func() (uint64, uint64, error)
		want      map[string]row
		wantLow   int
	}{
		{desc: "everything meets 10000 connections", conns: 10000, fsys: tree(nil), noFile: hardLimit(1 << 20),
			want: map[string]row{
				"ulimit -n":                    {status: syscheck.OK, current: "1048576 (hard)", needed: ">= 21024"},
				"fs.nr_open":                   {status: syscheck.OK, needed: ">= 21024"},
				"fs.file-max":                  {status: syscheck.OK, current: "9223372036854775807"},
				"net.core.somaxconn":           {status: syscheck.OK, needed: ">= 4096"},
				"net.ipv4.tcp_mem":             {status: syscheck.OK, needed: "max >= 10000 pages"},
				"net.ipv4.ip_local_port_range": {status: syscheck.OK, current: "1024 65535"},
				"net.core.rmem_max":            {status: syscheck.OK, needed: "any (no h3)"},
			}},
		{desc: "the fd limit is short", conns: 10000, fsys: tree(nil), noFile: hardLimit(20000), wantLow: 1,
			want: map[string]row{"ulimit -n": {status: syscheck.Low, current: "20000 (hard)",
				fixSubstr: "ulimit -n 21024 (systemd: LimitNOFILE=21024)"}}},
		{desc: "a million connections outgrow nr_open, the queues, tcp_mem and conntrack", conns: 1000000,
			noFile: hardLimit(1 << 30), wantLow: 5,
			fsys: tree(map[string]string{"net.core.somaxconn": "4096", "net.ipv4.tcp_max_syn_backlog": "2048",
				"net.ipv4.tcp_mem": "287898 383866 575796", "net.netfilter.nf_conntrack_max": "262144"}),
			want: map[string]row{
				"ulimit -n":                      {status: syscheck.OK},
				"fs.nr_open":                     {status: syscheck.Low, needed: ">= 2001024", fixSubstr: "sysctl -w fs.nr_open=2001024"},
				"fs.file-max":                    {status: syscheck.OK},
				"net.core.somaxconn":             {status: syscheck.Low, needed: ">= 62500"},
				"net.ipv4.tcp_max_syn_backlog":   {status: syscheck.Low, needed: ">= 62500"},
				"net.ipv4.tcp_mem":               {status: syscheck.Low, fixSubstr: `sysctl -w net.ipv4.tcp_mem="287898 383866 1000000"`},
				"net.netfilter.nf_conntrack_max": {status: syscheck.Low, needed: ">= 2000000"},
				"net.ipv4.ip_local_port_range":   {status: syscheck.OK, needed: "64512 ports wide"},
			}},
		{desc: "advice not followed is info, never LOW", conns: 10000, noFile: hardLimit(1 << 20),
			fsys: tree(map[string]string{"net.ipv4.tcp_tw_reuse": "2", "net.ipv4.tcp_fin_timeout": "60", "vm.swappiness": "60",
				"net.core.netdev_max_backlog": "1000", "net.ipv4.tcp_fastopen": "1", "net.ipv4.ip_local_port_range": "32768 32999"}),
			want: map[string]row{
				"net.ipv4.tcp_tw_reuse":        {status: syscheck.Info, fixSubstr: "sysctl -w net.ipv4.tcp_tw_reuse=1"},
				"net.ipv4.tcp_fin_timeout":     {status: syscheck.Info, needed: "<= 30"},
				"vm.swappiness":                {status: syscheck.Info, fixSubstr: "vm.swappiness=10"},
				"net.core.netdev_max_backlog":  {status: syscheck.Info},
				"net.ipv4.tcp_fastopen":        {status: syscheck.Info, needed: "3"},
				"net.ipv4.ip_local_port_range": {status: syscheck.Info, fixSubstr: `ip_local_port_range="1024 65535"`},
			}},
		{desc: "conntrack module not loaded", conns: 10000, noFile: hardLimit(1 << 20),
			fsys: tree(map[string]string{"net.netfilter.nf_conntrack_max": ""}),
			want: map[string]row{"net.netfilter.nf_conntrack_max": {status: syscheck.Info, current: "not loaded", needed: ">= 20000"}}},
		{desc: "a key this kernel lacks", conns: 10000, noFile: hardLimit(1 << 20),
			fsys: tree(map[string]string{"net.ipv4.tcp_fastopen": ""}),
			want: map[string]row{"net.ipv4.tcp_fastopen": {status: syscheck.Info, current: "not present"}}},
		{desc: "unreadable values", conns: 10000, noFile: func() (uint64, uint64, error) { return 0, 0, errors.New("no rlimit") },
			fsys: deniedFS{tree(map[string]string{"fs.nr_open": "lots", "net.ipv4.tcp_mem": "1 2"}), "fs/file-max"},
			want: map[string]row{
				"ulimit -n":        {status: syscheck.Info, current: "unreadable: no rlimit"},
				"fs.nr_open":       {status: syscheck.Info, current: `unreadable: not a number: "lots"`, needed: ">= 21024"},
				"fs.file-max":      {status: syscheck.Info, current: "unreadable: permission denied"},
				"net.ipv4.tcp_mem": {status: syscheck.Info, current: "unreadable: 2 values, expected 3"},
			}},
		// A Debian default (somaxconn 4096, SYN backlog 2048 on a small
		// machine) caps nothing for 100 connections.
		{desc: "defaults hold a small N", conns: 100, noFile: hardLimit(1 << 20),
			fsys: tree(map[string]string{"net.core.somaxconn": "4096", "net.ipv4.tcp_max_syn_backlog": "2048"}),
			want: map[string]row{
				"net.core.somaxconn":           {status: syscheck.OK, needed: ">= 100"},
				"net.ipv4.tcp_max_syn_backlog": {status: syscheck.OK, needed: ">= 100"},
			}},
		{desc: "an HTTP/3 listener's UDP buffers", conns: 100, noFile: hardLimit(1 << 20),
			fsys:      tree(map[string]string{"net.core.rmem_max": "212992", "net.core.wmem_max": "8388608"}),
			listeners: []syscheck.Listener{{Name: "websecure", UDPRecvBuffer: 7 << 20, UDPSendBuffer: 7 << 20}},
			want: map[string]row{
				"net.core.rmem_max": {status: syscheck.Info, needed: ">= 7340032", fixSubstr: "sysctl -w net.core.rmem_max=7340032"},
				"net.core.wmem_max": {status: syscheck.OK, needed: ">= 7340032"},
			}},
		{desc: "listener backlogs against somaxconn", conns: 10000, noFile: hardLimit(1 << 20), wantLow: 2,
			fsys:      tree(map[string]string{"net.core.somaxconn": "4096", "net.ipv4.tcp_max_syn_backlog": "8192"}),
			listeners: []syscheck.Listener{{Name: "web", Backlog: 8192, ReusePort: true}, {Name: "admin"}},
			want: map[string]row{
				"net.core.somaxconn":           {status: syscheck.Low, needed: ">= 8192"},
				"listener web backlog":         {status: syscheck.Low, current: "8192 (cut to 4096)", fixSubstr: "sysctl -w net.core.somaxconn=8192"},
				"listener web reuseport":       {status: syscheck.OK, current: "on"},
				"listener admin backlog":       {status: syscheck.OK, current: "default"},
				"listener admin reuseport":     {status: syscheck.Info, current: "off", fixSubstr: "reuseport on (in listen admin)"},
				"net.ipv4.tcp_max_syn_backlog": {status: syscheck.OK},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			p := syscheck.Params{Connections: tt.conns, Listeners: tt.listeners}
			got := syscheck.Check(syscheck.System{Sys: tt.fsys, NoFile: tt.noFile, PageSize: 4096}, p)
			bySetting := map[string]syscheck.Result{}
			for _, r := range got {
				bySetting[r.Setting] = r
			}
			for setting, w := range tt.want {
				r, ok := bySetting[setting]
				if !ok {
					t.Errorf("no row %q", setting)
					continue
				}
				if r.Status != w.status || w.current != "" && r.Current != w.current ||
					w.needed != "" && r.Needed != w.needed || !strings.Contains(r.Fix, w.fixSubstr) {
					t.Errorf("%s = %+v, want %+v", setting, r, w)
				}
				if r.Status == syscheck.OK && r.Fix != "" {
					t.Errorf("%s is ok but has a fix %q", setting, r.Fix)
				}
			}
			if n := syscheck.Count(got, syscheck.Low); n != tt.wantLow {
				t.Errorf("%d LOW rows, want %d: %+v", n, tt.wantLow, got)
			}
		})
	}
}

// TestSyscheckEveryKeyHasARow checks that the table covers every setting
// docs/tuning.md lists, in a stable order beginning with the fd limit.
func TestSyscheckEveryKeyHasARow(t *testing.T) {
	t.Parallel()
	got := syscheck.Check(syscheck.System{Sys: tree(nil), NoFile: hardLimit(1 << 20)}, syscheck.Params{Connections: 1})
	if got[0].Setting != "ulimit -n" {
		t.Errorf("first row is %q, want ulimit -n", got[0].Setting)
	}
	seen := map[string]bool{}
	for _, r := range got {
		seen[r.Setting] = true
	}
	for key := range goodTree {
		if !seen[key] {
			t.Errorf("no row for %s", key)
		}
	}
	if len(got) != len(goodTree)+1 {
		t.Errorf("%d rows, want %d", len(got), len(goodTree)+1)
	}
}
