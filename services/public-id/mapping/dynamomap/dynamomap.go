// Package dynamomap keeps the public-ID mapping store in one DynamoDB table per region
// (aws-sdk-go-v2), the store of record of every region: it implements mapping.Store,
// mapping.Durability and mapping.Replica.
//
// # Table
//
// One table (DefaultTable, "idgen-public-ids") holds every kind of item, under a string partition
// key k and no sort key; attribute names are one letter, since an item's size (names plus values,
// and about 100 bytes of overhead per item for storage) is what DynamoDB bills. The kinds never
// collide: a public ID always begins with a lowercase letter, every other kind's key with '#'.
//
//	public → internal   k = the public ID (ord_mbJjiLAQJJv7qQIlV1fpjDgd)   i (N) the internal ID
//	internal → public   k = "#i" + the decimal internal ID                  p (S) the public ID
//	token               k = "#t" + handle   v (B) value, e (N) expiry in Unix ms, x (N) expiry in Unix s
//	secret              k = "#s" + name     v (B)
//	note                k = "#n" + name     v (B)
//
// An empty value (a token's, a note's) is stored as an item without v. A typical mapping
// (ord_mbJjiLAQJJv7qQIlV1fpjDgd, a 19-digit internal ID) is two items, 141 and 151 bytes by
// DynamoDB's rules with the 100 bytes of overhead each (292 bytes of storage per mapping; the
// size test computes these figures). Both are far under 1 KB, so a write of either is one write
// unit (two in a transaction: a publish costs four, a copy two), a consistent read of either
// one read unit, and a consistent Scan one read unit per 4 KB it reads, tokens included. The
// table has TTL on x (Terraform turns it on; CreateTable asks for it), so DynamoDB deletes
// expired tokens within days of their expiry; the driver's own check of e makes a token
// invisible at its expiry.
//
// # Calls
//
// The only DynamoDB actions the driver calls: DescribeTable (once, in Open, to check the table and
// its key schema), GetItem (every read, ConsistentRead), PutItem (a copy's two items, tokens,
// secrets, notes), TransactWriteItems (a publish: two Puts, nothing else) and Scan (Replica.Scan,
// ConsistentRead). IAM authorizes a TransactWriteItems by the PutItem of each of its items, so a
// role grants exactly Actions on the table.
//
// Publish reads the internal item (consistent) and returns the public ID it holds; else it writes
// both items in one TransactWriteItems, each Put conditioned on attribute_not_exists(k). A
// cancelled transaction says which condition failed: the internal item taken (a concurrent
// publisher won) → its public ID is read and returned, so concurrent publishers agree; the public
// item taken (a random collision) → another candidate, at most PublishAttempts in all. Reads are
// consistent, so a resolve right after a publish finds it.
//
// Copy (Replica) writes the public item conditioned on attribute_not_exists(k) OR i = :i (another
// internal ID there → mapping.ErrConflict, nothing written), then the internal item on
// attribute_not_exists(k); when the internal ID has a public ID already, that one is read and
// returned. The public item goes first, so an internal item never names a public ID that does not
// resolve. Scan is a consistent DynamoDB Scan filtered to the public items, in DynamoDB's order
// (by the hash of k: no order a caller can use), its cursor an opaque encoding of
// LastEvaluatedKey; a page evaluates at most limit items, so it may hold fewer pairs than limit,
// or none, and still have a next cursor.
//
// Errors: what libs/conn/dynamo.Unavailable reports (throttling, server faults, network errors,
// deadlines, a missing table) wraps mapping.ErrUnavailable; a missing item is mapping.ErrNotFound.
// DynamoDB acknowledges a write once it is durable in several availability zones, so the store is
// never volatile, and what it answers is durable (Durability).
package dynamomap

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/idgen/idgen/libs/conn/dynamo"
	"github.com/idgen/idgen/services/public-id/mapping"
)

// DefaultTable is the table's name when none is given.
const DefaultTable = "idgen-public-ids"

// The table's key and attributes. Terraform's table definition is checked against these.
const (
	// KeyK is the partition key (S), the table's only key.
	KeyK = "k"
	// AttrTTL is the TTL attribute (N, Unix seconds) of token items.
	AttrTTL = "x"
)

