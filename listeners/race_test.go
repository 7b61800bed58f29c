//go:build race

package listeners

const raceEnabled = true
