package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/edgeway/edgeway/internal/testutil"
)

// The Grafana dashboard in examples/grafana is held to what edgeway
// exports: every query may name only metric families (and labels) that a
// running edgeway's /metrics shows.

const dashboardFile = "examples/grafana/edgeway.json"

type dashDatasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type dashTarget struct {
	RefID        string          `json:"refId"`
	Expr         string          `json:"expr"`
	LegendFormat string          `json:"legendFormat"`
	Datasource   *dashDatasource `json:"datasource"`
}

type dashPanel struct {
	ID         int             `json:"id"`
	Type       string          `json:"type"`
	Title      string          `json:"title"`
	Datasource *dashDatasource `json:"datasource"`
	Targets    []dashTarget    `json:"targets"`
	Panels     []dashPanel     `json:"panels"` // a collapsed row's panels
}

type dashboard struct {
	Inputs []struct {
		Name     string `json:"name"`
		Type     string `json:"type"`
		PluginID string `json:"pluginId"`
	} `json:"__inputs"`
	Title         string      `json:"title"`
	UID           string      `json:"uid"`
	SchemaVersion int         `json:"schemaVersion"`
	Panels        []dashPanel `json:"panels"`
	Templating    struct {
		List []struct {
			Name       string          `json:"name"`
			Type       string          `json:"type"`
			Definition string          `json:"definition"`
			Query      json.RawMessage `json:"query"` // a string or {"query": ...}
		} `json:"list"`
	} `json:"templating"`
	Annotations struct {
		List []struct {
			Name         string `json:"name"`
			Expr         string `json:"expr"`
			LegendFormat string `json:"legendFormat"`
		} `json:"list"`
	} `json:"annotations"`
}

// dashQuery is one PromQL expression of the dashboard and where it is.
type dashQuery struct {
	where, expr, legend string
}

