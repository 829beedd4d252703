package cli

import (
	"context"
	"io"
)

// RunTerminal runs idgenctl as on a terminal that answers confirmations with in.
func RunTerminal(ctx context.Context, args []string, in io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	return run(ctx, args, in, true, stdout, stderr, getenv)
}
