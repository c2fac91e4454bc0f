// Command whyslow explains why a Linux program is slow, from the kernel's own evidence.
package main

import (
	"os"

	"github.com/whyslow/whyslow/internal/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:])) }
