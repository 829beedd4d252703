package storespec_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idgen/idgen/libs/svc/storespec"
)

func TestParse(t *testing.T) {
	all := []storespec.Kind(nil)
	leases := []storespec.Kind{storespec.SQLite, storespec.DynamoDB}
	for _, tt := range []struct {
		name  string
		spec  string
		kinds []storespec.Kind
		want  storespec.Spec
	}{
		{"sqlite", "sqlite:.idgen/leases.db", leases, storespec.Spec{Kind: storespec.SQLite, Where: ".idgen/leases.db"}},
		{"sqlite with a colon in the path", "sqlite:/tmp/a:b.db", leases, storespec.Spec{Kind: storespec.SQLite, Where: "/tmp/a:b.db"}},
		{"dynamodb", "dynamodb:http://127.0.0.1:8000", leases, storespec.Spec{Kind: storespec.DynamoDB, Where: "http://127.0.0.1:8000"}},
		{"redis address", "redis:127.0.0.1:6379", all, storespec.Spec{Kind: storespec.Redis, Where: "127.0.0.1:6379"}},
		{"redis URL", "redis://:pw@127.0.0.1:6379/0", all, storespec.Spec{Kind: storespec.Redis, Where: "redis://:pw@127.0.0.1:6379/0"}},
		{"rediss URL", "rediss://:pw@127.0.0.1:6380", all, storespec.Spec{Kind: storespec.Redis, Where: "rediss://:pw@127.0.0.1:6380"}},
		{"redis cluster", "redis-cluster:10.0.0.1:6379,10.0.0.2:6379", all, storespec.Spec{Kind: storespec.RedisCluster, Where: "10.0.0.1:6379,10.0.0.2:6379"}},
		{"redis cluster URL", "redis-cluster:rediss://h:6379", all, storespec.Spec{Kind: storespec.RedisCluster, Where: "rediss://h:6379"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := storespec.Parse("--store", tt.spec, tt.kinds...)
			if err != nil || got != tt.want {
				t.Fatalf("Parse(%q) = %+v, %v; want %+v", tt.spec, got, err, tt.want)
			}
		})
	}
}

func TestParseRefused(t *testing.T) {
	leases := []storespec.Kind{storespec.SQLite, storespec.DynamoDB}
	for _, tt := range []struct {
		name  string
		spec  string
		kinds []storespec.Kind
		want  string
	}{
		{"empty", "", leases, `--lease-store ":…": want sqlite:PATH or dynamodb:ENDPOINT_URL`},
		{"no kind", ".idgen/leases.db", leases, "want sqlite:PATH"},
		{"no path", "sqlite:", leases, `--lease-store "sqlite:": `},
		{"a kind not allowed", "redis:127.0.0.1:6379", leases, `--lease-store "redis:…": want`},
		{"unknown kind", "memcached:127.0.0.1:11211", nil, "want sqlite:PATH, dynamodb:ENDPOINT_URL, redis:HOST:PORT"},
		{"rediss without a URL", "rediss:127.0.0.1:6380", nil, "want"},
		{"a password is not repeated", "postgres://:hunter2@db:5432", leases, `"postgres:…"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := storespec.Parse("--lease-store", tt.spec, tt.kinds...)
			if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "hunter2") {
				t.Fatalf("Parse(%q) = %v, want an error containing %q", tt.spec, err, tt.want)
			}
		})
	}
}

func TestMakeDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	s, err := storespec.Parse("--store", "sqlite:"+filepath.Join(dir, "r.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.MakeDir(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Fatalf("directory %s: %v", dir, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "r.db")); !os.IsNotExist(err) {
		t.Fatalf("the file itself was made: %v", err)
	}
	if err := (storespec.Spec{Kind: storespec.DynamoDB, Where: "http://127.0.0.1:1"}).MakeDir(); err != nil {
		t.Fatal(err)
	}
}

// TestOpen: the kind's driver opens the store, in a directory made for a SQLite file; a kind
// without a driver, or a driver's failure, gives the error and no store (nil, not a typed nil).
func TestOpen(t *testing.T) {
	failed := errors.New("driver failed")
	drivers := storespec.Drivers[io.Closer]{
		storespec.SQLite: func(_ context.Context, s storespec.Spec) (io.Closer, error) {
			return os.Create(s.Where)
		},
		storespec.Redis: func(context.Context, storespec.Spec) (io.Closer, error) {
			var f *os.File
			return f, failed
		},
	}
	path := filepath.Join(t.TempDir(), "a", "r.db")
	st, err := storespec.Open(context.Background(), storespec.Spec{Kind: storespec.SQLite, Where: path}, drivers)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the driver did not open %s: %v", path, err)
	}
	if st, err := storespec.Open(context.Background(), storespec.Spec{Kind: storespec.Redis, Where: "h:1"}, drivers); !errors.Is(err, failed) || st != nil {
		t.Fatalf("a failing driver: %v, %v; want its error and a nil store", st, err)
	}
	st, err = storespec.Open(context.Background(), storespec.Spec{Kind: storespec.DynamoDB, Where: "http://h"}, drivers)
	if err == nil || st != nil || !strings.Contains(err.Error(), "no driver for a dynamodb store") {
		t.Fatalf("a kind without a driver: %v, %v", st, err)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"sqlite:a.db", "dynamodb:http://h", "redis://:p@h:1", "rediss:x", "redis-cluster:a,b", ":", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		s, err := storespec.Parse("--store", spec)
		if err != nil {
			return
		}
		if s.Where == "" {
			t.Fatalf("Parse(%q) accepted an empty place", spec)
		}
		if s.Kind == storespec.Redis && strings.HasPrefix(s.Where, "//") {
			t.Fatalf("Parse(%q) = %+v: a URL without its scheme", spec, s)
		}
	})
}
