module github.com/edgeway/edgeway

go 1.26.0

require (
	github.com/alecthomas/participle/v2 v2.1.4
	golang.org/x/net v0.62.0
)
