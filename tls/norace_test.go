//go:build !race

package edgetls

const raceEnabled = false
