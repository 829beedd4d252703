// Package api holds code generated from proto/ by buf (make generate): the protobuf messages of
// idgen.v1 and their Connect clients and handlers (idgenv1connect), and idgen.binpb, the
// descriptors with their comments for gRPC reflection. Do not edit them by hand; the one
// hand-written file is idgen/v1/descriptors.go, which loads idgen.binpb.
package api