func loadDashboard(t *testing.T) (*dashboard, []dashPanel) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testutil.ModuleRoot(t), dashboardFile))
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(b) {
		t.Fatalf("%s is not valid JSON", dashboardFile)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	var all []dashPanel
	var walk func([]dashPanel)
	walk = func(ps []dashPanel) {
		for _, p := range ps {
			all = append(all, p)
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return &d, all
}

// queries returns every PromQL expression of the dashboard: panel targets,
// template variable queries and annotation queries.
func (d *dashboard) queries(t *testing.T, panels []dashPanel) []dashQuery {
	t.Helper()
	var qs []dashQuery
	for _, p := range panels {
		for _, tg := range p.Targets {
			qs = append(qs, dashQuery{fmt.Sprintf("panel %q (target %s)", p.Title, tg.RefID), tg.Expr, tg.LegendFormat})
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q string
		if err := json.Unmarshal(v.Query, &q); err != nil {
			var obj struct{ Query string }
			if err := json.Unmarshal(v.Query, &obj); err != nil {
				t.Fatalf("variable $%s: query %s: %v", v.Name, v.Query, err)
			}
			q = obj.Query
		}
		if q == "" {
			q = v.Definition
		}
		qs = append(qs, dashQuery{fmt.Sprintf("variable $%s", v.Name), q, ""})
	}
	for _, a := range d.Annotations.List {
		if a.Expr != "" {
			qs = append(qs, dashQuery{fmt.Sprintf("annotation %q", a.Name), a.Expr, a.LegendFormat})
		}
	}
	return qs
}

func TestDashboardJSON(t *testing.T) {
	d, panels := loadDashboard(t)
	if d.Title == "" || d.UID == "" || d.SchemaVersion < 36 {
		t.Errorf("title %q, uid %q, schemaVersion %d: want a title, a uid and schemaVersion >= 36", d.Title, d.UID, d.SchemaVersion)
	}
	if len(d.Inputs) != 1 || d.Inputs[0].Name != "DS_PROMETHEUS" || d.Inputs[0].PluginID != "prometheus" {
		t.Errorf("__inputs %+v: want one Prometheus datasource input DS_PROMETHEUS", d.Inputs)
	}
	const ds = "${DS_PROMETHEUS}"
	ids, titles := map[int]string{}, map[string]bool{}
	rows, others := 0, 0
	for _, p := range panels {
		if p.Title == "" {
			t.Errorf("panel %d (%s) has no title", p.ID, p.Type)
		}
		if prev, ok := ids[p.ID]; ok {
			t.Errorf("panels %q and %q share id %d", prev, p.Title, p.ID)
		}
		ids[p.ID] = p.Title
		if titles[p.Title] {
			t.Errorf("two panels are titled %q; failures name panels by title", p.Title)
		}
		titles[p.Title] = true
		if p.Type == "row" {
			rows++
			continue
		}
		others++
		if p.Datasource == nil || p.Datasource.UID != ds {
			t.Errorf("panel %q: datasource %+v, want uid %s", p.Title, p.Datasource, ds)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no target", p.Title)
		}
		for _, tg := range p.Targets {
			if strings.TrimSpace(tg.Expr) == "" {
				t.Errorf("panel %q: target %s has no expr", p.Title, tg.RefID)
			}
			if tg.Datasource != nil && tg.Datasource.UID != ds {
				t.Errorf("panel %q: target %s datasource %+v, want uid %s", p.Title, tg.RefID, tg.Datasource, ds)
			}
		}
	}
	if rows == 0 || others == 0 {
		t.Errorf("%d rows and %d panels", rows, others)
	}
	for _, q := range d.queries(t, panels) {
		if len(metricNames(q.expr)) == 0 {
			t.Errorf("%s: %q names no edgeway, go or process metric", q.where, q.expr)
		}
	}
}

var (
	dashMetricRE   = regexp.MustCompile(`\b(?:edgeway|go|process)_[a-z0-9_]+`)
	dashSelectorRE = regexp.MustCompile(`\b((?:edgeway|go|process)_[a-z0-9_]+)\s*\{([^}]*)\}`)
	dashMatcherRE  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)`)
	dashGroupRE    = regexp.MustCompile(`\b(?:by|without)\s*\(([^)]*)\)`)
	dashLegendRE   = regexp.MustCompile(`\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}`)
	// label_replace(v, "dst", "replacement", "src", "regex"): dst is a label
	// of the result.
	dashReplaceRE = regexp.MustCompile(`,\s*"([a-zA-Z_][a-zA-Z0-9_]*)"\s*,\s*"[^"]*"\s*,\s*"[a-zA-Z_][a-zA-Z0-9_]*"\s*,\s*"[^"]*"\s*\)`)
)

// metricNames returns the metric names an expression mentions.
func metricNames(expr string) []string {
	seen := map[string]bool{}
	var names []string
	for _, n := range dashMetricRE.FindAllString(expr, -1) {
		if !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	return names
}

// exposition is a parsed Prometheus text exposition: the type and the
// label names of each metric family.
type exposition struct {
	types  map[string]string          // family -> counter, gauge, histogram, summary, untyped
	labels map[string]map[string]bool // family -> label names seen on its samples
}

func parseExposition(t *testing.T, body string) *exposition {
	t.Helper()
	e := &exposition{types: map[string]string{}, labels: map[string]map[string]bool{}}
	var samples []string
	for _, line := range strings.Split(body, "\n") {
		if f, ok := strings.CutPrefix(line, "# TYPE "); ok {
			if name, typ, ok := strings.Cut(f, " "); ok {
				e.types[name] = typ
			}
		} else if line != "" && !strings.HasPrefix(line, "#") {
			samples = append(samples, line)
		}
	}
	for _, line := range samples {
		end := strings.IndexAny(line, "{ ")
		if end < 0 {
			t.Fatalf("bad sample line %q", line)
		}
		fam := e.family(line[:end])
		if fam == "" {
			fam = line[:end] // a sample without # TYPE counts as its own family
			e.types[fam] = "untyped"
		}
		if e.labels[fam] == nil {
			e.labels[fam] = map[string]bool{}
		}
		if line[end] == '{' {
			labels, err := sampleLabels(line[end+1:])
			if err != nil {
				t.Fatalf("sample %q: %v", line, err)
			}
			for n := range labels {
				e.labels[fam][n] = true
			}
		}
	}
	return e
}

// family returns the family a metric or sample name belongs to ("" when
// none): the name itself, or a histogram's or summary's family for its
// _bucket, _sum and _count series.
func (e *exposition) family(name string) string {
	if _, ok := e.types[name]; ok {
		return name
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			if typ := e.types[base]; typ == "histogram" || typ == "summary" {
				return base
			}
		}
	}
	return ""
}

// sampleLabels reads the labels of `a="x",b="y"} value` (after the
// brace).
func sampleLabels(s string) (map[string]string, error) {
	labels := map[string]string{}
	for {
		s = strings.TrimLeft(s, " ,")
		if strings.HasPrefix(s, "}") {
			return labels, nil
		}
		eq := strings.Index(s, `="`)
		if eq <= 0 {
			return nil, fmt.Errorf("no label at %q", s)
		}
		name := s[:eq]
		s = s[eq+2:]
		var v strings.Builder
		i := 0
		for ; i < len(s) && s[i] != '"'; i++ {
			if s[i] == '\\' && i+1 < len(s) {
				i++
				if s[i] == 'n' {
					v.WriteByte('\n')
					continue
				}
			}
			v.WriteByte(s[i])
		}
		if i >= len(s) {
			return nil, fmt.Errorf("unterminated value of label %s", name)
		}
		labels[name] = v.String()
		s = s[i+1:]
	}
}

