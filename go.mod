module github.com/overbrainer/overbrainer-go

go 1.26.0

require (
	github.com/creack/pty v1.1.24
	github.com/go-resty/resty/v2 v2.17.2
	github.com/google/go-cmp v0.7.0
	golang.org/x/crypto v0.58.0
	golang.org/x/sync v0.25.0
	golang.org/x/term v0.47.0
	mvdan.cc/sh/v3 v3.14.1
)

require (
	github.com/spf13/pflag v1.0.10 // indirect
	golang.org/x/net v0.62.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)
