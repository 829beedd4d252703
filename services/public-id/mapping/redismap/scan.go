package redismap

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/idgen/idgen/services/public-id/mapping"
	"github.com/redis/go-redis/v9"
)

// ACLScan is the rule a user that calls Scan (idgenctl publicids backfill) needs beside ACL; the
// services never scan, so their users go without it.
const ACLScan = "+scan +cluster|myid"

// scanCursor is where a Scan goes on: which node (on Cluster: the master serving a range of
// slots, named by its lowest slot, which orders the masters, and by its node ID), Redis's SCAN
// cursor on it, and the public IDs the last SCAN gave beyond the page's limit.
type scanCursor struct {
	Slot   int      `json:"s,omitempty"`
	Node   string   `json:"n,omitempty"`
	Cursor uint64   `json:"c,omitempty"`
	End    bool     `json:"e,omitempty"` // the node's SCAN is over: the next page goes to the next node
	Left   []string `json:"l,omitempty"`
}

const scanCursorPrefix = "r1."

func (c scanCursor) encode() string {
	b, _ := json.Marshal(c) // a struct of strings and numbers always marshals
	return scanCursorPrefix + base64.RawURLEncoding.EncodeToString(b)
}

func decodeScanCursor(s string) (scanCursor, error) {
	var c scanCursor
	if s == "" {
		return c, nil
	}
	raw, ok := strings.CutPrefix(s, scanCursorPrefix)
	b, err := base64.RawURLEncoding.DecodeString(raw)
	if !ok || err != nil || json.Unmarshal(b, &c) != nil {
		return c, fmt.Errorf("redismap: scan: cursor %q is not one of this driver's", s)
	}
	return c, nil
}

// scanNode is a node Scan walks: a standalone server, or one master of a cluster.
type scanNode struct {
	slot int    // its lowest slot (0 standalone)
	id   string // its node ID ("" standalone)
	c    redis.Cmdable
}

// scanNodes lists the nodes to walk, in Scan's order: the server, or every master by its lowest
// slot.
func (s *Store) scanNodes(ctx context.Context) ([]scanNode, error) {
	cc, ok := s.rdb.(*redis.ClusterClient)
	if !ok {
		return []scanNode{{c: s.rdb}}, nil
	}
	var mu sync.Mutex
	var nodes []scanNode
	err := cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		id, err := c.ClusterMyID(ctx).Result()
		if err != nil {
			return err
		}
		shards, err := c.ClusterShards(ctx).Result()
		if err != nil {
			return err
		}
		low := -1
		for _, sh := range shards {
			if !slices.ContainsFunc(sh.Nodes, func(n redis.Node) bool { return n.ID == id && n.Role == "master" }) {
				continue
			}
			for _, r := range sh.Slots {
				if low < 0 || int(r.Start) < low {
					low = int(r.Start)
				}
			}
		}
		if low < 0 {
			return nil // a master without slots holds no keys
		}
		mu.Lock()
		nodes = append(nodes, scanNode{slot: low, id: id, c: c})
		mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(nodes, func(a, b scanNode) int { return a.slot - b.slot })
	return nodes, nil
}

// Scan lists the store's mappings page by page, as mapping.Replica's Scan does: at most limit
// pairs after cursor ("" for the first page), and the next page's cursor ("" after the last).
// It runs SCAN MATCH pid:p:* COUNT limit on the server, or on every master of a cluster, one
// after another in the order of their lowest slots, and reads each public key's internal ID (a
// pending key on Cluster is repaired as Resolve repairs it, or skipped as the orphan it is). SCAN
// returns every key that exists from the first page to the last at least once (a key may come
// twice). The cursor is opaque and stays valid while the nodes run; on a master that changed
// since (a failover: another node ID serves its slots) the scan of those slots starts again from
// their beginning, and keys moved between masters while a scan runs (resharding) may be missed.
// The user needs ACLScan beside ACL.
func (s *Store) Scan(ctx context.Context, cursor string, limit int) ([]mapping.Pair, string, error) {
	if limit <= 0 {
		return nil, "", fmt.Errorf("redismap: scan: limit %d: want a positive number", limit)
	}
	cur, err := decodeScanCursor(cursor)
	if err != nil {
		return nil, "", err
	}
	pairs, next, err := s.scan(ctx, cur, limit)
	return pairs, next, mapErr("scan", err)
}

func (s *Store) scan(ctx context.Context, cur scanCursor, limit int) ([]mapping.Pair, string, error) {
	nodes, err := s.scanNodes(ctx)
	if err != nil {
		return nil, "", err
	}
	var keys []string
	if len(cur.Left) > 0 {
		// What the last SCAN gave beyond its page: public keys, read through any node.
		keys, cur.Left = cur.Left, nil
	} else {
		// The node the cursor is on: the first whose lowest slot is the cursor's, or the next one
		// once the cursor's SCAN is over.
		i := slices.IndexFunc(nodes, func(n scanNode) bool { return n.slot > cur.Slot || n.slot == cur.Slot && !cur.End })
		if i < 0 {
			return nil, "", nil
		}
		node := nodes[i]
		if node.slot != cur.Slot || cur.Node != "" && node.id != cur.Node {
			// Another node: its SCAN from the start. (A master replaced under its slots starts
			// again: its SCAN cursor means nothing to the new one.)
			cur = scanCursor{Slot: node.slot}
		}
		var next uint64
		if keys, next, err = node.c.Scan(ctx, cur.Cursor, pKey("*"), int64(limit)).Result(); err != nil {
			return nil, "", err
		}
		cur.Node, cur.Cursor, cur.End = node.id, next, next == 0
		for j, k := range keys {
			keys[j] = strings.TrimPrefix(k, pKey(""))
		}
	}
	if len(keys) > limit {
		cur.Left = slices.Clone(keys[limit:])
		keys = keys[:limit]
	}
	pairs, err := s.scanValues(ctx, keys)
	if err != nil {
		return nil, "", err
	}
	last := !slices.ContainsFunc(nodes, func(n scanNode) bool { return n.slot > cur.Slot })
	if cur.End && len(cur.Left) == 0 && last {
		return pairs, "", nil
	}
	return pairs, cur.encode(), nil
}

// scanValues reads the internal IDs of public IDs in one pipeline; a key gone since SCAN saw it
// (an orphan's, deleted) is skipped, a pending one resolved (repaired) or skipped.
func (s *Store) scanValues(ctx context.Context, publics []string) ([]mapping.Pair, error) {
	if len(publics) == 0 {
		return nil, nil
	}
	gets := make([]*redis.StringCmd, len(publics))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for j, pub := range publics {
			gets[j] = p.Get(ctx, pKey(pub))
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	pairs := make([]mapping.Pair, 0, len(publics))
	for j, pub := range publics {
		v, err := gets[j].Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return nil, err
		}
		state, num, ok := strings.Cut(v, ":")
		internal, perr := strconv.ParseInt(num, 10, 64)
		if !ok || perr != nil {
			return nil, fmt.Errorf("corrupt value %q at %s", v, pKey(pub))
		}
		if state != "1" {
			if internal, err = s.resolve(ctx, pub); errors.Is(err, mapping.ErrNotFound) {
				continue
			} else if err != nil {
				return nil, err
			}
		}
		pairs = append(pairs, mapping.Pair{Public: pub, Internal: internal})
	}
	return pairs, nil
}