// The other attributes (see the package doc).
const (
	attrInternal = "i" // public item: the internal ID (N)
	attrPublic   = "p" // internal item: the public ID (S)
	attrValue    = "v" // token, secret, note: the value (B)
	attrExpiryMs = "e" // token: expiry in Unix ms (N)
)

// Key prefixes of the items other than public → internal.
const (
	prefixInternal = "#i"
	prefixToken    = "#t"
	prefixSecret   = "#s"
	prefixNote     = "#n"
)

// Actions are the IAM actions the driver needs on its table, and nothing else (a
// TransactWriteItems is authorized as the PutItem of each of its items).
var Actions = []string{"dynamodb:DescribeTable", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Scan"}

// maxKey is DynamoDB's limit of a partition key's value, in bytes.
const maxKey = 2048

// Target names the table.
type Target struct {
	Endpoint string // the service URL; "" for the standard AWS endpoint of the configured region
	Table    string // "" for DefaultTable
}

// Options are the store's settings; the zero value is the default.
type Options struct {
	// Client is the DynamoDB client to use instead of one made by dynamo.NewClient for
	// Target.Endpoint.
	Client *dynamodb.Client
	// PublishAttempts bounds the candidates one Publish tries (random collisions, transactions
	// cancelled by concurrent ones); 0 for 5.
	PublishAttempts int
	// NoDescribe opens the store without DescribeTable: another region's table, which need not
	// answer when a process starts (its first call says what is wrong).
	NoDescribe bool
}

// Store is the mapping store on one DynamoDB table.
type Store struct {
	db       *dynamodb.Client
	table    string
	attempts int
	closed   atomic.Bool
}

var (
	_ mapping.Replica    = (*Store)(nil)
	_ mapping.Durability = (*Store)(nil)
)

// Open returns the store on t's table, after checking with DescribeTable that the table exists
// with the key schema above.
func Open(ctx context.Context, t Target, o Options) (*Store, error) {
	if t.Table == "" {
		t.Table = DefaultTable
	}
	db := o.Client
	if db == nil {
		var err error
		if db, err = dynamo.NewClient(ctx, t.Endpoint); err != nil {
			return nil, fmt.Errorf("dynamomap: %w", err)
		}
	}
	if o.PublishAttempts <= 0 {
		o.PublishAttempts = 5
	}
	if o.NoDescribe {
		return &Store{db: db, table: t.Table, attempts: o.PublishAttempts}, nil
	}
	out, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &t.Table})
	var rnf *types.ResourceNotFoundException
	switch {
	case errors.As(err, &rnf):
		return nil, fmt.Errorf("dynamomap: table %q does not exist (Terraform makes it; dynamomap.CreateTable for a local server): %w: %w",
			t.Table, mapping.ErrUnavailable, err)
	case err != nil:
		return nil, mapErr("describe table "+t.Table, err)
	}
	if err := checkSchema(out.Table); err != nil {
		return nil, fmt.Errorf("dynamomap: table %q: %w", t.Table, err)
	}
	return &Store{db: db, table: t.Table, attempts: o.PublishAttempts}, nil
}

// checkSchema says whether a table has the one key this driver writes: k, a string partition key.
func checkSchema(td *types.TableDescription) error {
	if td == nil {
		return errors.New("DescribeTable returned no table")
	}
	ok := len(td.KeySchema) == 1 && aws.ToString(td.KeySchema[0].AttributeName) == KeyK && td.KeySchema[0].KeyType == types.KeyTypeHash
	if ok {
		ok = false
		for _, d := range td.AttributeDefinitions {
			if aws.ToString(d.AttributeName) == KeyK {
				ok = d.AttributeType == types.ScalarAttributeTypeS
			}
		}
	}
	if !ok {
		var got []string
		for _, k := range td.KeySchema {
			got = append(got, aws.ToString(k.AttributeName)+" "+string(k.KeyType))
		}
		return fmt.Errorf("key schema %v: want one partition key %q of type S and no sort key", got, KeyK)
	}
	return nil
}

// Tables returns CreateTable of each table on the endpoint it is given (dynamo.Tables): the
// table maker of a local DynamoDB server (dynalite.Options.Tables, testenv.StartDynaliteWithTables).
func Tables(tables ...string) func(ctx context.Context, endpoint string) error {
	return dynamo.Tables(CreateTable, tables...)
}

