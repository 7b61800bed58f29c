// Package testutil holds the helpers that edgeway's tests share: building
// and starting the edgeway binary, watching its log, running curl and
// waiting on conditions with deadlines instead of sleeping.
package testutil

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Eventually calls cond until it returns true or timeout passes, then fails
// the test with msg.
func Eventually(t testing.TB, timeout time.Duration, cond func() bool, msg string, args ...any) {
	t.Helper()
	if !Poll(timeout, cond) {
		t.Fatalf("timed out after %v: "+msg, append([]any{timeout}, args...)...)
	}
}

// Poll calls cond until it returns true (true) or timeout passes
// (false): Eventually for a goroutine other than the test's, which may
// not fail the test itself.
func Poll(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for wait := time.Millisecond; ; wait = min(wait*2, 50*time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(wait) // polling interval, not a wait for an event
	}
}

// RetryAfterWithin checks the Retry-After v of a token bucket that gives
// one token per full and started refilling at start (its first request):
// from full less the whole seconds since start, rounded up, to full (a
// loaded machine slow between the requests sees a little under full).
func RetryAfterWithin(v string, full time.Duration, start time.Time) error {
	most := int(full / time.Second)
	least := most - int(math.Ceil(time.Since(start).Seconds()))
	if s, err := strconv.Atoi(v); err != nil || s < least || s > most {
		return fmt.Errorf("Retry-After %q, want from %d to %d", v, least, most)
	}
	return nil
}

// ModuleRoot returns the repository root (the folder holding go.mod).
func ModuleRoot(t testing.TB) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

var (
	buildOnce sync.Once
	buildPath string
	buildErr  error
)

// Binary builds cmd/edgeway once per test process and returns its path;
// under the race detector the binary has it too, and a process that
// reports a data race fails its test (see Start).
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "edgeway-bin-")
		if err != nil {
			buildErr = err
			return
		}
		buildPath = filepath.Join(dir, "edgeway")
		args := []string{"build", "-o", buildPath}
		if raceBuild {
			args = append(args, "-race")
		}
		cmd := exec.Command("go", append(args, "./cmd/edgeway")...)
		cmd.Dir = ModuleRoot(t)
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildPath
}

// FreePort returns a loopback port that was free for TCP and UDP a
// moment ago, for a configuration that must name its ports before the
// process starts (pebble's validation ports, the example's listeners).
// It is picked at random below the kernel's ephemeral range
// (/proc/sys/net/ipv4/ip_local_port_range), so that no outgoing
// connection of a concurrent test is given it between this check and
// the bind; and never twice in one test binary.
func FreePort(t testing.TB) int {
	t.Helper()
	lo, hi := 20000, ephemeralStart()
	if hi <= lo {
		lo, hi = 1024, 32768
	}
	portsMu.Lock()
	defer portsMu.Unlock()
	for range 1000 {
		port := lo + rand.IntN(hi-lo)
		if portsGiven[port] || !PortFree(port) {
			continue
		}
		portsGiven[port] = true
		return port
	}
	t.Fatalf("no free port in [%d, %d)", lo, hi)
	return 0
}

var (
	portsMu    sync.Mutex
	portsGiven = map[int]bool{}
)

// ephemeralStart is the first port the kernel hands out for port 0 and
// outgoing connections (32768 when it cannot be read).
func ephemeralStart() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	var lo, hi int
	if _, err := fmt.Sscan(string(b), &lo, &hi); err != nil || lo <= 0 {
		return 32768
	}
	return lo
}

// PortFree reports whether 127.0.0.1:port can be bound now, for TCP and
// UDP: for a test that must use a fixed port (the shipped example's) and
// skips when it is taken.
func PortFree(port int) bool {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return false
	}
	defer l.Close()
	u, err := net.ListenPacket("udp", addr)
	if err != nil {
		return false
	}
	u.Close()
	return true
}

// WriteFiles writes name -> content under dir, creating folders.
func WriteFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for one writer and many readers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Proc is a running edgeway process whose log is captured.
type Proc struct {
	Cmd  *exec.Cmd
	log  *syncBuffer
	done chan struct{}
	err  error
}

