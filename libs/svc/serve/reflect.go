package serve

import (
	_ "embed"
	"errors"
	"sync"

	"connectrpc.com/grpchealth"
	"connectrpc.com/grpcreflect"
	idgenv1 "github.com/idgen/idgen/libs/api/idgen/v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
)

// grpcDescriptors is a copy of connectrpc.com/grpcreflect's services.bin (v1.3.1): the files of
// grpc.health.v1.Health, grpc.reflection.v1.ServerReflection and
// grpc.reflection.v1alpha.ServerReflection as grpc-proto publishes them (buf.build/grpc/grpc),
// comments included. The global registry lacks them: connectrpc.com/grpchealth and grpcreflect
// compile in copies under the package connectext.grpc.… (so that a binary that also links
// grpc-go does not panic on a duplicate registration), and grpcreflect's default resolver, which
// serves this set after the global registry, is replaced by any WithDescriptorResolver.
// TestReflectionServesGRPCsFilesAsGrpcreflectDoes keeps it equal to what grpcreflect serves itself.
//
//go:embed grpc.binpb
var grpcDescriptors []byte

// Reflector serves gRPC reflection for services: each is listed, and each can be described and
// called by reflection. A descriptor is looked up in the idgen.v1 files with their comments
// first (grpcurl describe shows the API's documentation), then in the global registry (whatever
// else the binary registered), then in the grpc.health.v1 and grpc.reflection files.
func Reflector(services ...string) *grpcreflect.Reflector {
	var chain resolvers
	if files, err := idgenv1.Files(); err == nil {
		chain = append(chain, files) // else the compiled-in idgen.v1 descriptors, without comments
	}
	chain = append(chain, protoregistry.GlobalFiles)
	if grpc, err := grpcFiles(); err == nil {
		chain = append(chain, grpc)
	}
	return grpcreflect.NewReflector(grpcreflect.NamerFunc(func() []string { return services }),
		grpcreflect.WithDescriptorResolver(chain))
}

// grpcServices are the services of gRPC itself that API serves besides a service's own: health
// and reflection (v1, and v1alpha for older tools), listed by reflection as grpc-go lists them.
var grpcServices = []string{grpchealth.HealthV1ServiceName, grpcreflect.ReflectV1ServiceName, grpcreflect.ReflectV1AlphaServiceName}

var grpcFiles = sync.OnceValues(func() (*protoregistry.Files, error) {
	var set descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(grpcDescriptors, &set); err != nil {
		return nil, err
	}
	return protodesc.NewFiles(&set)
})

// resolvers looks a descriptor up in each resolver in turn.
type resolvers []protodesc.Resolver

func (rs resolvers) FindFileByPath(path string) (protoreflect.FileDescriptor, error) {
	for _, r := range rs {
		if fd, err := r.FindFileByPath(path); err == nil {
			return fd, nil
		} else if !errors.Is(err, protoregistry.NotFound) {
			return nil, err
		}
	}
	return nil, protoregistry.NotFound
}

func (rs resolvers) FindDescriptorByName(name protoreflect.FullName) (protoreflect.Descriptor, error) {
	for _, r := range rs {
		if d, err := r.FindDescriptorByName(name); err == nil {
			return d, nil
		} else if !errors.Is(err, protoregistry.NotFound) {
			return nil, err
		}
	}
	return nil, protoregistry.NotFound
}
