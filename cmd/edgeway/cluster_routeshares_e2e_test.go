package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/edgeway/edgeway/internal/testutil"
)

// clusterShares is a split route's shares in effect on one instance,
// by pool, from GET /api/routes/s.
func (e *adminEdgeway) clusterShares(t *testing.T) map[string]float64 {
	t.Helper()
	var rt struct {
		Split *struct {
			Pools []struct {
				Upstream string  `json:"upstream"`
				Share    float64 `json:"share"`
			} `json:"pools"`
		} `json:"split"`
	}
	code, body := e.do(t, http.MethodGet, "/api/routes/s", true)
	if code != 200 || json.Unmarshal([]byte(body), &rt) != nil || rt.Split == nil {
		t.Fatalf("GET /api/routes/s: %d %s", code, body)
	}
	out := map[string]float64{}
	for _, p := range rt.Split.Pools {
		out[p.Upstream] = p.Share
	}
	return out
}

// TestClusterRouteShares: a split's shares set through PATCH
// /api/routes/NAME on one instance are live on all three (written to
// etcd first, applied from each watch); with etcd down the PATCH answers
// 503 and nothing changes; an instance restarted gets them back from
// etcd; `{"shares": null}` on any instance restores the files' shares
// everywhere.
func TestClusterRouteShares(t *testing.T) {
	v1, v2 := backend(t, "v1"), backend(t, "v2")
	files := map[string]string{"s.routes": fmt.Sprintf("upstream v1 { server %s }\nupstream v2 { server %s }\n"+
		"route s {\n  match PathPrefix(`/`)\n  to v1 90%%, v2 10%%\n}\n", hostPort(v1), hostPort(v2))}
	c, _ := startClusterTrioWith(t, clusterTrioOptions{files: files})
	everywhere := func(what string, v1Share float64) {
		t.Helper()
		testutil.Eventually(t, 20*time.Second, func() bool {
			for _, e := range c.inst {
				if e.clusterShares(t)["v1"] != v1Share {
					return false
				}
			}
			return true
		}, "%s: v1's share is not %v on every instance", what, v1Share)
	}
	everywhere("at start", 90)

	start := time.Now()
	if code, body := c.inst[0].patch(t, "/api/routes/s", `{"shares": {"v1": 50, "v2": 50}}`); code != 200 {
		t.Fatalf("PATCH on e1: %d %s", code, body)
	}
	everywhere("after a PATCH on e1", 50)
	t.Logf("shares set on e1 live on all three %v after the PATCH began", time.Since(start))
	if code, body := c.inst[1].patch(t, "/api/routes/s", `{"shares": {"v1": 50, "v2": 40}}`); code != 400 {
		t.Fatalf("PATCH of shares adding up to 90%%: %d %s, want 400", code, body)
	}

	c.etcd.Kill()
	if code, body := c.inst[1].patch(t, "/api/routes/s", `{"shares": {"v1": 20, "v2": 80}}`); code != http.StatusServiceUnavailable {
		t.Fatalf("PATCH while etcd is down: %d %s, want 503", code, body)
	}
	for i, e := range c.inst {
		if got := e.clusterShares(t)["v1"]; got != 50 {
			t.Fatalf("e%d shows v1 at %v after a refused PATCH, want 50", i+1, got)
		}
	}
	c.etcd.Restart()

	// e3 restarted gets the cluster's shares back.
	e3 := c.inst[2]
	e3.p.Cmd.Process.Kill()
	e3.p.Wait(t, 10*time.Second)
	c.inst[2] = c.start(t, 2)
	everywhere("after e3's restart", 50)

	testutil.Eventually(t, 30*time.Second, func() bool {
		code, _ := c.inst[2].patch(t, "/api/routes/s", `{"shares": null}`)
		return code == 200
	}, "PATCH works again once etcd is back")
	everywhere("after shares null on e3", 90)
}
