// Package benchtools holds the load generators behind scripts/bench-tls.sh;
// each tool is a command of its own (see tlsload). Nothing here is linked
// into edgeway.
package benchtools
