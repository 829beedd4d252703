package cli

import (
	"testing"

	"github.com/idgen/idgen/libs/svc/storespec"
)

// TestRedact: a store's name in a report or a state file never holds a password.
func TestRedact(t *testing.T) {
	for spec, want := range map[string]string{
		"redis:127.0.0.1:6379":                                    "redis:127.0.0.1:6379",
		"rediss://user:secret@cache.example.com:6380/0":           "rediss://cache.example.com:6380/0",
		"redis-cluster:rediss://user:secret@h1:6379?addr=h2:6379": "redis-cluster:rediss://h1:6379?addr=h2:6379",
		"dynamodb:https://dynamodb.eu-west-1.amazonaws.com":       "dynamodb:https://dynamodb.eu-west-1.amazonaws.com",
	} {
		sp, err := storespec.Parse("--from", spec)
		if err != nil {
			t.Fatal(err)
		}
		if got := redact(sp); got != want {
			t.Errorf("redact(%s) = %s, want %s", spec, got, want)
		}
	}
}
