package idgenv1

import (
	_ "embed"
	"fmt"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
)

// descriptorSet is `buf build --exclude-imports` of proto/ (make generate writes it): the
// idgen.v1 files with their comments, which the descriptors compiled into this package lack.
//
//go:embed idgen.binpb
var descriptorSet []byte

// Files returns the idgen.v1 file descriptors with their source comments, resolving imports
// (google/protobuf/timestamp.proto) from the global registry, for gRPC reflection: grpcurl's
// describe then shows the API's documentation.
func Files() (*protoregistry.Files, error) {
	var set descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(descriptorSet, &set); err != nil {
		return nil, fmt.Errorf("idgenv1: descriptor set: %w", err)
	}
	files := new(protoregistry.Files)
	for _, fdp := range set.GetFile() {
		fd, err := protodesc.NewFile(fdp, withGlobal{files})
		if err != nil {
			return nil, fmt.Errorf("idgenv1: %s: %w", fdp.GetName(), err)
		}
		if err := files.RegisterFile(fd); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// Resolver finds descriptors in files first, then in the global registry (the imports, and
// services such as grpc.health.v1 that other packages register).
type Resolver struct{ Files *protoregistry.Files }

// FindFileByPath implements protodesc.Resolver.
func (r Resolver) FindFileByPath(path string) (protoreflect.FileDescriptor, error) {
	if fd, err := r.Files.FindFileByPath(path); err == nil {
		return fd, nil
	}
	return protoregistry.GlobalFiles.FindFileByPath(path)
}

// FindDescriptorByName implements protodesc.Resolver.
func (r Resolver) FindDescriptorByName(name protoreflect.FullName) (protoreflect.Descriptor, error) {
	if d, err := r.Files.FindDescriptorByName(name); err == nil {
		return d, nil
	}
	return protoregistry.GlobalFiles.FindDescriptorByName(name)
}

type withGlobal struct{ files *protoregistry.Files }

func (w withGlobal) FindFileByPath(path string) (protoreflect.FileDescriptor, error) {
	return Resolver{w.files}.FindFileByPath(path)
}

func (w withGlobal) FindDescriptorByName(name protoreflect.FullName) (protoreflect.Descriptor, error) {
	return Resolver{w.files}.FindDescriptorByName(name)
}
