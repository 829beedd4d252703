package gateway

import (
	"context"
	"encoding/hex"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// RateKeyPrefix starts the part of a rate limit's Redis key that the gateway names; redis_rate
// puts its own "rate:" before it, so every key the limiter touches matches rate:rl:* (the ACL
// pattern of the limiter's user), never the mapping store's pid:* and tok:*.
const RateKeyPrefix = "rl:"

// rateLogEvery bounds how often a failing rate store is logged: a line per period at most, with
// the failures since the last one.
const rateLogEvery = 10 * time.Second

// rateStore keeps the per-client rate limits in a Redis every gateway of a region shares
// (Options.RateRedis): one GCRA check a request, one round trip (redis_rate's Lua script), so
// a client gets the configured rate from the region, not from each gateway. A check that fails
// or takes longer than its timeout is an error, which the caller answers with the in-process
// limiter instead (clientLimiter.allow): a slow, frozen or absent Redis never holds a request
// past the timeout, nor lets it through unlimited.
type rateStore struct {
	lim     *redis_rate.Limiter
	timeout time.Duration
	errors  prometheus.Counter // idgen_gateway_rate_store_errors_total
	log     *slog.Logger
	lastLog atomic.Int64 // when a failure was last logged, Unix nanoseconds
	missed  atomic.Int64 // failures since
}

func newRateStore(rdb redis.UniversalClient, timeout time.Duration, errors prometheus.Counter, log *slog.Logger) *rateStore {
	return &rateStore{lim: redis_rate.NewLimiter(rdb), timeout: timeout, errors: errors, log: log}
}

// allow takes one request of key's rate in scope from the store: whether it may pass and, when
// not, how long until one may (redis_rate's RetryAfter).
func (s *rateStore) allow(scope string, key clientKey, l redis_rate.Limit) (bool, time.Duration, error) {
	// Not the request's context: a customer who hangs up is not a store failure.
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	res, err := s.lim.Allow(ctx, RateKeyPrefix+scope+":"+key.String(), l)
	if err != nil {
		s.failed(err)
		return false, 0, err
	}
	if res.Allowed > 0 {
		return true, 0, nil
	}
	return false, res.RetryAfter, nil
}

// failed counts a failed check, and logs it unless another was logged within rateLogEvery.
func (s *rateStore) failed(err error) {
	s.errors.Inc()
	n := s.missed.Add(1)
	now := time.Now().UnixNano()
	last := s.lastLog.Load()
	if now-last < int64(rateLogEvery) || !s.lastLog.CompareAndSwap(last, now) {
		return
	}
	s.missed.Add(-n)
	s.log.Warn("the rate limits' Redis failed: the failing checks used this gateway's own limiter (the same rate, counted in this process only)",
		"err", err, "failures", n, "timeout", s.timeout)
}

// redisLimit is the GCRA limit of perSecond requests a second with a burst: one request every
// 1/perSecond seconds, which redis_rate takes as a period (any rate, fractional ones too).
func redisLimit(perSecond float64, burst int) redis_rate.Limit {
	return redis_rate.Limit{Rate: 1, Burst: burst, Period: max(time.Duration(float64(time.Second)/perSecond), 1)}
}

// String is the client's part of its Redis key: a:ADDRESS (an IPv6 one by its /64's address) or
// k:HASH (the 16 bytes of the API key's SHA-256 in hex).
func (k clientKey) String() string {
	if k.keyed {
		return "k:" + hex.EncodeToString(k.apiKey[:])
	}
	return "a:" + k.addr.String()
}

// CheckRateRedis runs the limiter's script once in rdb, on a key of its own (rl:probe), as the
// binary does at start-up: a Redis that refuses it (a wrong password, an ACL without the script,
// its commands or its keys) answers a redis.Error.
func CheckRateRedis(ctx context.Context, rdb redis.UniversalClient) error {
	_, err := redis_rate.NewLimiter(rdb).Allow(ctx, RateKeyPrefix+"probe", redis_rate.PerSecond(1000))
	return err
}
