//go:build !race

package listeners

const raceEnabled = false