// Start runs `edgeway run -c conf` and stops it (SIGKILL if needed) when the
// test ends.
func Start(t testing.TB, conf string) *Proc {
	t.Helper()
	p := &Proc{log: &syncBuffer{}, done: make(chan struct{})}
	p.Cmd = exec.Command(Binary(t), "run", "-c", conf)
	p.Cmd.Stdout, p.Cmd.Stderr = p.log, p.log
	if err := p.Cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.Cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.Cmd.Process.Kill()
		<-p.done
		if strings.Contains(p.Log(), "WARNING: DATA RACE") {
			t.Errorf("edgeway reported a data race")
		}
		if t.Failed() {
			t.Logf("edgeway log:\n%s", p.Log())
		}
	})
	return p
}

// Log returns everything the process has logged so far.
func (p *Proc) Log() string { return p.log.String() }

// Exited reports whether the process has ended.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Wait waits up to timeout for the process to exit and returns its exit
// code.
func (p *Proc) Wait(t testing.TB, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
		return p.Cmd.ProcessState.ExitCode()
	case <-time.After(timeout):
		t.Fatalf("edgeway did not exit within %v", timeout)
		return -1
	}
}

var (
	listenRE     = regexp.MustCompile(`msg=listening listener=(\S+) addr=(\S+)`)
	listenQUICRE = regexp.MustCompile(`msg="listening quic" listener=(\S+) addr=(\S+)`)
)

// Addrs waits until every listener has logged its address and returns
// them by listener name.
func (p *Proc) Addrs(t testing.TB, n int) map[string]string {
	t.Helper()
	return p.loggedAddrs(t, listenRE, n)
}

// QUICAddrs is Addrs for the QUIC (HTTP/3) listeners' UDP addresses.
func (p *Proc) QUICAddrs(t testing.TB, n int) map[string]string {
	t.Helper()
	return p.loggedAddrs(t, listenQUICRE, n)
}

func (p *Proc) loggedAddrs(t testing.TB, re *regexp.Regexp, n int) map[string]string {
	t.Helper()
	var addrs map[string]string
	Eventually(t, 20*time.Second, func() bool {
		if p.Exited() {
			t.Fatalf("edgeway exited: %v\n%s", p.err, p.Log())
		}
		addrs = map[string]string{}
		for _, m := range re.FindAllStringSubmatch(p.Log(), -1) {
			addrs[m[1]] = m[2]
		}
		return len(addrs) >= n
	}, "waiting for %d listeners in the log:\n%s", n, p.Log())
	return addrs
}

// WaitLog waits until the log matches re.
func (p *Proc) WaitLog(t testing.TB, re string) {
	t.Helper()
	rx := regexp.MustCompile(re)
	Eventually(t, 10*time.Second, func() bool { return rx.MatchString(p.Log()) },
		"log never matched %q:\n%s", re, p.Log())
}

// Curl runs curl with a 20 s limit and returns its stdout and exit code
// (0 on success); -s is always added.
func Curl(t testing.TB, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "curl", append([]string{"-s"}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil && cmd.ProcessState == nil {
		t.Fatalf("curl: %v", err)
	}
	if strings.Contains(errb.String(), "is not a recognized option") {
		t.Fatalf("curl too old: %s", errb.String())
	}
	return out.String(), cmd.ProcessState.ExitCode()
}

// RequireCurl fails the test when curl is missing (CI installs it).
func RequireCurl(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("curl not found: install it (apt-get install curl); .ci/run does")
	}
}

// Promtool returns the path of Prometheus' promtool, which checks the
// shipped alert rules and lints a scrape, and fails the test when it is
// missing (CI installs it).
func Promtool(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool not found: install it (apt-get install --no-install-recommends prometheus); .ci/run does")
	}
	return p
}

// Chromium returns the path of Debian's chromium, the browser the
// dashboard test drives headless, and fails the test when it is missing
// (CI installs it).
func Chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("chromium not found: install it (apt-get install -y --no-install-recommends chromium); .ci/run does")
	return ""
}

// WaitFor polls cond until it holds, failing the test after 10 s with what
// it was waiting for.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	Eventually(t, 10*time.Second, cond, "waiting for %s", what)
}
