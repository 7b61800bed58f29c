//go:build race

package main

// raceEnabled is set when the tests run under the race detector, which
// makes reloading large files and steady load several times slower than
// the bounds the reload tests assert.
const raceEnabled = true
