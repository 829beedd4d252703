package server

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/libs/svc/apierr"
	"github.com/idgen/idgen/libs/svc/auth"
	"github.com/idgen/idgen/libs/svc/healthz"
	"github.com/idgen/idgen/libs/svc/serve"
	"github.com/labstack/echo/v4"
)

// maxBody is the largest request body the REST API reads.
const maxBody = 4 << 10

// rest is the REST API (docs/api.md) on echo, with every service's error handler: errors are
// {"error": message, "reason": name}; 400s say what is wrong, refusals say why, quota refusals
// carry Retry-After. As in every service (serve.REST), a POST whose Content-Type is not JSON
// gets 415 and every GET route answers HEAD.
func (s *Server) rest() http.Handler {
	e := serve.REST(s.metrics.RequestMetrics, errs)
	e.POST("/v1/ids", s.postID)
	e.POST(`/v1/ids\:batch`, s.postBatch)
	e.GET("/v1/ids/:id/decode", s.getDecode)
	e.GET("/healthz", s.getHealthz)
	return e
}

// readBody reads a small body that is one JSON object and nothing else (apierr.DecodeJSON: null,
// another kind of value or bytes after the object are 400); an empty body reads as {} when
// allowEmpty. Only JSON's whitespace (space, tab, CR, LF) may surround the object. A body whose
// Content-Length is less than buf's capacity is read into buf (the caller may reuse it after),
// any other into a pooled buffer of maxBody+1 bytes.
func readBody(c echo.Context, buf []byte, allowEmpty bool, into any) error {
	r := c.Request()
	if r.ContentLength < 0 || r.ContentLength >= int64(cap(buf)) {
		bp := bodyBufs.Get().(*[]byte)
		defer bodyBufs.Put(bp)
		buf = (*bp)[:maxBody+1]
	}
	// net/http's body returns its last bytes with io.EOF: one Read takes a body that has come
	// whole, io.ReadFull the rest of one that has not.
	n, err := r.Body.Read(buf[:cap(buf)])
	if err == nil && n < cap(buf) {
		var more int
		more, err = io.ReadFull(r.Body, buf[n:cap(buf)])
		n += more
	}
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF { // a short body is the usual case
		return apierr.BadRequest("reading the body: %v", err)
	}
	b := buf[:n]
	if len(b) > maxBody {
		return apierr.TooLarge(maxBody)
	}
	b = bytes.Trim(b, " \t\r\n")
	if len(b) == 0 {
		if allowEmpty {
			return nil
		}
		return apierr.BadRequest(`the body is missing: want a JSON object such as {"count": 100}`)
	}
	if allowEmpty && string(b) == "{}" {
		return nil // the usual POST /v1/ids body: nothing to decode
	}
	// Field names match exactly ({"COUNT": 2} is not {"count": 2}); unknown and repeated fields
	// are refused by name, as the Connect face refuses them.
	return apierr.DecodeJSON(b, into)
}

// bodyBufs holds request-body buffers of maxBody+1 bytes (decoding copies what it keeps).
var bodyBufs = sync.Pool{New: func() any { b := make([]byte, maxBody+1); return &b }}

// jsonType is the Content-Type header's value of a JSON answer, shared: net/http and echo replace
// a header's values, never write into them.
var jsonType = []string{echo.MIMEApplicationJSON}

func (s *Server) postID(c echo.Context) error {
	// One buffer for the body ({} as a rule) and the answer.
	buf := make([]byte, 0, 64)
	// {"id_num": true} asks for the ID as a JSON number too; nothing else may be in the body.
	var req struct {
		IDNum bool `json:"id_num"`
	}
	if err := readBody(c, buf, true, &req); err != nil {
		return err
	}
	var one [1]idcore.ID
	ids, err := s.issue(c.Request().Context(), 1, one[:0])
	if err != nil {
		return err
	}
	// {"id":"<id>"} or {"id":"<id>","id_num":<id>}: the decimal formatted once, the body
	// written as JSONBlob would, with the header's key given canonical (JSONBlob looks it up,
	// then sets it).
	b := append(buf[:0], `{"id":"`...)
	start := len(b)
	b = strconv.AppendInt(b, int64(ids[0]), 10)
	if req.IDNum {
		digits := b[start:]
		b = append(b, `","id_num":`...)
		b = append(b, digits...)
		b = append(b, "}\n"...)
	} else {
		b = append(b, "\"}\n"...)
	}
	w := c.Response()
	w.Header()[echo.HeaderContentType] = jsonType
	w.WriteHeader(http.StatusOK)
	_, err = w.Write(b)
	return err
}