// hasSampleWith reports whether the exposition has a sample of metric
// with these labels, among others.
func hasSampleWith(body, metric string, want map[string]string) bool {
	for _, line := range strings.Split(body, "\n") {
		rest, ok := strings.CutPrefix(line, metric+"{")
		if !ok {
			continue
		}
		got, err := sampleLabels(rest)
		if err != nil {
			continue
		}
		all := true
		for k, v := range want {
			if l, ok := got[k]; !ok || l != v {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

// scrapeLabels are the labels Prometheus adds when it scrapes a target.
var scrapeLabels = map[string]bool{"job": true, "instance": true}

// checkQuery reports the metrics and labels q names that the exposition
// lacks.
func (e *exposition) checkQuery(q dashQuery) []string {
	var problems []string
	known := map[string]bool{"le": true, "quantile": true}
	for l := range scrapeLabels {
		known[l] = true
	}
	for _, m := range dashReplaceRE.FindAllStringSubmatch(q.expr, -1) {
		known[m[1]] = true
	}
	for _, name := range metricNames(q.expr) {
		fam := e.family(name)
		if fam == "" {
			problems = append(problems, fmt.Sprintf("%s: metric %s is not in /metrics", q.where, name))
			continue
		}
		for l := range e.labels[fam] {
			known[l] = true
		}
	}
	if len(problems) > 0 {
		return problems // its labels cannot be judged
	}
	for _, m := range dashSelectorRE.FindAllStringSubmatch(q.expr, -1) {
		fam := e.family(m[1])
		if fam == "" {
			continue // reported above
		}
		for _, lm := range dashMatcherRE.FindAllStringSubmatch(m[2], -1) {
			l := lm[1]
			ok := e.labels[fam][l] || scrapeLabels[l] ||
				(l == "le" && e.types[fam] == "histogram") || (l == "quantile" && e.types[fam] == "summary")
			if !ok {
				problems = append(problems, fmt.Sprintf("%s: metric %s has no label %q (it has %s)", q.where, m[1], l, labelList(e.labels[fam])))
			}
		}
	}
	for _, m := range dashGroupRE.FindAllStringSubmatch(q.expr, -1) {
		for _, l := range strings.Split(m[1], ",") {
			if l = strings.TrimSpace(l); l != "" && !known[l] {
				problems = append(problems, fmt.Sprintf("%s: groups by label %q, which none of its metrics has", q.where, l))
			}
		}
	}
	for _, m := range dashLegendRE.FindAllStringSubmatch(q.legend, -1) {
		if !known[m[1]] {
			problems = append(problems, fmt.Sprintf("%s: legend names label %q, which none of its metrics has", q.where, m[1]))
		}
	}
	return problems
}

func labelList(set map[string]bool) string {
	var l []string
	for k := range set {
		l = append(l, k)
	}
	sort.Strings(l)
	return "[" + strings.Join(l, " ") + "]"
}

// TestDashboardMetrics checks each query of the dashboard, and each
// expression of the shipped alert rules, against the /metrics of an
// edgeway with traffic that gives every family a sample (busyScrape).
func TestDashboardMetrics(t *testing.T) {
	d, panels := loadDashboard(t)
	// The cluster's series exist only with a cluster block: the cluster
	// alerts are checked against a cluster instance's scrape
	// (checkClusterAlerts, in TestClusterEtcdOutage).
	queries, _ := splitClusterQueries(append(d.queries(t, panels), alertQueries(t)...))
	_, body := busyScrape(t)
	exp := parseExposition(t, body)
	var problems []string
	for _, q := range queries {
		problems = append(problems, exp.checkQuery(q)...)
	}
	if len(problems) > 0 {
		t.Errorf("%s and %s query what edgeway does not export:\n  %s", dashboardFile, alertsFile, strings.Join(problems, "\n  "))
	}
}

const alertsFile = promExamples + "/alerts.yml"

// splitClusterQueries parts the queries that read edgeway_cluster_
// series from the others.
func splitClusterQueries(qs []dashQuery) (others, cluster []dashQuery) {
	for _, q := range qs {
		if strings.Contains(q.expr, "edgeway_cluster_") {
			cluster = append(cluster, q)
		} else {
			others = append(others, q)
		}
	}
	return others, cluster
}

// checkClusterAlerts checks the alert rules that read the cluster's
// series against the /metrics of an instance with a cluster block.
func checkClusterAlerts(t *testing.T, body string) {
	t.Helper()
	_, cluster := splitClusterQueries(alertQueries(t))
	if len(cluster) == 0 {
		t.Fatalf("%s has no rule on the edgeway_cluster_ series", alertsFile)
	}
	exp := parseExposition(t, body)
	var problems []string
	for _, q := range cluster {
		problems = append(problems, exp.checkQuery(q)...)
	}
	if len(problems) > 0 {
		t.Errorf("%s queries what a cluster instance does not export:\n  %s", alertsFile, strings.Join(problems, "\n  "))
	}
}

// alertQueries returns the expr of each rule of alerts.yml. The file is
// read as the plain YAML it is (no YAML library among our dependencies):
// `- alert: NAME` opens a rule, `expr:` holds its expression on the line
// or, after `|`, on the more indented lines below.
func alertQueries(t *testing.T) []dashQuery {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testutil.ModuleRoot(t), alertsFile))
	if err != nil {
		t.Fatal(err)
	}
	var qs []dashQuery
	alerts, name := 0, ""
	lines := strings.Split(string(b), "\n")
	for i := 0; i < len(lines); i++ {
		trimmed := strings.TrimSpace(lines[i])
		if n, ok := strings.CutPrefix(trimmed, "- alert:"); ok {
			alerts, name = alerts+1, strings.TrimSpace(n)
			continue
		}
		v, ok := strings.CutPrefix(trimmed, "expr:")
		if !ok || alerts == 0 {
			continue
		}
		where := fmt.Sprintf("alert %s (%s:%d)", name, alertsFile, i+1)
		if v = strings.TrimSpace(v); v != "|" {
			qs = append(qs, dashQuery{where: where, expr: v})
			continue
		}
		indent := len(lines[i]) - len(strings.TrimLeft(lines[i], " "))
		var block []string
		for i+1 < len(lines) && (strings.TrimSpace(lines[i+1]) == "" || len(lines[i+1])-len(strings.TrimLeft(lines[i+1], " ")) > indent) {
			i++
			block = append(block, strings.TrimSpace(lines[i]))
		}
		qs = append(qs, dashQuery{where: where, expr: strings.Join(block, " ")})
	}
	if alerts == 0 || len(qs) != alerts {
		t.Fatalf("%s: %d alerts, %d expressions read", alertsFile, alerts, len(qs))
	}
	return qs
}

// edgewaySamples returns the edgeway_ sample lines of an exposition.
func edgewaySamples(body string) string {
	var b strings.Builder
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, "edgeway_") && !strings.Contains(line, "_bucket{") {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}
