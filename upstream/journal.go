package upstream

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/edgeway/edgeway/internal/atomicfile"
)

// The overrides journal: the runtime overrides of every pool (weights,
// drains, disabled servers set through the admin API) written to a file
// so that a restart replays them. Its format is pool -> server address ->
// override, in JSON.

// Overrides maps pool name -> server address -> override, for the servers
// of pools that have one set.
type Overrides map[string]map[string]OverrideStatus

// OverridesOf returns the overrides set on the servers of pools: what the
// journal holds.
func OverridesOf(pools map[string]*Pool) Overrides {
	j := Overrides{}
	for name, p := range pools {
		for _, s := range p.Status().Servers {
			if o := s.Override; !o.IsZero() {
				if j[name] == nil {
					j[name] = map[string]OverrideStatus{}
				}
				j[name][s.Addr] = o
			}
		}
	}
	return j
}

// SaveOverrides writes the overrides of pools to the journal at path,
// atomically (a temporary file, fsync, rename).
func SaveOverrides(path string, pools map[string]*Pool) error {
	b, err := json.MarshalIndent(OverridesOf(pools), "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the overrides: %w", err)
	}
	if err := atomicfile.Write(path, b); err != nil {
		return fmt.Errorf("writing the overrides journal: %w", err)
	}
	return nil
}

// DroppedOverride is an override that no longer applies: a journal entry
// that ReplayOverrides could not apply (its pool or server is no longer
// configured, or the override is refused: Err), or one whose server a
// reload removed.
type DroppedOverride struct {
	Upstream, Server string
	Override         OverrideStatus
	Err              error
}

// ReplayOverrides applies the journal at path to pools and returns the
// entries it dropped. A missing journal is no error: there is nothing to
// replay.
func ReplayOverrides(path string, pools map[string]*Pool) ([]DroppedOverride, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	var j Overrides
	if err == nil {
		err = json.Unmarshal(b, &j)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the overrides journal: %w", err)
	}
	var dropped []DroppedOverride
	for name, servers := range j {
		for addr, o := range servers {
			err := fmt.Errorf("upstream %s is not configured", name)
			if p := pools[name]; p != nil {
				err = p.SetOverride(addr, Override{Weight: o.Weight, Drain: o.Drain, Disabled: o.Disabled})
			}
			if err != nil {
				dropped = append(dropped, DroppedOverride{Upstream: name, Server: addr, Override: o, Err: err})
			}
		}
	}
	return dropped, nil
}
