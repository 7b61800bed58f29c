package conf

import (
	"math"
	"strings"
	"time"

	"github.com/edgeway/edgeway/routes"
)

// Defaults of the buffers block (Buffers).
const (
	DefaultBufferMemory        int64 = 32 << 20
	DefaultBufferDisk          int64 = 8 << 30
	DefaultBufferRequestMemory int64 = 1 << 20
	// DefaultBufferResponseMemory and DefaultBufferResponseMax are
	// Buffers.ResponseMemory and ResponseMax when none is written;
	// NoResponseMax is ResponseMax for `response_max off`.
	DefaultBufferResponseMemory int64 = 1 << 20
	DefaultBufferResponseMax    int64 = 1 << 30
	NoResponseMax               int64 = -1
)

// buffersDirective reads the buffers block and checks it as a whole: the
// one place its values are validated.
func buffersDirective(b *builder, _ *routes.File, d *routes.Directive) {
	bf := &b.cfg.Buffers
	bf.Pos = b.pos(d.Pos)
	run(b, buffersTable, bf, d.Block.Directives)
	mem := bf.Memory
	if mem == 0 {
		mem = DefaultBufferMemory
	}
	for _, name := range [...]string{"request_memory", "response_memory"} {
		v := bf.RequestMemory
		if name == "response_memory" {
			v = bf.ResponseMemory
		}
		if rm := findDirective(d, name); rm != nil && v > mem {
			b.errorf(rm.Args[0].Pos, "%s: %s is more than the buffers' memory (%s)", name, rm.Args[0].Value, sizeText(mem))
		}
	}
}

// MinRate is a listener's body_min_rate.
type MinRate struct {
	Bytes  int64         // bytes per second; 0: the default; negative (`off`): no minimum
	Window time.Duration // what each measure spans
}

// The body_min_rate defaults: a listener with no body_min_rate line
// needs 500 bytes a second over each 10s (Apache's mod_reqtimeout asks
// the same rate by default): a trickle of a few bytes every few seconds
// is cut after 10s, while the slowest real link (a 2G phone sends 5
// KB/s and more) is far above it. DefaultBodyMinRateWindow is also the
// window of a line that names none.
const (
	DefaultBodyMinRate             = 500
	DefaultBodyMinRateWindow       = 10 * time.Second
	noMinRate                int64 = -1
)

// Effective is the minimum a listener enforces: its zero value is the
// default, `off` is the zero MinRate.
func (r MinRate) Effective() MinRate {
	switch {
	case r.Bytes == 0:
		return MinRate{Bytes: DefaultBodyMinRate, Window: DefaultBodyMinRateWindow}
	case r.Bytes < 0:
		return MinRate{}
	}
	return r
}

// bodyMinRate reads `body_min_rate SIZE/s [DURATION]|off`.
func bodyMinRate(b *builder, l *Listener, d *routes.Directive) {
	a := d.Args[0]
	if a.Value == "off" && len(d.Args) == 1 {
		l.BodyMinRate = MinRate{Bytes: noMinRate}
		return
	}
	size, ok := strings.CutSuffix(a.Value, "/s")
	n, err := routes.ParseSize(size)
	if !ok || err != nil || n <= 0 {
		b.errorf(a.Pos, "body_min_rate: %q is not a rate (expected SIZE/s, as 1KiB/s, or off)", a.Value)
		return
	}
	r := MinRate{Bytes: n, Window: DefaultBodyMinRateWindow}
	if len(d.Args) == 2 {
		w, err := time.ParseDuration(d.Args[1].Value)
		if err != nil || w < time.Second {
			b.errorf(d.Args[1].Pos, "body_min_rate: window %q is not a duration of at least 1s", d.Args[1].Value)
			return
		}
		r.Window = w
	}
	l.BodyMinRate = r
}

// minBuffer is the least a buffers size may be: one 64 KiB chunk.
const minBuffer = 64 << 10

var buffersTable = table[*Buffers]{
	"memory": func(b *builder, bf *Buffers, d *routes.Directive) {
		b.setSizeRange(d, minBuffer, math.MaxInt64, &bf.Memory)
	},
	"disk": func(b *builder, bf *Buffers, d *routes.Directive) {
		b.setSizeRange(d, minBuffer, math.MaxInt64, &bf.Disk)
	},
	"request_memory": func(b *builder, bf *Buffers, d *routes.Directive) {
		b.setSizeRange(d, minBuffer, math.MaxInt64, &bf.RequestMemory)
	},
	"response_memory": func(b *builder, bf *Buffers, d *routes.Directive) {
		b.setSizeRange(d, minBuffer, math.MaxInt64, &bf.ResponseMemory)
	},
	"response_max": func(b *builder, bf *Buffers, d *routes.Directive) {
		if d.Args[0].Value == "off" {
			bf.ResponseMax = NoResponseMax
			return
		}
		b.setSizeRange(d, minBuffer, math.MaxInt64, &bf.ResponseMax)
	},
	"dir": func(b *builder, bf *Buffers, d *routes.Directive) { bf.Dir = b.filePath(d, 0, WritableDir) },
}
