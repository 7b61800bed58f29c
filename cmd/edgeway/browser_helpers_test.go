package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/edgeway/edgeway/internal/testutil"
)

// browser is a headless chromium tab that a test drives with chromedp.
type browser struct {
	t     *testing.T
	ctx   context.Context
	shots string // the folder screenshots go to
	log   func() string

	mu       sync.Mutex
	problems []string // uncaught exceptions and console errors, not the network's
}

// stepTimeout bounds each step: a condition the page never reaches fails
// the test after it, with what was awaited.
const stepTimeout = 20 * time.Second

// newBrowser starts Debian's chromium headless (with --no-sandbox only
// when running as root, as in a container, where its sandbox cannot
// start), one tab, 1280x900. Screenshots go to $DASHBOARD_SHOTS when set,
// else to a temporary folder; the test logs which. log returns edgeway's
// log, shown when a step fails.
func newBrowser(t *testing.T, log func() string) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(testutil.Chromium(t)), chromedp.WindowSize(1280, 900), chromedp.Flag("disable-gpu", true))
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox)
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil { // starts the browser, with no deadline (see chromedp.Run)
		t.Fatalf("starting chromium: %v", err)
	}
	shots := os.Getenv("DASHBOARD_SHOTS")
	if shots == "" {
		shots = t.TempDir()
	} else if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots in %s", shots)
	b := &browser{t: t, ctx: ctx, shots: shots, log: log}
	if err := chromedp.Listen(ctx, b.watch); err != nil {
		t.Fatal(err)
	}
	return b
}

// watch keeps what the page should never do: throw, or log an error
// other than a network answer (a Content-Security-Policy violation is
// one, logged by the browser).
func (b *browser) watch(ev any) {
	var p string
	switch ev := ev.(type) {
	case *runtime.EventExceptionThrown:
		p = "exception: " + ev.ExceptionDetails.Text
		if ev.ExceptionDetails.Exception != nil {
			p += " " + ev.ExceptionDetails.Exception.Description
		}
	case *cdplog.EventEntryAdded:
		if ev.Entry.Level == cdplog.EntryLevelError && ev.Entry.Source != cdplog.EntrySourceNetwork {
			p = fmt.Sprintf("%s %s: %s (%s:%d)", ev.Entry.Source, ev.Entry.Level, ev.Entry.Text, ev.Entry.URL, ev.Entry.LineNumber)
		}
	}
	if p != "" {
		b.mu.Lock()
		b.problems = append(b.problems, p)
		b.mu.Unlock()
	}
}

// expect waits until a problem containing text was seen and forgets it.
func (b *browser) expect(text string) {
	b.t.Helper()
	testutil.WaitFor(b.t, "the page to log "+text, func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		for i, p := range b.problems {
			if strings.Contains(p, text) {
				b.problems = append(b.problems[:i], b.problems[i+1:]...)
				return true
			}
		}
		return false
	})
}

// checkClean fails the test when the page threw or logged an error.
func (b *browser) checkClean() {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range b.problems {
		b.t.Errorf("in the page: %s", p)
	}
}

// do runs the actions within stepTimeout, failing the test with what and
// a screenshot of the page as it was.
func (b *browser) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.fail(what, err)
	}
}

func (b *browser) fail(what string, err error) {
	b.t.Helper()
	b.shot("failed")
	text, _ := eval[string](b, "document.body ? document.body.innerText : ''")
	b.t.Fatalf("%s: %v\npage text:\n%s\nedgeway log:\n%s", what, err, text, b.log())
}

// eval evaluates a JavaScript expression in the page (awaiting a promise)
// and returns its value.
func eval[T any](b *browser, expr string) (T, error) {
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	return chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
}

// mustEval is eval that fails the test on an error.
func mustEval[T any](b *browser, expr string) T {
	b.t.Helper()
	v, err := eval[T](b, expr)
	if err != nil {
		b.fail("evaluating "+expr, err)
	}
	return v
}

// until waits until the JavaScript expression is truthy.
func until(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(stepTimeout))
}

// css is a CSS selector for chromedp.
func css(sel string) chromedp.CSS { return chromedp.CSS(sel) }

// shot saves a screenshot of the viewport as name.png.
func (b *browser) shot(name string) {
	b.t.Helper()
	b.capture(name, chromedp.CaptureScreenshot())
}

// shotFull saves a screenshot of the whole page as name.png, for pages
// longer than the viewport; it lays the page out beyond the viewport and
// back, so the pages a step then clicks in are shot with shot.
func (b *browser) shotFull(name string) {
	b.t.Helper()
	b.capture(name, chromedp.FullScreenshot(100))
}

func (b *browser) capture(name string, a chromedp.Action[[]byte]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	png, err := chromedp.Run(ctx, a)
	if err != nil {
		b.t.Errorf("screenshot %s: %v", name, err)
		return
	}
	if err := os.WriteFile(filepath.Join(b.shots, name+".png"), png, 0o644); err != nil {
		b.t.Error(err)
	}
}

// colorScheme makes the page see prefers-color-scheme: scheme ("dark",
// "light").
func colorScheme(scheme string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}})
		return err
	})
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `'`, `\'`, "\n", `\n`)
	return "'" + r.Replace(s) + "'"
}
