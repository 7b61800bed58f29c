package layers

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/edgeway/edgeway/"

// pkg is what go list says of one package: its path and every package
// of the module it depends on, directly or not.
type pkg struct {
	ImportPath string
	Deps       []string
	Imports    []string
	// Etcd: the package imports go.etcd.io/etcd/... itself.
	Etcd bool
}

// rule forbids the packages matching from to depend on those matching
// any of never (directly or through another package), to import those
// matching noImport themselves, and, with only set, to depend on
// anything of the module outside only.
type rule struct {
	from     string   // a package path, or a prefix ending in "/..."
	only     []string // allowed dependencies of the module; nil: see never
	never    []string
	noImport []string
}

// The rules of docs/architecture.md.
var rules = []rule{
	{from: "routes/...", only: []string{"routes/...", "internal/alpn"}},
	{from: "internal/...", only: []string{"internal/..."}},
	{from: "conf", only: []string{"routes/...", "internal/..."}},
	{from: "listeners/engine", only: []string{"internal/..."}},
	{from: "listeners/...", never: []string{"router", "upstream/...", "tls", "acme/...", "admin", "cmd/..."},
		noImport: []string{"routes/..."}},
	{from: "upstream/...", never: []string{"router", "listeners/...", "tls", "acme/...", "admin", "cmd/..."}},
	// The client is below the pools: upstream imports it, never the reverse.
	{from: "upstream/httpclient", only: []string{"conf", "routes/...", "internal/..."}},
	{from: "router", never: []string{"listeners/...", "tls", "acme/...", "admin", "cmd/..."}},
	{from: "tls", only: []string{"conf", "routes/...", "internal/..."}},
	{from: "acme", only: []string{"tls", "conf", "routes/...", "internal/..."}, noImport: []string{"conf"}},
	{from: "admin", only: []string{"internal/..."}},
	// cluster holds the etcd client; acme, tls and upstream see only
	// interfaces that cmd/edgeway fills from it.
	{from: "cluster", only: []string{"conf", "acme", "tls", "routes/...", "internal/..."}},
}

// etcdImporters are the only packages that may import the etcd client.
var etcdImporters = []string{"cluster"}

// testSupport may be imported by tests only.
var testSupport = []string{"internal/testutil", "internal/testgrpc", "internal/peek/peektest", "internal/benchtools/...", "acme/acmetest", "internal/etcdtest"}

func list(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps=false", "-json", "./...")
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		p.ImportPath = strings.TrimPrefix(p.ImportPath, module)
		p.Etcd = slices.ContainsFunc(p.Imports, func(i string) bool { return strings.HasPrefix(i, "go.etcd.io/etcd/") })
		p.Deps = ours(p.Deps)
		p.Imports = ours(p.Imports)
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages; the test is not looking at the module", len(pkgs))
	}
	return pkgs
}

func ours(paths []string) []string {
	var out []string
	for _, p := range paths {
		if strings.HasPrefix(p, module) {
			out = append(out, strings.TrimPrefix(p, module))
		}
	}
	return out
}

func matches(pattern, path string) bool {
	if prefix, ok := strings.CutSuffix(pattern, "/..."); ok {
		return path == prefix || strings.HasPrefix(path, prefix+"/")
	}
	return path == pattern
}

func matchesAny(patterns []string, path string) bool {
	for _, p := range patterns {
		if matches(p, path) {
			return true
		}
	}
	return false
}

// TestLayering checks the import rules of docs/architecture.md over the
// whole dependency set of every package (go list's Deps).
func TestLayering(t *testing.T) {
	for _, p := range list(t) {
		for _, r := range rules {
			if !matches(r.from, p.ImportPath) {
				continue
			}
			for _, d := range p.Deps {
				if r.only != nil && !matchesAny(r.only, d) {
					t.Errorf("%s depends on %s: %s may only depend on %v (docs/architecture.md)", p.ImportPath, d, r.from, r.only)
				}
				if matchesAny(r.never, d) {
					t.Errorf("%s depends on %s, which %s never does (docs/architecture.md)", p.ImportPath, d, r.from)
				}
			}
			for _, d := range p.Imports {
				if matchesAny(r.noImport, d) {
					t.Errorf("%s imports %s, which %s never imports itself (docs/architecture.md)", p.ImportPath, d, r.from)
				}
			}
		}
		if p.Etcd && !matchesAny(etcdImporters, p.ImportPath) {
			t.Errorf("%s imports the etcd client: only %v may (docs/architecture.md)", p.ImportPath, etcdImporters)
		}
		if !matches("cmd/...", p.ImportPath) && !matchesAny(testSupport, p.ImportPath) {
			for _, d := range p.Deps {
				if matchesAny(testSupport, d) && !matches("internal/benchtools/...", p.ImportPath) {
					t.Errorf("%s depends on the test-support package %s", p.ImportPath, d)
				}
			}
		}
		if !matches("cmd/...", p.ImportPath) {
			for _, d := range p.Deps {
				if matches("cmd/...", d) {
					t.Errorf("%s depends on %s: nothing imports cmd", p.ImportPath, d)
				}
			}
		}
	}
}

// TestEveryPackageDocumented checks that the README's Layout section and
// docs/architecture.md's package list name every package of the module.
func TestEveryPackageDocumented(t *testing.T) {
	root := filepath.Join("..", "..")
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	layout := section(string(readme), "## Layout")
	arch, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	packages := section(string(arch), "## Packages")
	var missing []string
	for _, p := range list(t) {
		quoted := regexp.MustCompile("`" + regexp.QuoteMeta(p.ImportPath) + "`")
		if !quoted.MatchString(layout) {
			missing = append(missing, "README.md Layout: "+p.ImportPath)
		}
		if !quoted.MatchString(packages) {
			missing = append(missing, "docs/architecture.md Packages: "+p.ImportPath)
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("not named (in backquotes): %s", m)
	}
}

// section returns the text of the markdown section that starts at heading,
// up to the next heading of the same level.
func section(doc, heading string) string {
	i := strings.Index(doc, "\n"+heading+"\n")
	if i < 0 {
		return ""
	}
	rest := doc[i+len(heading)+2:]
	level := heading[:strings.IndexByte(heading, ' ')+1]
	if j := strings.Index(rest, "\n"+level); j >= 0 {
		rest = rest[:j]
	}
	return rest
}
