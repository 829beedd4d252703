// Package healthz is the body of a generator's GET /healthz: the generator writes it, idgenctl
// health and other readers decode it. It has no dependencies, so readers do not import the
// generator.
package healthz

// Generator is a generator's /healthz body: 200 with status "ok" when it can issue now, else 503
// with status "unavailable", the reason and the error.
type Generator struct {
	Status       string  `json:"status"`
	Reason       string  `json:"reason,omitempty"`
	Error        string  `json:"error,omitempty"`
	Region       string  `json:"region"`
	RegionNumber int     `json:"region_number"`
	Leases       []Lease `json:"leases"`
	Clock        *Clock  `json:"clock"`
}

// Lease is one layout's machine-number lease as the generator sees it.
type Lease struct {
	Layout      string `json:"layout"`
	Held        bool   `json:"held"`
	Machine     int    `json:"machine"`
	Epoch       int64  `json:"epoch"`
	LeaseExpiry string `json:"lease_expiry,omitempty"` // RFC 3339, when held
	FenceInMs   int64  `json:"fence_in_ms"`            // until the generator stops issuing under it
	Problem     string `json:"problem,omitempty"`
}

// Clock is the generator's clock check.
type Clock struct {
	Healthy          bool    `json:"healthy"`
	Problem          string  `json:"problem"`
	Detail           string  `json:"detail"`
	EstimatedErrorMs float64 `json:"estimated_error_ms"`
	Check            string  `json:"check"` // "strict" or "warn"
	Warning          string  `json:"warning,omitempty"`
}
