package upstream

import (
	"testing"
	"time"

	"github.com/edgeway/edgeway/conf"
)

func TestSetSync(t *testing.T) {
	t.Parallel()
	s := NewSet()
	defer s.Close()
	first := s.Sync([]conf.Upstream{upstreamConf("keep", 1), upstreamConf("change", 1, 1), upstreamConf("drop", 1)})
	st := first["change"].Servers()[0].State
	st.Requests.Add(7)

	changed := upstreamConf("change", 1, 1)
	changed.ResponseTimeout = 2 * time.Second
	second := s.Sync([]conf.Upstream{upstreamConf("keep", 1), changed})

	tests := []struct {
		desc string
		ok   bool
	}{
		{desc: "unchanged pool kept", ok: first["keep"] == second["keep"]},
		{desc: "changed pool rebuilt", ok: first["change"] != second["change"]},
		{desc: "state kept by address", ok: second["change"].Servers()[0].State == st},
		{desc: "dropped pool gone", ok: second["drop"] == nil},
		{desc: "dropped pool closed", ok: first["drop"].closed.Load()},
		{desc: "replaced pool closed", ok: first["change"].closed.Load()},
		{desc: "kept pool open", ok: !second["keep"].closed.Load()},
	}
	for _, tc := range tests {
		if !tc.ok {
			t.Errorf("%s: false", tc.desc)
		}
	}
}
