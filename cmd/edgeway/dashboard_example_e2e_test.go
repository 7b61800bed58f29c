package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/testutil"
)

// TestDashboardOnTheExample: the shipped example, as `make run` starts
// it (its ports moved to free ones), shows its routes and upstreams in
// the dashboard after a login with the token it made.
func TestDashboardOnTheExample(t *testing.T) {
	var pairs []string
	for _, port := range exampleAdminPorts {
		pairs = append(pairs, fmt.Sprintf("127.0.0.1:%d", port), fmt.Sprintf("127.0.0.1:%d", testutil.FreePort(t)))
	}
	root := t.TempDir()
	copyExample(t, filepath.Join(root, "examples"), strings.NewReplacer(pairs...))
	main := filepath.Join(root, "examples", "edgeway.conf")
	cfg, err := conf.Load(main)
	if err != nil {
		t.Fatal(err)
	}
	p := testutil.Start(t, main)
	p.WaitLog(t, `msg="admin API listening" addr=`)
	token, err := os.ReadFile(filepath.Join(root, "examples", "state", "admin.token"))
	if err != nil {
		t.Fatal(err)
	}
	br := newBrowser(t, p.Log)
	admin := "http://" + cfg.Admin.Listen
	br.do("log in", chromedp.Navigate(admin+"/ui/"), chromedp.WaitVisible(css("#login")),
		chromedp.SendKeys(css("#token"), strings.TrimSpace(string(token))), chromedp.Click(css("#login-submit")),
		chromedp.WaitVisible(css("#page-overview")))
	br.do("the routes page", chromedp.Click(css(`nav a[href="#routes"]`)), chromedp.WaitVisible(css("#routes-table")))
	for _, r := range cfg.Routes {
		br.do("route "+r.Name, until(`document.querySelector('#routes-table tbody')?.textContent.includes(`+jsString(r.Name)+`)`))
	}
	br.do("the upstreams page", chromedp.Click(css(`nav a[href="#upstreams"]`)), chromedp.WaitVisible(css("#ups-table")))
	for _, u := range cfg.Upstreams {
		for _, s := range u.Servers {
			br.do("server "+s.Addr, until(`document.querySelector('#ups-table tbody')?.textContent.includes(`+jsString(s.Addr)+`)`))
		}
	}
	br.checkClean()
}
