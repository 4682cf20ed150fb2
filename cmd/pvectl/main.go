// Command pvectl manages Proxmox VE declaratively: YAML specs → live state →
// plan → apply. The commands here are thin: flags → options → a package call.
package main

import "os"

// version is set at build time (-ldflags "-X main.version=…").
var version = "dev"

func main() {
	os.Exit(Execute(version, os.Args[1:], Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}))
}
