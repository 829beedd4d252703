// Package healthz is the body of the services' GET /healthz: the services write it, idgenctl
// health and other readers decode it. It has no dependencies, so readers do not import the
// services.
package healthz

// Service is the /healthz body of every idgen service: 200 with status "ok", else 503 with
// status "unavailable", the reason and the error; or 200 with status "degraded", the reason and
// the error, from a service that serves some calls and refuses others (the error says which).
type Service struct {
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
	Error  string `json:"error,omitempty"`
}

// OK is the body of a service that serves.
var OK = Service{Status: "ok"}

// Draining is the body from the start of a shutdown: the service still serves its API for the
// deregistration delay, but a load balancer must send it no new connections.
var Draining = Unavailable("draining", "draining: shutting down, serving requests until the deregistration delay ends")

// Unavailable is the body of a service that cannot serve, for reason.
func Unavailable(reason, err string) Service {
	return Service{Status: "unavailable", Reason: reason, Error: err}
}

// Degraded is the body (served with 200, so load balancers keep the instance) of a service that
// serves some calls and refuses others, for reason.
func Degraded(reason, err string) Service {
	return Service{Status: "degraded", Reason: reason, Error: err}
}

// Generator is a generator's /healthz body: the Service body ("ok" when it can issue now), its
// region, its leases and its clock check.
type Generator struct {
	Service
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
