package server_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	idgenv1 "github.com/idgen/idgen/libs/api/idgen/v1"
	"github.com/idgen/idgen/libs/api/idgen/v1/idgenv1connect"
	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/libs/testenv"
)

// TestDecodeNamesRegions: decode names a region by the registry's current list, a region added
// after start-up included, and says "unassigned" for a number no region has, on both faces.
func TestDecodeNamesRegions(t *testing.T) {
	var list atomic.Value
	list.Store(`{"regions":[{"name":"us-east-1","number":0,"peer":"us-west-2","status":"active"}]}`)
	reg := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, list.Load().(string))
	}))
	defer reg.Close()
	cfg := baseConfig(t)
	cfg.Registry, cfg.RegistryPoll = reg.URL, 50*time.Millisecond
	r := start(t, cfg)
	r.waitReady(t)
	id5 := func() idcore.ID {
		// An ID of region 5, machine 3, sequence 1, made now.
		ts := time.Now().UnixMilli() - idcore.EpochUnixMs
		return idcore.ID(ts<<22 | 5<<19 | 3<<10 | 1)
	}()
	c := idgenv1connect.NewIdServiceClient(http.DefaultClient, r.url)
	names := func() (string, string) {
		_, _, body := testenv.Do(t, "GET", r.url+"/v1/ids/"+id5.String()+"/decode", "", "")
		resp, err := c.Decode(context.Background(), connect.NewRequest(&idgenv1.DecodeRequest{Id: int64(id5)}))
		if err != nil {
			t.Fatal(err)
		}
		return body, resp.Msg.GetRegion()
	}
	if rest, rpc := names(); !strings.Contains(rest, `"region":"unassigned"`) || rpc != "unassigned" {
		t.Fatalf("region 5 before it exists: REST %s, Connect %q", rest, rpc)
	}
	list.Store(`{"regions":[{"name":"us-east-1","number":0,"peer":"us-west-2","status":"active"},{"name":"sa-east-1","number":5,"peer":"us-east-1","status":"active"}]}`)
	testenv.Eventually(t, 5*time.Second, func() (bool, string) {
		rest, rpc := names()
		ok := strings.Contains(rest, `"region":"sa-east-1"`) && rpc == "sa-east-1"
		return ok, fmt.Sprintf("region 5 after the registry added it: REST %s, Connect %q", rest, rpc)
	})
}
