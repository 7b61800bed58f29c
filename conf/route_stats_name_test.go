package conf

import (
	"strings"
	"testing"
)

// TestRouteNamedStats: a route named stats loads, with a warning at its
// name that GET /api/routes/stats is the statistics endpoint.
func TestRouteNamedStats(t *testing.T) {
	t.Parallel()
	src := "listen web { addr :80 }\nupstream u { server a:1 }\nroute stats { match Path(`/`); to u }\n"
	cfg, err := loadString(t, src)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range cfg.Warnings {
		if w.Pos.Line == 3 && w.Pos.Col == 7 && strings.Contains(w.Msg, "GET /api/routes/stats answers the routes' statistics") {
			return
		}
	}
	t.Errorf("warnings %+v, want one at 3:7 about GET /api/routes/stats", cfg.Warnings)
}
