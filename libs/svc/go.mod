module github.com/idgen/idgen/libs/svc

go 1.26.0

require (
	connectrpc.com/connect v1.21.1
	github.com/go-json-experiment/json v1.27.2
	golang.org/x/time v0.16.0
	google.golang.org/protobuf v1.36.12
)

require (
	connectrpc.com/cors v0.1.0
	connectrpc.com/grpchealth v1.5.0
	github.com/rs/cors v1.11.1
)
