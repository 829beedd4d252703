package serve

import (
	"errors"
	"fmt"
	"strings"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// JSONCodec is the services' Connect JSON: the proto field names (created_at, region_number:
// the REST API's names), every field present even when zero (a client sees region_number 0, not
// nothing), and unknown fields refused by name, as the REST API refuses them. Both of Connect's
// JSON content types use it.
func JSONCodec() []connect.HandlerOption {
	return []connect.HandlerOption{connect.WithCodec(jsonCodec{"json"}), connect.WithCodec(jsonCodec{"json; charset=utf-8"})}
}

type jsonCodec struct{ name string }

var (
	marshal   = protojson.MarshalOptions{UseProtoNames: true, EmitUnpopulated: true}
	unmarshal = protojson.UnmarshalOptions{DiscardUnknown: false}
)

func (c jsonCodec) Name() string { return c.name }

func (c jsonCodec) Marshal(m any) ([]byte, error) { return c.MarshalAppend(nil, m) }

// MarshalAppend appends m's JSON to b: connect-go hands it a buffer from its pool.
func (jsonCodec) MarshalAppend(b []byte, m any) ([]byte, error) {
	pm, ok := m.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("not a protobuf message: %T", m)
	}
	return marshal.MarshalAppend(b, pm)
}

func (jsonCodec) Unmarshal(b []byte, m any) error {
	pm, ok := m.(proto.Message)
	if !ok {
		return fmt.Errorf("not a protobuf message: %T", m)
	}
	var err error
	if len(b) == 0 || string(b) == "{}" {
		// An empty object sets no field: what protojson does with it, without its decoder.
		proto.Reset(pm)
		err = proto.CheckInitialized(pm)
	} else {
		err = unmarshal.Unmarshal(b, pm)
	}
	if err != nil {
		return errors.New(readable(err.Error()))
	}
	return nil
}

// readable drops protojson's prefixes ("proto: (line 1:2): ") from a message.
func readable(msg string) string {
	msg = strings.TrimPrefix(msg, "proto:")
	msg = strings.TrimSpace(msg)
	if strings.HasPrefix(msg, "(line ") {
		if i := strings.Index(msg, "): "); i >= 0 {
			msg = msg[i+3:]
		}
	}
	return "the body: " + msg
}
