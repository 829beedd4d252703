module github.com/idgen/idgen/libs/svc

go 1.26.0

require (
	connectrpc.com/connect v1.21.1
	golang.org/x/time v0.16.0
)

require google.golang.org/protobuf v1.36.12 // indirect
