package serve

import (
	"bytes"
	"cmp"
	"encoding/json"
	"strings"
	"testing"

	idgenv1 "github.com/idgen/idgen/libs/api/idgen/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// The codec's JSON is protojson's with proto names and every field present, byte for byte,
// whether connect-go asks for it with Marshal or appends it to a buffer of its pool.
func TestJSONCodecMarshal(t *testing.T) {
	c := jsonCodec{"json"}
	for _, tc := range []struct {
		m    proto.Message
		want string // compacted (protojson may put a space after a colon)
	}{
		{&idgenv1.GenerateResponse{Id: 120460138153815040}, `{"id":"120460138153815040"}`},
		{&idgenv1.GenerateResponse{}, `{"id":"0"}`},
		{&idgenv1.GenerateBatchResponse{}, `{"ids":[]}`},
		{&idgenv1.GetRegionResponse{}, `{"region":null}`},
		{&idgenv1.GetRegionResponse{Region: &idgenv1.Region{Name: "eu-west-1"}}, `{"region":{"name":"eu-west-1","number":0,"peer":"","status":"","added_at":null,"retired_at":null}}`},
	} {
		want, err := protojson.MarshalOptions{UseProtoNames: true, EmitUnpopulated: true}.Marshal(tc.m)
		if err != nil {
			t.Fatal(err)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, want); err != nil || compact.String() != tc.want {
			t.Errorf("%T: protojson gives %s, want %s (%v)", tc.m, want, tc.want, err)
		}
		got, err := c.Marshal(tc.m)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("Marshal(%T) = %s, %v; want %s", tc.m, got, err, want)
		}
		buf := append(make([]byte, 0, 512), "prefix"...)
		got, err = c.MarshalAppend(buf, tc.m)
		if err != nil || string(got) != "prefix"+string(want) || &got[0] != &buf[0] {
			t.Errorf("MarshalAppend(%T) = %s, %v; want prefix%s in the given buffer", tc.m, got, err, want)
		}
	}
	if _, err := c.Marshal("not a message"); err == nil {
		t.Error("Marshal of a string: no error")
	}
}

// Unmarshal reads what protojson reads: an empty body or an empty object (read without
// protojson's decoder) resets the message as protojson does; anything else goes to protojson,
// its errors said without protojson's prefixes.
func TestJSONCodecUnmarshal(t *testing.T) {
	c := jsonCodec{"json"}
	for _, body := range []string{"", "{}", " {}", "{ }", `{"count":3}`, `{"count":"3"}`} {
		got := &idgenv1.GenerateBatchRequest{Count: 9}
		if err := c.Unmarshal([]byte(body), got); err != nil {
			t.Fatalf("Unmarshal(%q): %v", body, err)
		}
		want := &idgenv1.GenerateBatchRequest{Count: 9}
		if err := protojson.Unmarshal([]byte(cmp.Or(body, "{}")), want); err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(got, want) {
			t.Errorf("Unmarshal(%q) = %v, want %v", body, got, want)
		}
	}
	for body, want := range map[string]string{
		`{"cnt":3}`: `the body: unknown field "cnt"`,
		`{`:         "the body: unexpected EOF",
		`[]`:        "the body: syntax error (line 1:1): unexpected token [",
	} {
		err := c.Unmarshal([]byte(body), &idgenv1.GenerateBatchRequest{})
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("Unmarshal(%q) = %v, want %s…", body, err, want)
		}
	}
	if err := c.Unmarshal([]byte("{}"), "not a message"); err == nil {
		t.Error("Unmarshal into a string: no error")
	}
}
