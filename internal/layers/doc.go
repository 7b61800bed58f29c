// Package layers holds no code: its tests check the module's layering
// rules (docs/architecture.md) with go list, and that the README and the
// architecture document name every package.
package layers
