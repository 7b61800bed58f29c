package testutil

import (
	"fmt"
	"strings"
)

// RouteFileSpec describes a generated route file for reload benchmarks and
// tests: Routes routes spread over Pools upstream pools.
type RouteFileSpec struct {
	// Routes is the number of routes; Pools the number of upstream pools
	// (at least 1), each with the servers in Servers (default one
	// unroutable loopback address per pool).
	Routes  int
	Pools   int
	Servers []string
	// Version is answered by the route at Path(`/__version`) (a respond
	// route of the highest priority), so a test can see when a version is
	// live.
	Version int
}

// RouteFile returns the text of a route file of the realistic mix a large
// edge sees: mostly Host && PathPrefix, then Host alone, Header, HostRegexp,
// PathRegexp and HeaderRegexp conjunctions, some routes with middlewares,
// some answering themselves. Every tenth regexp is shared by many routes,
// the rest are unique, as they are in files generated per tenant.
func RouteFile(s RouteFileSpec) string {
	pools := max(1, s.Pools)
	var b strings.Builder
	b.Grow(s.Routes * 120)
	for p := range pools {
		fmt.Fprintf(&b, "upstream pool%d {\n", p)
		servers := s.Servers
		if len(servers) == 0 {
			servers = []string{fmt.Sprintf("127.0.0.1:%d", 1+p)}
		}
		for _, sv := range servers {
			fmt.Fprintf(&b, "  server %s\n", sv)
		}
		b.WriteString("  connect_timeout 2s\n}\n\n")
	}
	fmt.Fprintf(&b, "route version {\n  match Path(`/__version`)\n  priority 1000000\n  respond 200 \"v%d\"\n}\n\n", s.Version)
	for i := range s.Routes {
		writeRoute(&b, i, pools)
	}
	return b.String()
}

var genResources = []string{"users", "orders", "items", "search", "auth", "billing", "reports"}

func writeRoute(b *strings.Builder, i, pools int) {
	host := fmt.Sprintf("svc%d.example.com", i/5)
	res := genResources[i%len(genResources)]
	fmt.Fprintf(b, "route r%d {\n  match %s\n", i, genRule(i, host, res))
	switch i % 7 {
	case 0:
		fmt.Fprintf(b, "  strip_prefix /api\n  set_header X-Route r%d\n", i)
	case 3:
		b.WriteString("  remove_response_header Server\n")
	}
	if i%25 == 24 {
		fmt.Fprintf(b, "  respond 200 \"r%d\"\n}\n", i)
		return
	}
	fmt.Fprintf(b, "  to pool%d\n}\n", i%pools)
}

func genRule(i int, host, res string) string {
	switch i % 10 {
	case 5:
		return fmt.Sprintf("Host(`%s`)", host)
	case 6:
		return fmt.Sprintf("Host(`%s`) && Header(`X-Canary`, `true`)", host)
	case 7:
		if i%100 == 7 {
			return "HostRegexp(`^[a-z0-9-]+\\.preview\\.example\\.com$`)"
		}
		return fmt.Sprintf("HostRegexp(`^(www\\.)?t%d\\.tenant\\.example\\.com$`)", i)
	case 8:
		return fmt.Sprintf("Host(`%s`) && PathRegexp(`^/assets/v%d/.+\\.(css|js)$`)", host, i%50)
	case 9:
		return fmt.Sprintf("PathPrefix(`/%s/%d`) &&\n        HeaderRegexp(`X-Tenant`, `^t%d-[a-z]+$`)", res, i, i)
	}
	return fmt.Sprintf("Host(`%s`) && PathPrefix(`/api/v%d/%s`)", host, i%3, res)
}
