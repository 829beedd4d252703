package dynamo

import "testing"

func TestEndpoints(t *testing.T) {
	for _, tt := range []struct {
		endpoint string
		loopback bool
		region   string
	}{
		{"http://127.0.0.1:8000", true, "us-east-1"},
		{"http://localhost:4567", true, "us-east-1"},
		{"http://[::1]:8000", true, "us-east-1"},
		{"https://dynamodb.eu-west-1.amazonaws.com", false, "eu-west-1"},
		{"https://dynamodb.ap-southeast-1.amazonaws.com/", false, "ap-southeast-1"},
		{"http://10.0.0.5:8000", false, "us-east-1"},
		{"", false, "us-east-1"},
	} {
		if got := isLoopback(tt.endpoint); got != tt.loopback {
			t.Errorf("isLoopback(%q) = %v", tt.endpoint, got)
		}
		if got := endpointRegion(tt.endpoint); got != tt.region {
			t.Errorf("endpointRegion(%q) = %q", tt.endpoint, got)
		}
	}
}