// CreateTable creates the table when missing, for tests and the local stack (Terraform makes it
// in production): on-demand billing, partition key k (S) and nothing else, and TTL on x. It waits
// until the table is active. A server without the TTL API (dynalite has no UpdateTimeToLive)
// keeps its tokens until they are overwritten, which the driver's own expiry check makes
// harmless; CreateTable goes on without it.
func CreateTable(ctx context.Context, db *dynamodb.Client, table string) error {
	if table == "" {
		table = DefaultTable
	}
	_, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            &table,
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(KeyK), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(KeyK), KeyType: types.KeyTypeHash}},
	})
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return fmt.Errorf("dynamomap: create %s: %w", table, err)
	}
	w := dynamodb.NewTableExistsWaiter(db, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = 50*time.Millisecond, 500*time.Millisecond
	})
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: &table}, 2*time.Minute); err != nil {
		return fmt.Errorf("dynamomap: wait for %s: %w", table, err)
	}
	_, err = db.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName:               &table,
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(AttrTTL), Enabled: aws.Bool(true)},
	})
	var ae smithy.APIError
	switch {
	case err == nil:
	case errors.As(err, &ae) && ae.ErrorCode() == "UnknownOperationException": // dynalite
	case errors.As(err, &ae) && ae.ErrorCode() == "ValidationException" && strings.Contains(ae.ErrorMessage(), "already enabled"):
	default:
		return fmt.Errorf("dynamomap: TTL of %s: %w", table, err)
	}
	return nil
}

// Client returns the store's DynamoDB client.
func (s *Store) Client() *dynamodb.Client { return s.db }

// Table returns the store's table name.
func (s *Store) Table() string { return s.table }

func num(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}
func str(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func key(k string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{KeyK: str(k)}
}
func internalKey(internal int64) string { return prefixInternal + strconv.FormatInt(internal, 10) }

func publicItem(internal int64, public string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{KeyK: str(public), attrInternal: num(internal)}
}
func internalItem(internal int64, public string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{KeyK: str(internalKey(internal)), attrPublic: str(public)}
}

// valueItem is an item of key k with value v (no v attribute for an empty value).
func valueItem(k string, v []byte) map[string]types.AttributeValue {
	it := key(k)
	if len(v) > 0 {
		it[attrValue] = &types.AttributeValueMemberB{Value: v}
	}
	return it
}

// errClosed is the native error of a call on a closed store.
var errClosed = fmt.Errorf("dynamomap: store closed: %w", net.ErrClosed)

// mapErr is the driver's one error mapping: what dynamo.Unavailable reports becomes
// mapping.ErrUnavailable, anything else stays a plain error; the native error stays wrapped.
// Failed conditions are answered where they happen.
func mapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	if dynamo.Unavailable(err) {
		return fmt.Errorf("dynamomap: %s: %w: %w", op, mapping.ErrUnavailable, err)
	}
	return fmt.Errorf("dynamomap: %s: %w", op, err)
}

func isCCF(err error) bool {
	var ccf *types.ConditionalCheckFailedException
	return errors.As(err, &ccf)
}

func (s *Store) check(op string) error {
	if s.closed.Load() {
		return fmt.Errorf("dynamomap: %s: %w: %w", op, mapping.ErrUnavailable, errClosed)
	}
	return nil
}

// get reads one item with a consistent read; a missing item is a nil map.
func (s *Store) get(ctx context.Context, op, k string) (map[string]types.AttributeValue, error) {
	if err := s.check(op); err != nil {
		return nil, err
	}
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, Key: key(k), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, mapErr(op, err)
	}
	return out.Item, nil
}

// put writes one item, conditioned on cond (with values vals) unless cond is "".
func (s *Store) put(ctx context.Context, op string, item map[string]types.AttributeValue, cond string, vals map[string]types.AttributeValue) error {
	if err := s.check(op); err != nil {
		return err
	}
	in := &dynamodb.PutItemInput{TableName: &s.table, Item: item}
	if cond != "" {
		in.ConditionExpression = aws.String(cond)
		if len(vals) > 0 {
			in.ExpressionAttributeValues = vals
		}
	}
	_, err := s.db.PutItem(ctx, in)
	if isCCF(err) {
		return err // the caller answers a failed condition
	}
	return mapErr(op, err)
}