func (s *Server) postBatch(c echo.Context) error {
	var req struct {
		Count *int `json:"count"`
	}
	if err := readBody(c, nil, false, &req); err != nil {
		return err
	}
	if req.Count == nil {
		return apierr.BadRequest(`"count" is missing: want an integer from 1 to %d`, MaxBatch)
	}
	if n := *req.Count; n < 1 || n > MaxBatch {
		return apierr.BadRequest(`"count" is %d: want an integer from 1 to %d`, n, MaxBatch)
	}
	ids, err := s.issue(c.Request().Context(), *req.Count, make([]idcore.ID, 0, *req.Count))
	if err != nil {
		return err
	}
	// Encoded by hand: 1,000 IDs through reflection would cost more than making them.
	b := make([]byte, 0, 10+len(ids)*22)
	b = append(b, `{"ids":[`...)
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = strconv.AppendInt(b, int64(id), 10)
		b = append(b, '"')
	}
	b = append(b, "]}\n"...)
	return c.JSONBlob(http.StatusOK, b)
}

// decoded is the decode response (docs/api.md#decode); v1 IDs have no region fields.
type decoded struct {
	ID           string  `json:"id"`
	Layout       string  `json:"layout"`
	CreatedAt    string  `json:"created_at"`
	Region       *string `json:"region,omitempty"`
	RegionNumber *int    `json:"region_number,omitempty"`
	Machine      int     `json:"machine"`
	Sequence     int     `json:"sequence"`
}

func (s *Server) decode(id idcore.ID) (decoded, error) {
	if id == 0 {
		return decoded{}, apierr.BadRequest("0 is no ID: want the ID to decode")
	}
	d, err := s.sched.Decode(id)
	if err != nil {
		return decoded{}, apierr.BadRequest("%v", err)
	}
	out := decoded{ID: id.String(), Layout: d.Layout, CreatedAt: d.Time.Format("2006-01-02T15:04:05.000Z"),
		Machine: d.Machine, Sequence: d.Sequence}
	if d.HasRegion {
		name, num := s.regionName(d.Region), d.Region
		out.Region, out.RegionNumber = &name, &num
	}
	return out, nil
}

func (s *Server) getDecode(c echo.Context) error {
	if res := authResult(c); res != nil {
		return res
	}
	id, err := idcore.ParseID(c.Param("id"))
	if err != nil {
		return apierr.BadRequest("%v", err)
	}
	d, err := s.decode(id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, d)
}

func authResult(c echo.Context) error {
	if res := auth.FromContext(c.Request().Context()); res.Err != nil {
		return res.Err
	}
	return nil
}

// getHealthz answers 200 when the generator can issue now, else 503 with the reason (a lease or
// clock reason, certificate_expired once the server certificate in use has expired, or draining
// from the start of a shutdown, while the API still serves); the detail names the lease, the
// fence and the clock (and says so loudly when the clock check is warn). A generator that can
// issue but cannot read its registry URL answers 200 degraded, registry_unreachable.
func (s *Server) getHealthz(c echo.Context) error {
	st := s.node.Generator().ClockStatus()
	body := healthz.Generator{Service: healthz.OK, Region: s.region.Name, RegionNumber: s.region.Number}
	now := time.Now().UnixMilli()
	for _, l := range s.node.Leases() {
		li := healthz.Lease{Layout: l.Layout, Held: l.Held, Machine: l.Machine, Epoch: l.Epoch, Problem: l.Problem}
		if l.Held {
			li.LeaseExpiry = time.UnixMilli(l.ExpiryUnixMs).UTC().Format(time.RFC3339Nano)
			li.FenceInMs = l.FenceUnixMs - now
		}
		body.Leases = append(body.Leases, li)
	}
	body.Clock = &healthz.Clock{Healthy: st.Healthy, Problem: st.Problem, Detail: st.Detail,
		EstimatedErrorMs: float64(st.EstimatedError.Microseconds()) / 1000, Check: st.Mode.String()}
	if st.Mode == idcore.ClockWarn {
		body.Clock.Warning = "clock check is warn: IDs are issued on an undisciplined clock (development only)"
	}
	code := http.StatusOK
	err := s.node.Ready()
	reason := idcore.Reason(err)
	if cerr := s.gate.CertificateProblem(); cerr != nil {
		// Callers refuse every handshake: the load balancer must stop sending them here.
		err, reason = cerr, auth.ReasonCertificate
	}
	if s.health.Draining() {
		code, body.Service = http.StatusServiceUnavailable, healthz.Draining
	} else if err != nil {
		if reason == "" {
			reason = "unavailable"
		}
		code, body.Service = http.StatusServiceUnavailable, healthz.Unavailable(reason, err.Error())
	} else if p := s.registryProblem(); p != "" {
		// It issues as ever; the load balancer keeps it (200), the reader learns why to worry.
		body.Service = healthz.Degraded(ReasonRegistryUnreachable, p)
	}
	return c.JSON(code, body)
}
