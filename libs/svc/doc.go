// Package svc holds what idgen's services share at their edges, so that the generator, the
// registry and the public-ID service start, listen, refuse and shut down the same way:
//
//   - serve: the process and its port. Main (flags parsed, JSON log, SIGTERM), Serve (HTTP/1.1
//     and HTTP/2, h2c in development or ALPN over mutual TLS, a graceful drain), API (the Connect
//     service, gRPC health and reflection, /metrics and the REST API on one handler), Health
//     (every service NOT_SERVING from the start of a drain), REST (echo with the one error
//     handler), the request metrics, the Connect JSON codec, CORS.
//   - apierr: the request error: an HTTP status, a Connect code, a reason and a message, mapped in
//     one place per service (Mapper) for REST and Connect; REST bodies are {"error", "reason"}.
//   - auth: caller identities from mutual TLS (SPIFFE IDs), the callers file, and the edge flags
//     (--insecure-dev refused together with TLS settings).
//   - quota: per-caller quotas in IDs per second.
//   - flagenv: an IDGEN_* environment fallback for every flag, named in the usage.
//   - storespec: the store settings (sqlite:PATH, dynamodb:URL, redis:…), parsed one way and
//     opened through the drivers a service gives (Open).
//   - healthz: the body of every service's GET /healthz (the gateway's too) and of a
//     generator's, for the services and their readers.
package svc
