// Command idgenctl is the operators' tool: it explains and decodes IDs, manages regions and the
// lease tables (list, quarantine, lift, restore fence, who held a number), and checks the health
// of a region's generators. Run `idgenctl help`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/idgen/idgen/tools/idgenctl/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	os.Exit(cli.Run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv))
}
