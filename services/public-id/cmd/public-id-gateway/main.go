// Command public-id-gateway is the customer gateway: public URLs to internal upstreams, every
// internal ID rewritten to a public ID on the way out (see README.md here and
// services/public-id/README.md, "The gateway").
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/idgen/idgen/libs/svc/serve"
	"github.com/idgen/idgen/services/public-id/internal/config"
	"github.com/idgen/idgen/services/public-id/internal/gatewayserver"
)

func main() {
	cfg, err := config.ParseGateway(os.Args[1:], config.Getenv, os.Stderr)
	serve.Main("public-id-gateway", err, cfg.LogLevel, func(ctx context.Context, log *slog.Logger) error {
		return gatewayserver.Run(ctx, cfg, log)
	})
}
