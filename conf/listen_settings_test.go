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

// TestListenerDefaults pins the defaults ListenerSettings spells, as the
// README documents them: a change to one must be deliberate.
func TestListenerDefaults(t *testing.T) {
	want := Listener{
		Name: "web", Addr: ":80",
		Protocols:         []string{"http1", "h2c"},
		H2:                DefaultH2Limits(),
		QUIC:              DefaultQUIC(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       60 * time.Second,
		WriteTimeout:      60 * time.Second,
		MaxHeaderBytes:    32 << 10,
		MaxBodyBytes:      DefaultMaxBodyBytes,
		BodyTimeout:       DefaultBodyTimeout,
		BodyMinRate:       MinRate{Bytes: DefaultBodyMinRate, Window: DefaultBodyMinRateWindow},
		NoDelay:           true,
		DeferAccept:       time.Second,
		KeepAlive:         true,
		KeepAliveIdle:     60 * time.Second,
		KeepAliveInterval: 15 * time.Second,
		KeepAliveCount:    4,
		NotFoundBody:      "404 page not found\n",
		Normalize:         true,
		H2Server:          "own",
	}
	if got := DefaultListener("web", ":80"); !reflect.DeepEqual(got, want) {
		t.Errorf("DefaultListener:\n got %+v\nwant %+v", got, want)
	}
	// Each caller gets its own slices.
	a := DefaultListener("a", ":1")
	a.Protocols[0] = "changed"
	if DefaultListener("b", ":2").Protocols[0] != "http1" {
		t.Error("DefaultListener shares its Protocols slice between calls")
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
	if got, want := ChangedSettings(a, b, Restart), []string{"accept_loops", "keepalive_idle"}; !slices.Equal(got, want) {
		t.Errorf("restart-class changes %v, want %v", got, want)
	}
	if got, want := ChangedSettings(a, b, Live), []string{"write_timeout", "not_found_body"}; !slices.Equal(got, want) {
		t.Errorf("live changes %v, want %v", got, want)
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
