package conf

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/edgeway/edgeway/routes"
)

// TestEveryListenerSettingHasAClass fails when a Listener field or a
// listen block directive is added without its line in ListenerSettings
// (and so without a reload class).
func TestEveryListenerSettingHasAClass(t *testing.T) {
	for _, f := range settingFields() {
		if !hasSetting(f) {
			t.Errorf("Listener.%s has no ListenerSettings entry (directive and reload class)", f)
		}
	}
	for _, s := range ListenerSettings {
		if s.Class != Live && s.Class != Restart && s.Class != Identity {
			t.Errorf("%s: no reload class", s.Directive)
		}
		if !slices.Contains(settingFields(), s.Field) {
			t.Errorf("%s: Listener has no field %s", s.Directive, s.Field)
		}
	}
	for _, spec := range routes.Vocabulary(routes.ListenBlock) {
		if !slices.ContainsFunc(ListenerSettings, func(s ListenerSetting) bool { return s.Directive == spec.Name }) {
			t.Errorf("listen block directive %q has no ListenerSettings entry", spec.Name)
		}
	}
}

func TestChangedSettings(t *testing.T) {
	a := DefaultListener("web", ":80")
	a.TLS = &ListenerTLS{MinVersion: 0x0303, Pos: Pos{Line: 3}}
	b := a
	tlsB := *a.TLS
	tlsB.Pos = Pos{Line: 9} // moved, not changed
	b.TLS = &tlsB
	if got := ChangedSettings(a, b, Restart); len(got) != 0 {
		t.Errorf("a moved block counted as changed: %v", got)
	}
	b.WriteTimeout, b.KeepAliveIdle, b.AcceptLoops = 5*time.Second, time.Second, 3
	b.NotFoundBody = "gone\n"
	if got, want := ChangedSettings(a, b, Restart), []string{"write_timeout", "accept_loops", "keepalive_idle"}; !slices.Equal(got, want) {
		t.Errorf("restart-class changes %v, want %v", got, want)
	}
	if got := ChangedSettings(a, b, Live); !slices.Equal(got, []string{"not_found_body"}) {
		t.Errorf("live changes %v, want [not_found_body]", got)
	}
}

// settingFields are the Listener fields ListenerSettings must cover: all
// but Pos.
func settingFields() []string {
	t := reflect.TypeFor[Listener]()
	var out []string
	for i := range t.NumField() {
		if f := t.Field(i); f.IsExported() && f.Name != "Pos" {
			out = append(out, f.Name)
		}
	}
	return out
}

// hasSetting reports whether ListenerSettings names field.
func hasSetting(field string) bool {
	return slices.ContainsFunc(ListenerSettings, func(s ListenerSetting) bool { return s.Field == field })
}