// validPublic says whether public can be a public item's key: it begins with a lowercase letter
// (so no other kind's key, all of which begin with '#') and fits DynamoDB's key limit.
func validPublic(public string) bool {
	return public != "" && public[0] >= 'a' && public[0] <= 'z' && len(public) <= maxKey
}

func intAttr(item map[string]types.AttributeValue, name string) (int64, error) {
	v, ok := item[name].(*types.AttributeValueMemberN)
	if !ok {
		return 0, fmt.Errorf("dynamomap: item %s has no number %s", strAttr(item, KeyK), name)
	}
	x, err := strconv.ParseInt(v.Value, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("dynamomap: item %s: %s: %w", strAttr(item, KeyK), name, err)
	}
	return x, nil
}

func strAttr(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func bytesAttr(item map[string]types.AttributeValue, name string) ([]byte, error) {
	switch v := item[name].(type) {
	case nil:
		return []byte{}, nil
	case *types.AttributeValueMemberB:
		return v.Value, nil
	default:
		return nil, fmt.Errorf("dynamomap: item %s: %s is not binary", strAttr(item, KeyK), name)
	}
}

// Lookup implements mapping.Store.
func (s *Store) Lookup(ctx context.Context, internal int64) (string, error) {
	item, err := s.get(ctx, "lookup", internalKey(internal))
	if err != nil {
		return "", err
	}
	if item == nil {
		return "", mapping.ErrNotFound
	}
	p := strAttr(item, attrPublic)
	if p == "" {
		return "", fmt.Errorf("dynamomap: item %s has no public ID", internalKey(internal))
	}
	return p, nil
}

// Resolve implements mapping.Store. A string that cannot be a public ID (one beginning with '#'
// names another kind of item) is not found, without a call.
func (s *Store) Resolve(ctx context.Context, public string) (int64, error) {
	if !validPublic(public) {
		if err := s.check("resolve"); err != nil {
			return 0, err
		}
		return 0, mapping.ErrNotFound
	}
	item, err := s.get(ctx, "resolve", public)
	if err != nil {
		return 0, err
	}
	if item == nil {
		return 0, mapping.ErrNotFound
	}
	return intAttr(item, attrInternal)
}

// Publish implements mapping.Store (see the package doc).
func (s *Store) Publish(ctx context.Context, internal int64, newPublic func() (string, error)) (string, error) {
	pub, err := s.Lookup(ctx, internal)
	if !errors.Is(err, mapping.ErrNotFound) {
		return pub, err
	}
	var conflict error // the last attempt's cancellation by a concurrent transaction
	for attempt := range s.attempts {
		conflict = nil
		cand, err := newPublic()
		if err != nil {
			return "", fmt.Errorf("dynamomap: new public ID: %w", err)
		}
		if !validPublic(cand) {
			return "", fmt.Errorf("dynamomap: new public ID %q: want one that begins with a lowercase letter, at most %d bytes", cand, maxKey)
		}
		if err := s.check("publish"); err != nil {
			return "", err
		}
		_, err = s.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			{Put: &types.Put{TableName: &s.table, Item: publicItem(internal, cand), ConditionExpression: aws.String("attribute_not_exists(k)")}},
			{Put: &types.Put{TableName: &s.table, Item: internalItem(internal, cand), ConditionExpression: aws.String("attribute_not_exists(k)")}},
		}})
		if err == nil {
			return cand, nil
		}
		var tce *types.TransactionCanceledException
		if !errors.As(err, &tce) {
			return "", mapErr("publish", err)
		}
		code := func(i int) string {
			if i < len(tce.CancellationReasons) {
				return aws.ToString(tce.CancellationReasons[i].Code)
			}
			return ""
		}
		switch pubCode, inCode := code(0), code(1); {
		case inCode == "ConditionalCheckFailed":
			// Another publisher's mapping of internal: return its public ID.
			pub, err := s.Lookup(ctx, internal)
			if !errors.Is(err, mapping.ErrNotFound) {
				return pub, err
			}
		case pubCode == "ConditionalCheckFailed":
			// The candidate collides with another mapping: try another.
		case pubCode == "TransactionConflict" || inCode == "TransactionConflict":
			// A concurrent transaction on one of the items, most likely a publisher of the same
			// internal ID: wait a little and read what it wrote.
			conflict = err
			select {
			case <-ctx.Done():
				return "", mapErr("publish", ctx.Err())
			case <-time.After(time.Duration(attempt+1) * 5 * time.Millisecond):
			}
			pub, err := s.Lookup(ctx, internal)
			if !errors.Is(err, mapping.ErrNotFound) {
				return pub, err
			}
		default:
			// Throttling, a validation error or another reason of the service.
			for _, r := range tce.CancellationReasons {
				if c := aws.ToString(r.Code); c == "ThrottlingError" || c == "ProvisionedThroughputExceeded" || c == "RequestLimitExceeded" {
					return "", fmt.Errorf("dynamomap: publish: %w: %w", mapping.ErrUnavailable, err)
				}
			}
			return "", mapErr("publish", err)
		}
	}
	if conflict != nil {
		// Concurrent transactions kept cancelling this one: busy, and a retry may work.
		return "", fmt.Errorf("dynamomap: publish: %d attempts met concurrent transactions: %w: %w", s.attempts, mapping.ErrUnavailable, conflict)
	}
	return "", fmt.Errorf("dynamomap: could not publish after %d attempts", s.attempts)
}

