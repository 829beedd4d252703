package serve

import (
	"connectrpc.com/grpcreflect"
	idgenv1 "github.com/idgen/idgen/libs/api/idgen/v1"
)

// Reflector serves gRPC reflection for the given services from the idgen.v1 descriptors with
// their comments, so `grpcurl describe` shows the API's documentation; services of other
// packages (grpc.health.v1) come from the global registry.
func Reflector(services ...string) *grpcreflect.Reflector {
	files, err := idgenv1.Files()
	if err != nil {
		return grpcreflect.NewStaticReflector(services...) // the compiled-in descriptors, without comments
	}
	return grpcreflect.NewReflector(grpcreflect.NamerFunc(func() []string { return services }),
		grpcreflect.WithDescriptorResolver(idgenv1.Resolver{Files: files}))
}
