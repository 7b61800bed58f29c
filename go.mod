module github.com/edgeway/edgeway

go 1.26.0

require (
	github.com/alecthomas/participle/v2 v2.1.4
	github.com/fsnotify/fsnotify v1.10.1
	golang.org/x/net v0.62.0
	golang.org/x/sys v0.50.0
)

require (
	golang.org/x/text v0.43.0 // indirect
)