// Copy implements mapping.Replica (see the package doc).
func (s *Store) Copy(ctx context.Context, internal int64, public string) (string, error) {
	if !validPublic(public) {
		return "", fmt.Errorf("dynamomap: copy of %q: not a public ID (want one that begins with a lowercase letter, at most %d bytes)", public, maxKey)
	}
	err := s.put(ctx, "copy", publicItem(internal, public), "attribute_not_exists(k) OR i = :i",
		map[string]types.AttributeValue{":i": num(internal)})
	if isCCF(err) {
		return "", fmt.Errorf("dynamomap: copy of %s → %d: %w", public, internal, mapping.ErrConflict)
	}
	if err != nil {
		return "", err
	}
	err = s.put(ctx, "copy", internalItem(internal, public), "attribute_not_exists(k)", nil)
	if isCCF(err) {
		// The internal ID has a public ID already: the first one stays.
		pub, err := s.Lookup(ctx, internal)
		if errors.Is(err, mapping.ErrNotFound) {
			return "", fmt.Errorf("dynamomap: copy: the item of %d exists but cannot be read", internal)
		}
		return pub, err
	}
	if err != nil {
		return "", err
	}
	return public, nil
}

// cursorPrefix marks the driver's cursors (a version, so another encoding can follow).
const cursorPrefix = "d1."

