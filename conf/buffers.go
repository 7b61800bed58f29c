package conf

import (
	"math"

	"github.com/edgeway/edgeway/routes"
)

// Defaults of the buffers block (Buffers).
const (
	DefaultBufferMemory        int64 = 64 << 20
	DefaultBufferDisk          int64 = 1 << 30
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
