//go:build race

package testutil

// raceBuild: the tests run under the race detector, and so does the
// edgeway binary they start.
const raceBuild = true
