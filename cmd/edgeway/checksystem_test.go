package main

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgeway/edgeway/internal/syscheck"
	"github.com/edgeway/edgeway/internal/testutil"
	"github.com/edgeway/edgeway/listeners/h3"
)

// stockKernel is /proc/sys as a stock 6.x kernel on a 16 GiB machine has
// it, with conntrack loaded.
var stockKernel = map[string]string{
	"fs/nr_open":                     "1048576\n",
	"fs/file-max":                    "9223372036854775807\n",
	"net/core/somaxconn":             "4096\n",
	"net/ipv4/tcp_max_syn_backlog":   "4096\n",
	"net/ipv4/tcp_mem":               "188760\t251683\t377520\n",
	"net/netfilter/nf_conntrack_max": "262144\n",
	"net/ipv4/ip_local_port_range":   "32768\t60999\n",
	"net/ipv4/tcp_tw_reuse":          "2\n",
	"net/ipv4/tcp_timestamps":        "1\n",
	"net/ipv4/tcp_fin_timeout":       "60\n",
	"net/ipv4/tcp_max_tw_buckets":    "262144\n",
	"net/core/netdev_max_backlog":    "1000\n",
	"net/core/rmem_max":              "212992\n",
	"net/core/wmem_max":              "212992\n",
	"net/ipv4/tcp_fastopen":          "1\n",
	"vm/swappiness":                  "60\n",
}

func fakeSystem(t *testing.T, hardNoFile uint64) syscheck.System {
	dir := t.TempDir()
	testutil.WriteFiles(t, dir, stockKernel)
	return syscheck.System{
		Sys:      os.DirFS(dir),
		NoFile:   func() (uint64, uint64, error) { return 1024, hardNoFile, nil },
		PageSize: 4096,
	}
}

// TestCheckSystemTable pins the printed table for a stock kernel.
func TestCheckSystemTable(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	code := checkSystem([]string{"--connections", "10000"}, &stdout, &stderr, fakeSystem(t, 524288))
	want := `SETTING                         CURRENT               NEEDED              STATUS  FIX
ulimit -n                       524288 (hard)         >= 21024            ok      -
fs.nr_open                      1048576               >= 21024            ok      -
fs.file-max                     9223372036854775807   >= 21024            ok      -
net.core.somaxconn              4096                  >= 4096             ok      -
net.ipv4.tcp_max_syn_backlog    4096                  >= 4096             ok      -
net.ipv4.tcp_mem                188760 251683 377520  max >= 10000 pages  ok      -
net.netfilter.nf_conntrack_max  262144                >= 20000            ok      -
net.ipv4.ip_local_port_range    32768 60999           10000 ports wide    ok      -
net.ipv4.tcp_tw_reuse           2                     1                   info    sysctl -w net.ipv4.tcp_tw_reuse=1
net.ipv4.tcp_timestamps         1                     1                   ok      -
net.ipv4.tcp_fin_timeout        60                    <= 30               info    sysctl -w net.ipv4.tcp_fin_timeout=30
net.ipv4.tcp_max_tw_buckets     262144                >= 131072           ok      -
net.core.netdev_max_backlog     1000                  >= 16384            info    sysctl -w net.core.netdev_max_backlog=16384
net.core.rmem_max               212992                any (no h3)         ok      -
net.core.wmem_max               212992                any (no h3)         ok      -
net.ipv4.tcp_fastopen           1                     3                   info    sysctl -w net.ipv4.tcp_fastopen=3
vm.swappiness                   60                    <= 10               info    sysctl -w vm.swappiness=10
10000 connections: 0 LOW, 12 ok, 5 info
`
	if code != 0 || stdout.String() != want || stderr.Len() > 0 {
		t.Errorf("exit %d, stderr %q, stdout:\n%s\nwant:\n%s", code, stderr.String(), stdout.String(), want)
	}
}

func TestCheckSystemExitCode(t *testing.T) {
	t.Parallel()
	conf := filepath.Join(t.TempDir(), "edgeway.conf")
	testutil.WriteFiles(t, filepath.Dir(conf), map[string]string{"edgeway.conf": "listen web {\n  addr 127.0.0.1:0\n  backlog 8192\n  reuseport on\n}\n" +
		"listen plain { addr 127.0.0.1:0 }\nupstream u { server 127.0.0.1:1 }\nroute r { match PathPrefix(`/`); to u }\n"})
	tests := []struct {
		desc     string
		args     []string
		nofile   uint64
		wantCode int
		wantOut  []string // text that must appear, runs of spaces as one
	}{
		{desc: "default connections fit", nofile: 65536, wantCode: 0,
			wantOut: []string{"ulimit -n 65536 (hard) >= 21024 ok -", "10000 connections: 0 LOW, 12 ok, 5 info"}},
		{desc: "the fd limit is short", args: []string{"--connections", "50000"}, nofile: 20000, wantCode: 1,
			wantOut: []string{"ulimit -n 20000 (hard) >= 101024 LOW ulimit -n 101024 (systemd: LimitNOFILE=101024)",
				"50000 connections: 1 LOW, 10 ok, 6 info; run the LOW fixes as root"}},
		{desc: "a listener backlog above somaxconn", args: []string{"-c", conf}, nofile: 65536, wantCode: 1,
			wantOut: []string{
				"net.core.somaxconn 4096 >= 8192 LOW sysctl -w net.core.somaxconn=8192",
				"net.ipv4.tcp_max_syn_backlog 4096 >= 8192 LOW sysctl -w net.ipv4.tcp_max_syn_backlog=8192",
				"listener web backlog 8192 (cut to 4096) somaxconn >= 8192 LOW sysctl -w net.core.somaxconn=8192",
				"listener web reuseport on on ok -",
				"listener plain backlog default - (somaxconn) ok -",
				"listener plain reuseport off on info reuseport on (in listen plain)",
			}},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			code := checkSystem(tt.args, &stdout, &stderr, fakeSystem(t, tt.nofile))
			if code != tt.wantCode {
				t.Errorf("exit %d, want %d; stderr %q", code, tt.wantCode, stderr.String())
			}
			out := strings.Join(strings.Fields(stdout.String()), " ")
			for _, w := range tt.wantOut {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, stdout.String())
				}
			}
		})
	}
}

func TestCheckSystemUsageErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc     string
		args     []string
		wantCode int
		wantErr  string
	}{
		{desc: "unknown flag", args: []string{"--conns", "5"}, wantCode: 2, wantErr: "flag provided but not defined"},
		{desc: "zero connections", args: []string{"--connections", "0"}, wantCode: 2, wantErr: "--connections must be at least 1"},
		{desc: "stray argument", args: []string{"now"}, wantCode: 2, wantErr: `unexpected argument "now"`},
		{desc: "a configuration that does not load", args: []string{"-c", "/nonexistent/edgeway.conf"}, wantCode: 1, wantErr: "reading config"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			code := checkSystem(tt.args, &stdout, &stderr, fakeSystem(t, 1<<20))
			if code != tt.wantCode || !strings.Contains(stderr.String(), tt.wantErr) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, stderr.String(), tt.wantCode, tt.wantErr)
			}
		})
	}
}

// TestCheckSystemRealProc runs the command as a user would, against this
// machine's /proc: a million connections need more than any default
// allows.
func TestCheckSystemRealProc(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/sys/fs/nr_open"); err != nil {
		t.Skipf("no /proc/sys here: %v", err)
	}
	var stdout, stderr bytes.Buffer
	code := dispatch([]string{"check-system", "--connections", "1000000"}, &stdout, &stderr)
	if code != 1 {
		t.Errorf("exit %d, want 1; stderr %q\n%s", code, stderr.String(), stdout.String())
	}
	var ulimit string
	for _, l := range strings.Split(stdout.String(), "\n") {
		if strings.HasPrefix(l, "ulimit -n ") {
			ulimit = strings.Join(strings.Fields(l), " ")
		}
	}
	_, hard, err := syscheck.Local().NoFile()
	switch {
	case err != nil:
		t.Fatalf("RLIMIT_NOFILE: %v", err)
	case hard >= 2*1000000+1024:
		t.Logf("the hard fd limit (%d) fits a million connections; not asserting the ulimit row", hard)
	case !strings.Contains(ulimit, "LOW ulimit -n 2001024"):
		t.Errorf("ulimit row = %q, want LOW with its fix\n%s", ulimit, stdout.String())
	}
	if !strings.Contains(stdout.String(), "1000000 connections: ") {
		t.Errorf("no summary line:\n%s", stdout.String())
	}
}

// TestCheckSystemSmallN: a Debian default (SYN backlog 2048 on a small
// machine) caps nothing for 100 connections, so it exits 0; and the
// shipped example's HTTP/3 listener gets the same rmem_max/wmem_max
// verdict the listener logs at start (the sizes quic-go asks for).
func TestCheckSystemSmallN(t *testing.T) {
	t.Parallel()
	sys := fakeSystem(t, 65536)
	dir := t.TempDir()
	kernel := maps.Clone(stockKernel)
	kernel["net/ipv4/tcp_max_syn_backlog"] = "2048\n"
	testutil.WriteFiles(t, dir, kernel)
	sys.Sys = os.DirFS(dir)
	var stdout, stderr bytes.Buffer
	if code := checkSystem([]string{"--connections", "100"}, &stdout, &stderr, sys); code != 0 {
		t.Errorf("--connections 100 on a default kernel: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	stdout.Reset()
	example := filepath.Join(testutil.ModuleRoot(t), "examples", "edgeway.conf")
	checkSystem([]string{"--connections", "100", "-c", example}, &stdout, &stderr, sys)
	out := strings.Join(strings.Fields(stdout.String()), " ")
	want := fmt.Sprintf("net.core.rmem_max 212992 >= %d info sysctl -w net.core.rmem_max=%d", h3.DefaultBufferSize, h3.DefaultBufferSize)
	if !strings.Contains(out, want) {
		t.Errorf("the example's h3 listener: no %q in\n%s", want, stdout.String())
	}
}
