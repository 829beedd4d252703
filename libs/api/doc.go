// Package api holds only code generated from proto/ by buf (make generate): the protobuf messages
// of idgen.v1 and their Connect clients and handlers (idgenv1connect). Do not edit by hand.
package api