// Scan implements mapping.Replica: a consistent Scan of the table filtered to the public items.
func (s *Store) Scan(ctx context.Context, cursor string, limit int) ([]mapping.Pair, string, error) {
	if limit <= 0 {
		return nil, "", fmt.Errorf("dynamomap: scan: limit %d: want a positive number", limit)
	}
	in := &dynamodb.ScanInput{
		TableName:                 &s.table,
		ConsistentRead:            aws.Bool(true),
		Limit:                     aws.Int32(int32(min(limit, 1<<30))),
		FilterExpression:          aws.String("NOT begins_with(k, :hash)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":hash": str("#")},
	}
	if cursor != "" {
		k, ok := strings.CutPrefix(cursor, cursorPrefix)
		var raw []byte
		var err error
		if ok {
			raw, err = base64.RawURLEncoding.DecodeString(k)
		}
		if !ok || err != nil || len(raw) == 0 {
			return nil, "", fmt.Errorf("dynamomap: scan: cursor %q is not one of this driver's", cursor)
		}
		in.ExclusiveStartKey = key(string(raw))
	}
	if err := s.check("scan"); err != nil {
		return nil, "", err
	}
	out, err := s.db.Scan(ctx, in)
	if err != nil {
		return nil, "", mapErr("scan", err)
	}
	pairs := make([]mapping.Pair, 0, len(out.Items))
	for _, item := range out.Items {
		in, err := intAttr(item, attrInternal)
		if err != nil {
			return nil, "", err
		}
		pairs = append(pairs, mapping.Pair{Public: strAttr(item, KeyK), Internal: in})
	}
	next := ""
	if last := strAttr(out.LastEvaluatedKey, KeyK); last != "" {
		next = cursorPrefix + base64.RawURLEncoding.EncodeToString([]byte(last))
	}
	return pairs, next, nil
}

// Note implements mapping.Replica.
func (s *Store) Note(ctx context.Context, name string) ([]byte, error) {
	item, err := s.get(ctx, "note", prefixNote+name)
	if err != nil {
		return nil, err
	}
	if item == nil {
		return nil, mapping.ErrNotFound
	}
	return bytesAttr(item, attrValue)
}

// SetNote implements mapping.Replica.
func (s *Store) SetNote(ctx context.Context, name string, value []byte) error {
	return s.put(ctx, "set note", valueItem(prefixNote+name, value), "", nil)
}

// PutToken implements mapping.Store: a PutItem conditioned on the handle holding no token, or an
// expired one.
func (s *Store) PutToken(ctx context.Context, handle string, value []byte, ttl time.Duration) error {
	if ttl <= 0 {
		return fmt.Errorf("dynamomap: token ttl %v: want a positive duration", ttl)
	}
	now := time.Now().UnixMilli()
	expiry := now + int64((ttl+time.Millisecond-1)/time.Millisecond)
	item := valueItem(prefixToken+handle, value)
	item[attrExpiryMs] = num(expiry)
	item[AttrTTL] = num((expiry + 999) / 1000)
	err := s.put(ctx, "put token", item, "attribute_not_exists(k) OR e <= :now", map[string]types.AttributeValue{":now": num(now)})
	if isCCF(err) {
		return fmt.Errorf("dynamomap: token %s: %w", handle, mapping.ErrTokenTaken)
	}
	return err
}

// GetToken implements mapping.Store: a token whose expiry has passed is not found, whether or not
// DynamoDB's TTL has deleted it yet.
func (s *Store) GetToken(ctx context.Context, handle string) ([]byte, error) {
	item, err := s.get(ctx, "get token", prefixToken+handle)
	if err != nil {
		return nil, err
	}
	if item == nil {
		return nil, mapping.ErrNotFound
	}
	expiry, err := intAttr(item, attrExpiryMs)
	if err != nil {
		return nil, err
	}
	if expiry <= time.Now().UnixMilli() {
		return nil, mapping.ErrNotFound
	}
	return bytesAttr(item, attrValue)
}

// Secret implements mapping.Store: a consistent read; when there is none, a PutItem of fresh
// random bytes conditioned on attribute_not_exists(k), and on a failed condition (a concurrent
// first call) a consistent read of the value stored first.
func (s *Store) Secret(ctx context.Context, name string, size int) ([]byte, error) {
	if size <= 0 {
		return nil, fmt.Errorf("dynamomap: secret %q: size %d: want a positive number", name, size)
	}
	read := func() ([]byte, error) {
		item, err := s.get(ctx, "secret", prefixSecret+name)
		if err != nil || item == nil {
			return nil, err
		}
		v, err := bytesAttr(item, attrValue)
		if err != nil {
			return nil, err
		}
		if len(v) != size {
			return nil, fmt.Errorf("dynamomap: secret %q holds %d bytes, not %d", name, len(v), size)
		}
		return v, nil
	}
	if v, err := read(); v != nil || err != nil {
		return v, err
	}
	fresh := make([]byte, size)
	if _, err := rand.Read(fresh); err != nil {
		return nil, fmt.Errorf("dynamomap: secret %q: %w", name, err)
	}
	err := s.put(ctx, "secret", valueItem(prefixSecret+name, fresh), "attribute_not_exists(k)", nil)
	if err == nil {
		return fresh, nil
	}
	if !isCCF(err) {
		return nil, err
	}
	v, err := read()
	if v == nil && err == nil {
		return nil, fmt.Errorf("dynamomap: secret %q exists but cannot be read", name)
	}
	return v, err
}

// Volatile implements mapping.Durability: DynamoDB acknowledges a write once it is durable in
// several availability zones.
func (s *Store) Volatile() (bool, string) { return false, "" }

// ReadsDurable implements mapping.Durability: every answer is a consistent read of durable data.
func (s *Store) ReadsDurable() bool { return true }

// Close implements mapping.Store: later calls fail with mapping.ErrUnavailable.
func (s *Store) Close() error {
	s.closed.Store(true)
	return nil
}
