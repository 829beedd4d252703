package redismap

import (
	"context"
	"errors"

	"github.com/idgen/idgen/services/public-id/mapping"
	"github.com/redis/go-redis/v9"
)

// On a server without WAITAOF, each publish's script runs in a transaction that ends with a
// reading of the server's persistence (covered). go-redis's autopipeliner keeps MULTI off its
// shared connections, so the store batches those publishes itself: coveredBatches goroutines
// each take the publishes waiting (at most coveredBatchMax) and send them as one transaction,
// MULTI; EVALSHA publish …; CONFIG GET appendonly appendfsync; EXEC, in one round trip. Redis
// runs the transaction whole, so its one reading is the persistence every script in it ran
// under. A lone publish waits for no other; under load, publishes gather while the transactions
// in flight wait for their fsync.
const (
	coveredBatches  = 4
	coveredBatchMax = 100
)

// coveredPublish is a publish script waiting for a batch, and where its answer goes.
type coveredPublish struct {
	ctx  context.Context
	keys []string
	args []any
	res  []any
	err  error
	done chan struct{}
}

// publishCovered runs the publish script in the next batch and returns its answer; a batch
// whose reading makes the server volatile answers mapping.ErrVolatile to each of its publishes.
func (s *Store) publishCovered(ctx context.Context, keys []string, args ...any) ([]any, error) {
	p := &coveredPublish{ctx: ctx, keys: keys, args: args, done: make(chan struct{})}
	select {
	case s.batches <- p:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-s.life.Done():
		return nil, redis.ErrClosed
	}
	select {
	case <-p.done:
		return p.res, p.err
	case <-ctx.Done():
		return nil, ctx.Err() // the script may run still: a mapping not acknowledged, found on a retry
	case <-s.life.Done():
		return nil, redis.ErrClosed
	}
}

// batchPublishes sends the waiting publishes as batches until life ends.
func (s *Store) batchPublishes(life context.Context) {
	batch := make([]*coveredPublish, 0, coveredBatchMax)
	runs := make([]*redis.Cmd, coveredBatchMax)
	for {
		batch = batch[:0]
		select {
		case <-life.Done():
			return
		case p := <-s.batches:
			batch = append(batch, p)
		}
	fill:
		for len(batch) < coveredBatchMax {
			select {
			case p := <-s.batches:
				batch = append(batch, p)
			default:
				break fill
			}
		}
		s.runBatch(life, batch, runs[:len(batch)])
	}
}

// runBatch sends batch as one covered transaction and answers each of its publishes. A server
// that does not know the script yet (NOSCRIPT) gets the batch again with EVAL.
func (s *Store) runBatch(ctx context.Context, batch []*coveredPublish, runs []*redis.Cmd) {
	queue := func(eval bool) func(p redis.Pipeliner) {
		return func(p redis.Pipeliner) {
			for i, c := range batch {
				switch {
				case c.ctx.Err() != nil: // its caller is gone: not sent
					runs[i] = nil
				case eval:
					runs[i] = publishScript.Eval(ctx, p, c.keys, c.args...)
				default:
					runs[i] = publishScript.EvalSha(ctx, p, c.keys, c.args...)
				}
			}
		}
	}
	err := s.covered(ctx, "", queue(false))
	if redis.HasErrorPrefix(err, "NOSCRIPT") {
		err = s.covered(ctx, "", queue(true))
	}
	// Without a reading that finds the server durable, no script's answer is acknowledged;
	// with one, each publish gets its own script's answer (or error).
	all := errors.Is(err, mapping.ErrVolatile) || errors.Is(err, errNotDurable)
	for i, c := range batch {
		switch {
		case all:
			c.err = err
		case runs[i] == nil:
			c.err = c.ctx.Err()
		default:
			c.res, c.err = runs[i].Slice()
		}
		runs[i] = nil
		close(c.done)
	}
}
